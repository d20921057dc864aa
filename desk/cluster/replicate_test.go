package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/cluster"
	"github.com/deskd/deskd/desk/natstest"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/memory/durable/faultfs"
)

// rawRecord is a WAL record of desk as a writer of epoch publishes it
// (an append's offset, a truncate's size: offset), without the expected
// sequence: for the tests that build a WAL themselves.
func rawRecord(desk, epoch, op, file string, offset int, data []byte) *nats.Msg {
	m := &nats.Msg{Subject: cluster.Subject(desk), Data: data, Header: nats.Header{}}
	m.Header.Set(cluster.HeaderEpoch, epoch)
	m.Header.Set(cluster.HeaderHost, "a")
	m.Header.Set(cluster.HeaderOp, op)
	m.Header.Set(cluster.HeaderFile, file)
	if op == cluster.OpAppend || op == cluster.OpTruncate {
		m.Header.Set(cluster.HeaderOffset, strconv.Itoa(offset))
	}
	return m
}

// jsonLine is the Valid of the tests' logs: a line is a record when it
// is JSON.
func jsonLine(line []byte) bool { return json.Valid(line) }

// must fails the test on err, naming what was done.
func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// openLog opens the log at path through fsys.
func openLog(t testing.TB, fsys durable.FS, path string) (*durable.Log, durable.Scan) {
	t.Helper()
	l, sc, err := durable.OpenLog(fsys, path, 0o640, jsonLine)
	must(t, "open "+path, err)
	return l, sc
}

// rebuilt is the desk alpha rebuilt from s into a fresh folder.
func rebuilt(t testing.TB, s *cluster.Stores, through uint64) (string, cluster.Rebuilt) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "alpha")
	r, err := cluster.Rebuild(within(t, 30*time.Second), s, "alpha", dir, through)
	must(t, "rebuild", err)
	return dir, r
}

// replicas is a desks folder written through Replicas over inner (nil:
// the operating system's), with desk alpha attached to w; live is
// alpha's folder.
func replicas(t testing.TB, inner durable.FS, w *cluster.Writer) (r *cluster.Replicas, live string) {
	t.Helper()
	desks := t.TempDir()
	r = cluster.NewReplicas(inner, desks)
	r.Attach("alpha", w)
	return r, filepath.Join(desks, "alpha")
}

// group is a durable.Group closed at the end of the test.
func group(t testing.TB) *durable.Group {
	g := durable.NewGroup(nil)
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// noTemps fails if a temporary file is left below dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	for name := range files(t, dir) {
		if durable.IsTemp(filepath.Base(name)) {
			t.Errorf("%s: a temporary file left in %s", name, dir)
		}
	}
}

