package triggers_test

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/triggers"
)

// blockFS is the operating system's file system, except that the next
// fsync of a file whose name blocks takes stops: it says so on entered
// and waits for release.
type blockFS struct {
	durable.OS
	mu      sync.Mutex
	blocks  func(name string) bool
	entered chan string
	release chan struct{}
}

// arm makes the next fsync of a file whose name blocks takes wait.
func (b *blockFS) arm(blocks func(name string) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.blocks, b.entered, b.release = blocks, make(chan string, 1), make(chan struct{})
}

func (b *blockFS) OpenFile(name string, flag int, perm fs.FileMode) (durable.File, error) {
	f, err := b.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &blockFile{File: f, fs: b}, nil
}

func (b *blockFS) CreateTemp(dir, pattern string) (durable.File, error) {
	f, err := b.OS.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &blockFile{File: f, fs: b}, nil
}

type blockFile struct {
	durable.File
	fs *blockFS
}

func (f *blockFile) Sync() error {
	b := f.fs
	b.mu.Lock()
	blocks := b.blocks != nil && b.blocks(f.Name())
	entered, release := b.entered, b.release
	if blocks {
		b.blocks = nil // once
	}
	b.mu.Unlock()
	if blocks {
		entered <- f.Name()
		<-release
	}
	return f.File.Sync()
}

// within fails the test unless ch delivers before a generous deadline:
// a guard against a hang, not a measure of speed.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still waiting", what)
		panic("unreachable")
	}
}

// statusLook is what a status call and a trigger's lookup read of the
// ledger.
type statusLook struct {
	interrupted, unfinished []triggers.Item
	done, waiting, pending  triggers.Item
	doneOK, pendingOK       bool
	n                       int
}

func look(l *triggers.Ledger, pending string) <-chan statusLook {
	ch := make(chan statusLook, 1)
	go func() {
		var s statusLook
		s.interrupted, s.unfinished = l.Interrupted(), l.Unfinished()
		s.done, s.doneOK = l.Get("done")
		s.waiting, _ = l.Get("waiting")
		s.pending, s.pendingOK = l.Get(pending)
		s.n = l.Len()
		ch <- s
	}()
	return ch
}

// fillForStatus records a finished trigger (done), an interrupted one and
// a queued one (waiting).
func fillForStatus(t *testing.T, l *triggers.Ledger) {
	t.Helper()
	mustAppend(t, l, queued("done", triggers.Manual, "do it"))
	mustAppend(t, l, triggers.Record{At: t0, ID: "done", State: triggers.StateRunning})
	mustAppend(t, l, triggers.Record{At: t0, ID: "done", State: triggers.StateAnswered, Session: "s", Turn: 1, Reply: "done it"})
	mustAppend(t, l, queued("cut", triggers.Manual, "cut short"))
	mustAppend(t, l, triggers.Record{At: t0, ID: "cut", State: triggers.StateInterrupted, Reason: "stopped"})
	mustAppend(t, l, queued("waiting", triggers.Market, "tick"))
}

// TestLedgerStatusDuringFsync: while an Append waits in its fsync, the
// readers of the index (Interrupted, Unfinished, Get of an open and of a
// finished trigger, Len) answer, and do not see the record being written;
// once Append returns, they do.
func TestLedgerStatusDuringFsync(t *testing.T) {
	bfs := &blockFS{}
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	l := openLedgerOn(t, bfs, path)
	fillForStatus(t, l)

	bfs.arm(func(name string) bool { return name == path })
	appended := make(chan error, 1)
	go func() { appended <- l.Append(queued("new", triggers.Manual, "new one")) }()
	within(t, bfs.entered, "the Append's fsync")

	s := within(t, look(l, "new"), "status while an Append is in its fsync")
	if len(s.interrupted) != 1 || s.interrupted[0].Trigger.ID != "cut" {
		t.Errorf("Interrupted = %+v, want cut", s.interrupted)
	}
	if !s.doneOK || s.done.Reply != "done it" || s.done.Trigger.Text != "do it" || s.done.State != triggers.StateAnswered {
		t.Errorf("Get(done) = %+v, %v", s.done, s.doneOK)
	}
	if s.waiting.State != triggers.StateQueued || s.n != 3 || len(s.unfinished) != 1 {
		t.Errorf("Get(waiting) = %+v, Len = %d, Unfinished = %d", s.waiting, s.n, len(s.unfinished))
	}
	if s.pendingOK {
		t.Error("the record still in its fsync is in the index")
	}

	close(bfs.release)
	if err := within(t, appended, "the Append"); err != nil {
		t.Fatal(err)
	}
	if it, ok := l.Get("new"); !ok || it.Trigger.Text != "new one" {
		t.Errorf("after the Append, Get(new) = %+v, %v", it, ok)
	}
}