// TestReplicasRebuildIsTheLiveFolder: a desk folder written through
// Replicas (over a durable.Group, as in the daemon) by memory/durable's
// own API (a Log's appends synced, unsynced then synced; a torn tail its
// open saves with WriteFileKeep and cuts off; a Log.Replace; WriteFile of
// many files in nested folders and of a file larger than a WAL record;
// WriteFileKeep's history files; a Remove, a Rename, a folder made),
// compacted halfway, rebuilds on a fresh folder byte for byte; the local
// fsyncs went through the Group; and a replace in parts rebuilt through
// its first part only is not applied at all.
func TestReplicasRebuildIsTheLiveFolder(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	a, w := owner(t, natstest.StartCluster(t, 3))
	g := group(t)
	r, live := replicas(t, g, w)

	session := filepath.Join(live, "sessions", "s1.jsonl")
	l, _ := openLog(t, r, session)
	for i := range 20 {
		must(t, "append", l.Append([]byte(`{"turn":`+strconv.Itoa(i)+`,"text":"NIFTY holds"}`), i%3 == 2))
	}
	must(t, "sync the session", l.Sync())
	must(t, "close the session", l.Close())
	// Half a record, synced (so replicated), then the log reopened: it
	// keeps the torn tail in a file of its own and cuts it off.
	f, err := r.OpenFile(session, os.O_WRONLY|os.O_APPEND, 0)
	must(t, "open the session", err)
	_, err = f.Write([]byte(`{"turn":20,"te`))
	must(t, "write half a record", err)
	must(t, "sync half a record", f.Sync())
	must(t, "close", f.Close())
	l, sc := openLog(t, r, session)
	if sc.Torn == nil || len(sc.Records) != 20 {
		t.Fatalf("reopened: torn %+v, %d records: want the half record cut off and 20 records", sc.Torn, len(sc.Records))
	}
	must(t, "append after the cut", l.Append([]byte(`{"turn":20,"text":"again"}`), true))
	defer l.Close()

	ledger, err := func() (*durable.Log, error) {
		l, _, err := durable.OpenLogAt(r, filepath.Join(live, "triggers.jsonl"), 0o640, 0, func([]byte, int64) bool { return true })
		return l, err
	}()
	must(t, "open the ledger", err)
	defer ledger.Close()
	for i := range 30 {
		must(t, "append to the ledger", ledger.Append([]byte(`{"id":"t`+strconv.Itoa(i)+`"}`), true))
	}
	must(t, "compact the ledger", ledger.Replace([][]byte{[]byte(`{"id":"t28"}`), []byte(`{"id":"t29"}`)}, 0o640))
	must(t, "append after the compaction", ledger.Append([]byte(`{"id":"t30"}`), true))

	for i := range 40 {
		dir := filepath.Join(live, "notes", "d"+strconv.Itoa(i%4))
		must(t, "make a notes folder", durable.MkdirAll(r, dir, 0o750))
		must(t, "write a note", durable.WriteFile(r, filepath.Join(dir, "n"+strconv.Itoa(i)+".md"), []byte("- note "+strconv.Itoa(i)+"\n"), 0o640))
	}
	for i := range 5 {
		must(t, "write state.json", durable.WriteFile(r, filepath.Join(live, "state.json"), []byte(`{"mark":`+strconv.Itoa(i)+`}`), 0o640))
	}
	for i := range 3 {
		_, err := durable.WriteFileKeep(r, filepath.Join(live, "history"), "Memory.md-2026-03-02", ".md", []byte("# v"+strconv.Itoa(i)+"\n"), 0o640)
		must(t, "keep a version", err)
	}
	must(t, "remove a note", r.Remove(filepath.Join(live, "notes", "d1", "n5.md")))
	tf, err := r.OpenFile(filepath.Join(live, "notes", "d0", "n0.md"), os.O_WRONLY|os.O_TRUNC, 0)
	must(t, "open a note to rewrite it", err)
	_, err = tf.Write([]byte("- rewritten\n"))
	must(t, "rewrite the note", err)
	must(t, "sync the note", tf.Sync())
	must(t, "close the note", tf.Close())
	never, _ := openLog(t, r, filepath.Join(live, "sessions", "never.jsonl")) // created, never synced: not in the WAL
	must(t, "close a log never written", never.Close())
	must(t, "remove it", r.Remove(never.Path()))
	must(t, "set state.json aside", r.Rename(filepath.Join(live, "state.json"), filepath.Join(live, "state.json.damaged-1")))
	must(t, "make a folder", durable.MkdirAll(r, filepath.Join(live, "skills", "tape", "empty"), 0o750))

	// A file larger than a record, replaced over a small one: in parts.
	big := filepath.Join(live, "skills", "tape", "data.bin")
	must(t, "write the small file", durable.WriteFile(r, big, []byte("small\n"), 0o640))
	before := last(w)
	large := bytes.Repeat([]byte("0123456789abcdef"), (cluster.MaxChunk+cluster.MaxChunk/2)/16)
	must(t, "replace it with a large one", durable.WriteFile(r, big, large, 0o640))
	if parts := last(w) - before; parts != 2 {
		t.Fatalf("a replace of %d bytes took %d records, want 2 parts", len(large), parts)
	}
	half, hr := rebuilt(t, a.stores, before+1)
	if got, _ := os.ReadFile(filepath.Join(half, "skills", "tape", "data.bin")); string(got) != "small\n" || hr.Through != before {
		t.Fatalf("rebuilt through the first of two parts: %d bytes, through %d: want the old content and through %d (the replace not applied)", len(got), hr.Through, before)
	}

	if seeded, err := cluster.Seed(within(t, 30*time.Second), a.stores, "alpha", live, w); err != nil || seeded {
		t.Fatalf("Seed of a desk whose WAL has records: %v, %v: want nothing done", seeded, err)
	}
	cr, err := cluster.Compact(within(t, 30*time.Second), a.stores, "alpha", filepath.Join(t.TempDir(), "scratch"))
	must(t, "compact", err)
	if cr.Through != last(w) {
		t.Fatalf("compacted through %d, want the writer's last record %d", cr.Through, last(w))
	}
	for i := range 10 {
		must(t, "append after the snapshot", l.Append([]byte(`{"turn":`+strconv.Itoa(21+i)+`}`), i%2 == 1))
	}
	must(t, "replace the large file after the snapshot", durable.WriteFile(r, big, append(large, "more"...), 0o640))

	got, rr := rebuilt(t, a.stores, 0)
	if rr.Snapshot != cr.Through || rr.Through != last(w) {
		t.Errorf("rebuilt %+v: want from the snapshot at %d through %d", rr, cr.Through, last(w))
	}
	sameFiles(t, got, live)
	noTemps(t, live)
	if fi, err := os.Stat(filepath.Join(got, "skills", "tape", "empty")); err != nil || !fi.IsDir() {
		t.Errorf("the folder made is not rebuilt: %v", err)
	}
	if _, err := os.Stat(filepath.Join(got, "history", "Memory.md-2026-03-02-3.md")); err != nil {
		t.Errorf("the third kept version: %v", err)
	}
	if s := g.Stats(); s.Syncs == 0 {
		t.Errorf("the Group made no flush (%+v): the local fsyncs did not go through it", s)
	}
}