// TestLedgerStatusDuringCompaction: while a compaction waits in an fsync
// (of its new file, and after the rename, of the folder), readers answer
// from the old file, finished triggers included; after it, from the new.
func TestLedgerStatusDuringCompaction(t *testing.T) {
	for _, tc := range []struct {
		name   string
		blocks func(path string) func(string) bool
	}{
		{"new file", func(path string) func(string) bool {
			return func(name string) bool { return strings.Contains(filepath.Base(name), durable.TempInfix) }
		}},
		{"folder after the rename", func(path string) func(string) bool {
			return func(name string) bool { return filepath.Clean(name) == filepath.Dir(path) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bfs := &blockFS{}
			path := filepath.Join(t.TempDir(), triggers.LedgerFile)
			l := openLedgerOn(t, bfs, path)
			old := t0.Add(-60 * 24 * time.Hour)
			r := queued("old", triggers.Market, "long ago")
			r.At = old
			mustAppend(t, l, r)
			mustAppend(t, l, triggers.Record{At: old, ID: "old", State: triggers.StateAnswered, Reply: "then"})
			fillForStatus(t, l)

			bfs.arm(tc.blocks(path))
			compacted := make(chan error, 1)
			go func() { compacted <- l.Compact(t0.Add(-30 * 24 * time.Hour)) }()
			within(t, bfs.entered, "the compaction's fsync")

			s := within(t, look(l, "old"), "status while a compaction is in its fsync")
			if !s.doneOK || s.done.Reply != "done it" || s.done.Trigger.Text != "do it" {
				t.Errorf("during the compaction, Get(done) = %+v, %v", s.done, s.doneOK)
			}
			if !s.pendingOK || s.pending.Reply != "then" {
				t.Errorf("during the compaction, Get(old) = %+v, %v: the old file is read until the new index is in", s.pending, s.pendingOK)
			}
			if len(s.interrupted) != 1 || s.n != 4 {
				t.Errorf("during the compaction, Interrupted = %+v, Len = %d", s.interrupted, s.n)
			}

			close(bfs.release)
			if err := within(t, compacted, "the compaction"); err != nil {
				t.Fatal(err)
			}
			s = within(t, look(l, "old"), "status after the compaction")
			if !s.doneOK || s.done.Reply != "done it" || s.done.Trigger.Text != "do it" || s.pendingOK || s.n != 3 {
				t.Errorf("after the compaction, Get(done) = %+v, %v; Get(old) found %v; Len = %d", s.done, s.doneOK, s.pendingOK, s.n)
			}
			if n := l.Records(); n != 3 {
				t.Errorf("after the compaction, Records = %d, want 3", n)
			}
		})
	}
}

// TestLedgerFinishedReadBack: a finished trigger's Item, read back from
// the file, is what its records say, before and after a reopen and a
// compaction; a finished trigger queued again gets its whole Item back.
func TestLedgerFinishedReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), triggers.LedgerFile)
	l := openLedger(t, path)
	at := t0
	for i := range 5 {
		id := fmt.Sprintf("t%d", i)
		r := queued(id, triggers.Market, "text of "+id)
		r.At = at
		mustAppend(t, l, r)
		mustAppend(t, l, triggers.Record{At: at.Add(time.Second), ID: id, State: triggers.StateRunning})
		mustAppend(t, l, triggers.Record{At: at.Add(2 * time.Second), ID: id, State: triggers.StateSent, Session: "s", Turn: i})
		mustAppend(t, l, triggers.Record{At: at.Add(3 * time.Second), ID: id, State: triggers.StateAnswered, Session: "s", Turn: i, Reply: "reply <&> of " + id})
		at = at.Add(time.Minute)
	}
	check := func(when string) {
		t.Helper()
		for i := range 5 {
			id := fmt.Sprintf("t%d", i)
			it, ok := l.Get(id)
			start := t0.Add(time.Duration(i) * time.Minute)
			if !ok || it.State != triggers.StateAnswered || it.Trigger.Text != "text of "+id || it.Reply != "reply <&> of "+id ||
				it.Turn != i || !it.QueuedAt.Equal(start) || !it.StartedAt.Equal(start.Add(time.Second)) ||
				!it.SentAt.Equal(start.Add(2*time.Second)) || !it.Updated.Equal(start.Add(3*time.Second)) {
				t.Errorf("%s: Get(%s) = %+v, %v", when, id, it, ok)
			}
		}
	}
	check("before a reopen")
	_ = l.Close()
	l = openLedger(t, path)
	check("after a reopen")
	if err := l.Compact(t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := l.Records(); n != 5 {
		t.Errorf("after the compaction, Records = %d, want 5", n)
	}
	check("after a compaction")
	if err := l.Compact(t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	check("after a second compaction (the records copied as they are)")

	mustAppend(t, l, triggers.Record{At: at, ID: "t2", State: triggers.StateQueued, Reason: "again"})
	u := l.Unfinished()
	if len(u) != 1 || u[0].Trigger.Text != "text of t2" || u[0].Reply != "reply <&> of t2" {
		t.Errorf("a finished trigger queued again: Unfinished = %+v", u)
	}
}

// TestLedgerCompactIfGrown: a file grown past four records per trigger
// it would keep (and past the minimum) is compacted, with Compact's rules;
// below either bound it is left as it is.
func TestLedgerCompactIfGrown(t *testing.T) {
	old := t0.Add(-60 * 24 * time.Hour)
	cutoff := t0.Add(-30 * 24 * time.Hour)
	fill := func(t *testing.T, l *triggers.Ledger, n int, at time.Time) {
		t.Helper()
		for i := range n {
			id := fmt.Sprintf("%s-%d", at.Format("0102"), i)
			r := queued(id, triggers.Market, "x")
			r.At = at
			for _, r := range []triggers.Record{r,
				{At: at, ID: id, State: triggers.StateRunning},
				{At: at, ID: id, State: triggers.StateSent, Session: "s", Turn: i},
				{At: at, ID: id, State: triggers.StateAnswered, Session: "s", Turn: i, Reply: "r"},
			} {
				if err := l.Note(r); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Run("grown", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), triggers.LedgerFile)
		l := openLedger(t, path)
		fill(t, l, 300, old)
		slot := old.Add(time.Hour)
		tr := triggers.Trigger{ID: triggers.SlotID("brief", slot), Kind: triggers.Schedule, Text: "brief"}
		mustAppend(t, l, triggers.Record{At: old, ID: tr.ID, State: triggers.StateQueued, Trigger: &tr, Schedule: "brief", Slot: slot})
		mustAppend(t, l, triggers.Record{At: old, ID: tr.ID, State: triggers.StateAnswered, Reply: "briefed"})
		mustAppend(t, l, queued("live", triggers.Manual, "still queued"))
		done, err := l.CompactIfGrown(cutoff)
		if err != nil || !done {
			t.Fatalf("CompactIfGrown = %v, %v; want a compaction of %d records for 2 kept triggers", done, err, l.Records())
		}
		if n := l.Records(); n != 2 {
			t.Errorf("Records = %d, want 2: the latest slot and the queued trigger", n)
		}
		_ = l.Close()
		l = openLedger(t, path)
		if it, ok := l.Get(tr.ID); !ok || it.Reply != "briefed" || l.Len() != 2 {
			t.Errorf("after a reopen, Get(latest slot) = %+v, %v; Len = %d", it, ok, l.Len())
		}
		if last, ok := l.LastSlot("brief"); !ok || !last.Equal(slot) {
			t.Errorf("LastSlot = %v, %v", last, ok)
		}
		if u := l.Unfinished(); len(u) != 1 || u[0].Trigger.Text != "still queued" {
			t.Errorf("Unfinished = %+v", u)
		}
	})
	t.Run("live records", func(t *testing.T) {
		l := openLedger(t, filepath.Join(t.TempDir(), triggers.LedgerFile))
		fill(t, l, 300, t0) // 1,200 records, 4 per trigger kept
		if done, err := l.CompactIfGrown(cutoff); err != nil || done {
			t.Errorf("CompactIfGrown = %v, %v; want no compaction", done, err)
		}
		if n := l.Records(); n != 1200 {
			t.Errorf("Records = %d, want 1200", n)
		}
	})
	t.Run("small", func(t *testing.T) {
		l := openLedger(t, filepath.Join(t.TempDir(), triggers.LedgerFile))
		fill(t, l, 200, old) // 800 records, none kept
		if done, err := l.CompactIfGrown(cutoff); err != nil || done {
			t.Errorf("CompactIfGrown = %v, %v; want no compaction below the minimum", done, err)
		}
		if n := l.Records(); n != 800 {
			t.Errorf("Records = %d, want 800", n)
		}
	})
}

// TestLedgerCompactionFailsAfterRename: the folder's fsync after the
// compaction's rename fails. The ledger must then append to the new file
// (after an fsync of the folder that succeeds), never to the file it
// replaced, whose records a reopen would not see; while the disk keeps
// failing, appends refuse, until Probe finds it working.
func TestLedgerCompactionFailsAfterRename(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fails int // fsyncs that fail from the folder's after the rename on
	}{{"the next fsync works", 1}, {"the disk keeps failing", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), triggers.LedgerFile)
			ffs := &faultfs.FS{}
			l, err := triggers.OpenLedgerOn(ffs, path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			fillForStatus(t, l)
			for i := range tc.fails {
				ffs.FailAt(faultfs.Sync, 2+i, faultfs.ErrIO) // 1: the new file's; 2: the folder's, after the rename
			}
			err = l.Compact(t0.Add(-time.Hour))
			if tc.fails > 1 {
				if err == nil {
					t.Fatal("Compact = nil, with the disk failing after its rename")
				}
				ffs.Fill(faultfs.ErrIO)
				if err := l.Append(queued("refused", triggers.Manual, "x")); err == nil {
					t.Fatal("Append = nil, with the log still on the replaced file")
				}
				ffs.Free()
				if err := l.Probe(); err != nil {
					t.Fatalf("Probe: %v", err)
				}
			} else if err != nil {
				t.Fatalf("Compact: %v", err)
			}
			if it, ok := l.Get("done"); !ok || it.Reply != "done it" {
				t.Errorf("Get(done) = %+v, %v", it, ok)
			}
			mustAppend(t, l, queued("after", triggers.Manual, "after the compaction"))
			_ = l.Close()
			l2 := openLedger(t, path)
			if it, ok := l2.Get("after"); !ok || it.Trigger.Text != "after the compaction" {
				t.Errorf("after a reopen, Get(after) = %+v, %v: the append went to the replaced file", it, ok)
			}
			if _, ok := l2.Get("refused"); ok {
				t.Error("the refused append is in the ledger")
			}
			if n := l2.Records(); n != 4 {
				t.Errorf("after a reopen, Records = %d, want 4 (3 compacted + 1)", n)
			}
		})
	}
}