// TestReplicasFencedWriterCutsBack: once another host has fenced the
// desk, the stale owner's synced append fails with ErrFenced, its file is
// cut back to its last replicated offset (the unsynced record before it
// too), so the live folder is what Rebuild gives; and nothing after is
// written: neither an append nor a new file.
func TestReplicasFencedWriterCutsBack(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	_, a, b := twoHosts(t, 3, "b")
	ha := a.acquire(t, "alpha")
	r, live := replicas(t, nil, a.fence(t, "alpha", paused{ha.Epoch()}))
	path := filepath.Join(live, "triggers.jsonl")
	l, _ := openLog(t, r, path)
	defer l.Close()
	must(t, "append t1", l.Append([]byte(`{"id":"t1"}`), true))
	must(t, "append t2, unsynced", l.Append([]byte(`{"id":"t2"}`), false))

	must(t, "a's lease runs out", ha.Release(within(t, 10*time.Second)))
	hb := b.acquire(t, "alpha")
	defer hb.Release(context.Background())
	b.fence(t, "alpha", hb)

	err := l.Append([]byte(`{"id":"t3"}`), true)
	if !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("the stale owner's synced append: %v, want ErrFenced", err)
	}
	want := "{\"id\":\"t1\"}\n"
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Fatalf("the stale owner's ledger holds %q, want %q (cut back to its last replicated offset)", got, want)
	}
	got, _ := rebuilt(t, b.stores, 0)
	sameFiles(t, got, live)

	if err := l.Append([]byte(`{"id":"t4"}`), true); err == nil {
		t.Fatal("an append after the fence was taken")
	}
	err = durable.WriteFile(r, filepath.Join(live, "state.json"), []byte("{}"), 0o640)
	if !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("WriteFile after the fence: %v, want ErrFenced", err)
	}
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Fatalf("after the fence the ledger holds %q, want %q", got, want)
	}
	if names := files(t, live); len(names) != 1 {
		t.Fatalf("after the fence the folder holds %v, want only the ledger", names)
	}
}

// TestReplicasStandbyWritesNothing: a host with no writer attached for a
// desk (its standby) is refused every write in the desk's folder, with an
// error naming the desk and the file, and creates nothing there; once a
// desk is detached, its files open before are refused too.
func TestReplicasStandbyWritesNothing(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	_, w := owner(t, natstest.StartCluster(t, 3))
	desks := t.TempDir()
	r := cluster.NewReplicas(nil, desks)
	alpha := filepath.Join(desks, "alpha")

	err := durable.WriteFile(r, filepath.Join(alpha, "state.json"), []byte("{}"), 0o640)
	if !errors.Is(err, cluster.ErrFenced) || !strings.Contains(err.Error(), "desk alpha") || !strings.Contains(err.Error(), "state.json") {
		t.Fatalf("a standby's WriteFile: %v, want ErrFenced naming desk alpha and the file", err)
	}
	_, _, err = durable.OpenLog(r, filepath.Join(alpha, "sessions", "s1.jsonl"), 0o640, jsonLine)
	if !errors.Is(err, cluster.ErrFenced) || !strings.Contains(err.Error(), "desk alpha") {
		t.Fatalf("a standby's OpenLog: %v, want ErrFenced naming the desk", err)
	}
	if err := os.Mkdir(alpha, 0o750); err != nil {
		t.Fatal(err)
	}
	_, err = r.OpenFile(filepath.Join(alpha, "triggers.jsonl"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o640)
	if !errors.Is(err, cluster.ErrFenced) || !strings.Contains(err.Error(), "triggers.jsonl") {
		t.Fatalf("a standby's open for appending: %v, want ErrFenced naming the file", err)
	}
	if _, err := durable.WriteFileKeep(r, alpha, "Memory.md", ".md", []byte("x"), 0o640); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("a standby's WriteFileKeep: %v, want ErrFenced", err)
	}
	if names := files(t, alpha); len(names) != 0 {
		t.Fatalf("the standby wrote %v in the desk's folder", names)
	}
	if ents, _ := os.ReadDir(alpha); len(ents) != 0 {
		t.Fatalf("the standby made %v in the desk's folder", ents)
	}

	r.Attach("alpha", w)
	l, _ := openLog(t, r, filepath.Join(alpha, "triggers.jsonl"))
	defer l.Close()
	must(t, "the owner's append", l.Append([]byte(`{"id":"t1"}`), true))
	r.Detach("alpha")
	if err := l.Append([]byte(`{"id":"t2"}`), true); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("an append after Detach: %v, want ErrFenced", err)
	}
	if err := durable.WriteFile(r, filepath.Join(alpha, "state.json"), []byte("{}"), 0o640); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("WriteFile after Detach: %v, want ErrFenced", err)
	}
	if got := files(t, alpha); len(got) != 1 || got["triggers.jsonl"] != "{\"id\":\"t1\"}\n" {
		t.Fatalf("after Detach the folder holds %v, want the ledger of t1 alone", got)
	}
}

// TestReplicasOutsideDesksPassThrough: with no desk attached, every write
// outside the desk folders (the state folder, the desks folder itself, a
// folder whose name only begins like it, a folder in it whose name is no
// desk's) works as through the inner FS.
func TestReplicasOutsideDesksPassThrough(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	state := t.TempDir()
	desks := filepath.Join(state, "desks")
	r := cluster.NewReplicas(nil, desks)
	must(t, "make the desks folder", durable.MkdirAll(r, desks, 0o750))
	must(t, "write a file beside it", durable.WriteFile(r, filepath.Join(state, "runtime.json"), []byte(`{"pid":1}`), 0o640))
	must(t, "write beside the desk folders", durable.MkdirAll(r, filepath.Join(desks, ".alpha.rebuild"), 0o750))
	must(t, "write in a folder beside the desk folders", durable.WriteFile(r, filepath.Join(desks, ".alpha.rebuild", "x"), []byte("y"), 0o640))
	must(t, "make a look-alike folder", durable.MkdirAll(r, filepath.Join(state, "desks2"), 0o750))
	must(t, "write in a look-alike folder", durable.WriteFile(r, filepath.Join(state, "desks2", "x.json"), []byte("x"), 0o640))
	l, _ := openLog(t, r, filepath.Join(state, "audit", "audit.jsonl"))
	must(t, "append", l.Append([]byte(`{"a":1}`), false))
	must(t, "append synced", l.Append([]byte(`{"a":2}`), true))
	must(t, "close", l.Close())
	_, err := durable.WriteFileKeep(r, filepath.Join(state, "history"), "v", ".md", []byte("v1"), 0o640)
	must(t, "keep a version", err)
	must(t, "write a file to remove", durable.WriteFile(r, filepath.Join(state, "gone"), nil, 0o640))
	must(t, "remove it", r.Remove(filepath.Join(state, "gone")))
	want := map[string]string{
		"runtime.json": `{"pid":1}`, "desks2/x.json": "x", "desks/.alpha.rebuild/x": "y", "audit/audit.jsonl": "{\"a\":1}\n{\"a\":2}\n", "history/v.md": "v1",
	}
	got := files(t, state)
	for name, data := range want {
		if got[name] != data {
			t.Errorf("%s holds %q, want %q", name, got[name], data)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the state folder holds %v, want %v", got, want)
	}
	if fi, err := os.Stat(desks); err != nil || !fi.IsDir() {
		t.Errorf("the desks folder: %v", err)
	}
}

// TestSeedThenRebuild: a desk folder of today's single host (written
// without any cluster, a temporary file a crash left in it) is the
// snapshot its first owner seeds, covering its fence: Rebuild gives the
// folder back (without the temporary file), a second Seed does nothing,
// and the writes after it through Replicas rebuild too.
func TestSeedThenRebuild(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	a, w := owner(t, natstest.StartCluster(t, 3))
	desks := t.TempDir()
	live := filepath.Join(desks, "alpha")
	for name, data := range map[string]string{
		"triggers.jsonl": "{\"id\":\"t1\"}\n{\"id\":\"t2\"}\n", "state.json": `{"mark":2}`, "Memory.md": "# Lessons\n",
		"sessions/s1.jsonl": "{\"turn\":1}\n", "skills/tape/SKILL.md": "---\nname: tape\n---\n", ".state.json.tmp-123": "{",
	} {
		p := filepath.Join(live, filepath.FromSlash(name))
		must(t, "mkdir", os.MkdirAll(filepath.Dir(p), 0o750))
		must(t, "write "+name, os.WriteFile(p, []byte(data), 0o640))
	}
	seeded, err := cluster.Seed(within(t, 30*time.Second), a.stores, "alpha", live, w)
	if err != nil || !seeded {
		t.Fatalf("Seed of a new desk: %v, %v: want seeded", seeded, err)
	}
	got, r := rebuilt(t, a.stores, 0)
	if r.Snapshot != last(w) || r.Records != 0 {
		t.Errorf("rebuilt %+v: want the snapshot at the fence %d and no record after it", r, last(w))
	}
	must(t, "set the temporary file aside", os.Remove(filepath.Join(live, ".state.json.tmp-123")))
	sameFiles(t, got, live)

	if again, err := cluster.Seed(within(t, 30*time.Second), a.stores, "alpha", live, w); err != nil || again {
		t.Fatalf("a second Seed: %v, %v: want nothing done", again, err)
	}
	rp := cluster.NewReplicas(nil, desks)
	rp.Attach("alpha", w)
	l, _ := openLog(t, rp, filepath.Join(live, "triggers.jsonl"))
	must(t, "append after the seed", l.Append([]byte(`{"id":"t3"}`), true))
	must(t, "close", l.Close())
	must(t, "replace after the seed", durable.WriteFile(rp, filepath.Join(live, "Memory.md"), []byte("# Lessons\n\n- the open lies\n"), 0o640))
	got, _ = rebuilt(t, a.stores, 0)
	sameFiles(t, got, live)
	if _, err := cluster.Seed(within(t, 30*time.Second), a.stores, "beta", live, w); err == nil {
		t.Fatal("Seed of desk beta with desk alpha's writer was taken")
	}
}

// BenchmarkSyncedAppend400 is one synced 400-byte append to a Log over a
// durable.Group, without and with Replicas on a three-node loopback
// cluster (the local fsync and the publish in parallel), and the publish
// alone (Writer.Append). It reports the Group's fsyncs per append, and
// with Replicas the WAL records.
func BenchmarkSyncedAppend400(b *testing.B) {
	rec := bytes.Repeat([]byte("x"), 399) // and its '\n'
	run := func(b *testing.B, g *durable.Group, fsys durable.FS, live string) {
		l, _, err := durable.OpenLog(fsys, filepath.Join(live, "sessions", "s1.jsonl"), 0o640, func([]byte) bool { return true })
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		before := g.Stats().Fsyncs
		for b.Loop() {
			if err := l.Append(rec, true); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(g.Stats().Fsyncs-before)/float64(b.N), "fsyncs/op")
	}
	b.Run("local", func(b *testing.B) {
		g := group(b)
		run(b, g, g, filepath.Join(b.TempDir(), "alpha"))
	})
	b.Run("publish", func(b *testing.B) { // the WAL's round trip alone
		_, w := owner(b, natstest.StartCluster(b, 3))
		ctx := context.Background()
		var at int64
		for b.Loop() {
			if err := w.Append(ctx, "sessions/s1.jsonl", at, append(rec, '\n')); err != nil {
				b.Fatal(err)
			}
			at += int64(len(rec) + 1)
		}
	})
	b.Run("replicated", func(b *testing.B) {
		_, w := owner(b, natstest.StartCluster(b, 3))
		g := group(b)
		r, live := replicas(b, g, w)
		first := last(w)
		run(b, g, r, live)
		b.ReportMetric(float64(last(w)-first)/float64(b.N), "records/op")
	})
}

// TestRebuildTakesPartsWholeOrNot: the parts of a replace apply only
// whole and in order: a part without its first, or another record inside
// them, stops Rebuild with an error naming them; parts an owner left
// unfinished before the next owner's fence are not applied.
func TestRebuildTakesPartsWholeOrNot(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	c := natstest.StartCluster(t, 3)
	a, w := owner(t, c)
	_, js := c.Client()
	epoch := strconv.FormatUint(w.Epoch(), 10)
	publish := func(desk, op, file, part, data string) {
		t.Helper()
		m := rawRecord(desk, epoch, op, file, 0, []byte(data))
		if part != "" {
			m.Header.Set(cluster.HeaderPart, part)
		}
		_, err := js.PublishMsg(within(t, 10*time.Second), m)
		must(t, "publish", err)
	}
	rebuild := func(desk string) error {
		_, err := cluster.Rebuild(within(t, 30*time.Second), a.stores, desk, filepath.Join(t.TempDir(), desk), 0)
		return err
	}
	publish("beta", cluster.OpReplace, "state.json", "2/2", "b")
	if err := rebuild("beta"); err == nil || !strings.Contains(err.Error(), "state.json: part 2/2 of a replace without its first") {
		t.Errorf("a part without its first: %v", err)
	}
	publish("gamma", cluster.OpReplace, "state.json", "1/2", "a")
	publish("gamma", cluster.OpAppend, "triggers.jsonl", "", "x\n")
	if err := rebuild("gamma"); err == nil || !strings.Contains(err.Error(), "inside the 2 parts of a replace of state.json") {
		t.Errorf("a record inside the parts: %v", err)
	}
	// alpha: a's fence, parts a left unfinished, then b's fence and write.
	publish("alpha", cluster.OpReplace, "state.json", "1/2", "a")
	lb := paused{w.Epoch() + 1}
	wb, err := cluster.Fence(within(t, 10*time.Second), a.stores, "alpha", "b", lb)
	must(t, "b fences", err)
	must(t, "b replaces", wb.Replace(within(t, 10*time.Second), "Memory.md", []byte("# b\n")))
	got, r := rebuilt(t, a.stores, 0)
	if fs := files(t, got); len(fs) != 1 || fs["Memory.md"] != "# b\n" || r.Through != last(wb) {
		t.Errorf("rebuilt %v through %d: want b's Memory.md alone (a's unfinished parts dropped), through %d", fs, r.Through, last(wb))
	}
}

// TestReplicasLocalFaultsKeepTheWALEqual: a local fsync that fails after
// its bytes were published (the Log cuts them off: the cut is published
// too), and a short write on a full disk (cut before any publish), leave
// the live folder what Rebuild gives, and the log goes on after them.
func TestReplicasLocalFaultsKeepTheWALEqual(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	a, w := owner(t, natstest.StartCluster(t, 3))
	disk := &faultfs.FS{Under: "triggers.jsonl"}
	r, live := replicas(t, disk, w)
	l, _ := openLog(t, r, filepath.Join(live, "triggers.jsonl"))
	defer l.Close()
	must(t, "append t1", l.Append([]byte(`{"id":"t1"}`), true))
	disk.FailAt(faultfs.Sync, 1, faultfs.ErrIO)
	if err := l.Append([]byte(`{"id":"t2"}`), true); !errors.Is(err, faultfs.ErrIO) {
		t.Fatalf("an append whose fsync fails: %v, want the disk's error", err)
	}
	disk.FailAt(faultfs.Write, 1, faultfs.ErrNoSpace)
	if err := l.Append([]byte(`{"id":"t3"}`), true); !errors.Is(err, faultfs.ErrNoSpace) {
		t.Fatalf("an append on a full disk: %v, want the disk's error", err)
	}
	must(t, "append t4", l.Append([]byte(`{"id":"t4"}`), true))
	if got := files(t, live)["triggers.jsonl"]; got != "{\"id\":\"t1\"}\n{\"id\":\"t4\"}\n" {
		t.Fatalf("the ledger holds %q, want t1 and t4", got)
	}
	got, _ := rebuilt(t, a.stores, 0)
	sameFiles(t, got, live)
}

// TestReplicasConcurrentLogsRebuild: logs of one desk appended at once
// from several goroutines (their fsyncs shared by the Group, their
// publishes in the one WAL) rebuild byte for byte.
func TestReplicasConcurrentLogsRebuild(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	a, w := owner(t, natstest.StartCluster(t, 3))
	r, live := replicas(t, group(t), w)
	errs := make(chan error, 8)
	for i := range 8 {
		l, _ := openLog(t, r, filepath.Join(live, "sessions", "s"+strconv.Itoa(i)+".jsonl"))
		defer l.Close()
		go func() {
			var err error
			for n := 0; n < 40 && err == nil; n++ {
				err = l.Append([]byte(`{"log":`+strconv.Itoa(i)+`,"n":`+strconv.Itoa(n)+`}`), n%4 != 0)
			}
			if err == nil {
				err = l.Sync()
			}
			errs <- err
		}()
	}
	for range 8 {
		must(t, "append at once", <-errs)
	}
	got, _ := rebuilt(t, a.stores, 0)
	sameFiles(t, got, live)
	if n := len(files(t, live)); n != 8 {
		t.Fatalf("%d logs written, want 8", n)
	}
}

// TestReplicasLostLeaseWritesNothing: once the owner's lease has run out
// (it could not renew), its next write in the desk's folder is refused
// before anything is written there or published.
func TestReplicasLostLeaseWritesNothing(t *testing.T) {
	t.Parallel() // waits on NATS: beside the rest
	clk := clock.NewFake(t0)
	a, w := ownerOn(t, natstest.StartCluster(t, 3), clk)
	r, live := replicas(t, nil, w)
	path := filepath.Join(live, "triggers.jsonl")
	l, _ := openLog(t, r, path)
	defer l.Close()
	must(t, "append while held", l.Append([]byte(`{"id":"t1"}`), true))
	fence := last(w)
	a.loseLease(clk)
	if err := l.Append([]byte(`{"id":"t2"}`), false); !errors.Is(err, cluster.ErrFenced) || !strings.Contains(err.Error(), "lease is lost") {
		t.Fatalf("an append after the lease ran out: %v, want ErrFenced (the lease is lost)", err)
	}
	if err := durable.WriteFile(r, filepath.Join(live, "state.json"), []byte("{}"), 0o640); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("WriteFile after the lease ran out: %v, want ErrFenced", err)
	}
	if got := files(t, live); len(got) != 1 || got["triggers.jsonl"] != "{\"id\":\"t1\"}\n" {
		t.Fatalf("after the lease ran out the folder holds %v, want the ledger of t1 alone", got)
	}
	if last(w) != fence {
		t.Fatalf("the writer published after the lease ran out: last %d, was %d", last(w), fence)
	}
}
