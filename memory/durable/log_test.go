package durable_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/memory/durable/faultfs"
)

// isObject is the record rule of the tests: a JSON object.
func isObject(line []byte) bool {
	var m map[string]any
	return json.Unmarshal(line, &m) == nil
}

func openLog(t *testing.T, fsys durable.FS, path string) (*durable.Log, durable.Scan) {
	t.Helper()
	l, sc, err := durable.OpenLog(fsys, path, 0o640, isObject)
	if err != nil {
		t.Fatalf("OpenLog %s: %v", path, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, sc
}

func records(sc durable.Scan) []string {
	var out []string
	for _, r := range sc.Records {
		out = append(out, string(r))
	}
	return out
}

// A write that fails half way is cut back at once: the next record is
// whole, and a reopen finds exactly the acknowledged records.
func TestLogFailedWriteIsCutBack(t *testing.T) {
	for _, op := range []faultfs.Op{faultfs.Write, faultfs.Sync} {
		t.Run(string(op), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			ffs := &faultfs.FS{}
			l, _ := openLog(t, ffs, path)
			if err := l.Append([]byte(`{"n":1}`), true); err != nil {
				t.Fatal(err)
			}
			ffs.FailAt(op, 1, faultfs.ErrNoSpace)
			err := l.Append([]byte(`{"n":2,"pad":"`+strings.Repeat("x", 100)+`"}`), true)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Append on a full disk = %v, want ENOSPC", err)
			}
			if got, _ := os.ReadFile(path); string(got) != "{\"n\":1}\n" {
				t.Fatalf("after the failed append the file holds %q, want only the first record", got)
			}
			if err := l.Append([]byte(`{"n":3}`), true); err != nil {
				t.Fatal(err)
			}
			_ = l.Close()
			_, sc := openLog(t, nil, path)
			if got, want := records(sc), []string{`{"n":1}`, `{"n":3}`}; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("records after reopen = %v, want %v", got, want)
			}
			if sc.Torn != nil || len(sc.Skipped) != 0 {
				t.Errorf("reopen found damage: torn %+v, skipped %v", sc.Torn, sc.Skipped)
			}
		})
	}
}

// AppendAll writes its records in one write: all of them are in the log
// after it, or (when the write or its fsync fails) none, and a reopen
// finds exactly the records acknowledged.
func TestLogAppendAllIsOneWrite(t *testing.T) {
	for _, op := range []faultfs.Op{faultfs.Write, faultfs.Sync} {
		t.Run(string(op), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			ffs := &faultfs.FS{}
			l, _ := openLog(t, ffs, path)
			writes := ffs.Count(faultfs.Write)
			if err := l.AppendAll([][]byte{[]byte(`{"n":1}`), []byte(`{"n":2}`)}, true); err != nil {
				t.Fatal(err)
			}
			if n := ffs.Count(faultfs.Write) - writes; n != 1 {
				t.Errorf("AppendAll of two records made %d writes, want 1", n)
			}
			ffs.FailAt(op, 1, faultfs.ErrIO)
			if err := l.AppendAll([][]byte{[]byte(`{"n":3}`), []byte(`{"n":4}`)}, true); !errors.Is(err, syscall.EIO) {
				t.Fatalf("AppendAll on a failing disk = %v, want EIO", err)
			}
			if err := l.AppendAll([][]byte{[]byte(`{"n":5}`), []byte("{\"bad\":\n}")}, false); err == nil {
				t.Fatal("AppendAll of a record holding a newline succeeded")
			}
			_ = l.Close()
			_, sc := openLog(t, nil, path)
			if got, want := records(sc), []string{`{"n":1}`, `{"n":2}`}; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("records after reopen = %v, want %v", got, want)
			}
		})
	}
}

// AppendLines writes records that carry their own newlines as they are,
// one write; records without their newline, or holding another, or
// empty, are refused and leave nothing in the log; the caller's buffer, reused after, changes
// nothing written; a failing write leaves no trace.
func TestLogAppendLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	ffs := &faultfs.FS{}
	l, _ := openLog(t, ffs, path)
	buf := []byte("{\"n\":1}\n{\"n\":1.5}\n")
	writes := ffs.Count(faultfs.Write)
	if err := l.AppendLines(buf, 2, true); err != nil {
		t.Fatal(err)
	}
	if n := ffs.Count(faultfs.Write) - writes; n != 1 {
		t.Errorf("AppendLines of two records made %d writes, want 1", n)
	}
	copy(buf, "{\"n\":9}\n") // the caller reuses its buffer
	for _, bad := range []struct {
		lines   string
		records int
	}{{`{"n":2}`, 1}, {"{\"n\":\n2}\n", 1}, {"", 0}, {"", 1}, {"\n", 1}, {"\n\n", 2}, {"{}\n\n{}\n", 3}, {"{}\n{}\n", 1}, {"\n{}\n", 2}} {
		if err := l.AppendLines([]byte(bad.lines), bad.records, false); err == nil {
			t.Errorf("AppendLines(%q, %d) succeeded; want it refused", bad.lines, bad.records)
		}
	}
	ffs.FailAt(faultfs.Write, 1, faultfs.ErrIO)
	if err := l.AppendLines([]byte("{\"n\":3}\n"), 1, true); !errors.Is(err, syscall.EIO) {
		t.Fatalf("AppendLines on a failing disk = %v, want EIO", err)
	}
	if err := l.AppendLines([]byte("{\"n\":4}\n"), 1, true); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	_, sc := openLog(t, nil, path)
	if got, want := records(sc), []string{`{"n":1}`, `{"n":1.5}`, `{"n":4}`}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("records after reopen = %v, want %v", got, want)
	}
}

// When even the cut fails, the log refuses to append until a cut works:
// it never writes after a torn record.
func TestLogRefusesUntilCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	ffs := &faultfs.FS{}
	l, _ := openLog(t, ffs, path)
	ffs.FailAt(faultfs.Write, 1, faultfs.ErrIO)
	ffs.FailAt(faultfs.Truncate, 1, faultfs.ErrIO)
	ffs.FailAt(faultfs.Truncate, 2, faultfs.ErrIO)
	if err := l.Append([]byte(`{"n":1,"pad":"xxxxxxxxxxxx"}`), true); err == nil {
		t.Fatal("Append with a failing write succeeded")
	}
	if l.Err() == nil {
		t.Fatal("Err() = nil after a failed write whose cut failed too")
	}
	if err := l.Append([]byte(`{"n":2}`), true); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Append while the tail could not be cut = %v, want a refusal", err)
	}
	if got, _ := os.ReadFile(path); bytes.Contains(got, []byte(`{"n":2}`)) {
		t.Fatalf("the refused record was written: %q", got)
	}
	if err := l.Append([]byte(`{"n":3}`), true); err != nil {
		t.Fatalf("Append once the cut works: %v", err)
	}
	if l.Err() != nil {
		t.Errorf("Err() = %v after a successful append", l.Err())
	}
	if got, _ := os.ReadFile(path); string(got) != "{\"n\":3}\n" {
		t.Errorf("file = %q, want only the record appended after the cut", got)
	}
}

// A torn tail is set aside, reported once, and the file cut back; a good
// last record without its newline is kept.
func TestOpenLogTornTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log.jsonl")
	const good = "{\"n\":1}\n\n{\"n\":2}\n"
	const frag = `{"n":3,"half`
	if err := os.WriteFile(path, []byte(good+frag), 0o640); err != nil {
		t.Fatal(err)
	}
	l, sc := openLog(t, nil, path)
	if sc.Torn == nil || sc.Torn.Offset != int64(len(good)) || sc.Torn.Bytes != len(frag) {
		t.Fatalf("Torn = %+v, want offset %d, %d bytes", sc.Torn, len(good), len(frag))
	}
	if b, err := os.ReadFile(sc.Torn.SavedTo); err != nil || string(b) != frag {
		t.Errorf("%s = %q (%v), want the fragment", sc.Torn.SavedTo, b, err)
	}
	if err := l.Append([]byte(`{"n":4}`), true); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	_, sc = openLog(t, nil, path)
	if sc.Torn != nil {
		t.Errorf("second open found a torn tail again: %+v", sc.Torn)
	}
	if got := strings.Join(records(sc), " "); got != `{"n":1} {"n":2} {"n":4}` {
		t.Errorf("records = %s", got)
	}

	path2 := filepath.Join(dir, "unterminated.jsonl")
	if err := os.WriteFile(path2, []byte(`{"n":1}`), 0o640); err != nil {
		t.Fatal(err)
	}
	l2, sc2 := openLog(t, nil, path2)
	if sc2.Torn != nil || len(sc2.Records) != 1 {
		t.Fatalf("a good last record without its newline: torn %+v, %d records", sc2.Torn, len(sc2.Records))
	}
	if err := l2.Append([]byte(`{"n":2}`), true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path2); string(got) != "{\"n\":1}\n{\"n\":2}\n" {
		t.Errorf("file = %q", got)
	}
}

// A blank last line without its newline (any whitespace, a vertical tab
// too) gets one, so the next record starts a line of its own and a reopen
// finds no damage.
func TestOpenLogUnterminatedBlankLine(t *testing.T) {
	for _, tail := range []string{"\v", " \t", "\r", "{\"n\":1}\n\v"} {
		path := logHolding(t, tail)
		l, sc := openLog(t, nil, path)
		if sc.Torn != nil || len(sc.Skipped) != 0 {
			t.Fatalf("%q: first open found damage: torn %+v, skipped %+v", tail, sc.Torn, sc.Skipped)
		}
		want := len(sc.Records) + 1
		if err := l.Append([]byte(`{"n":2}`), true); err != nil {
			t.Fatal(err)
		}
		_ = l.Close()
		_, sc = openLog(t, nil, path)
		if sc.Torn != nil || len(sc.Skipped) != 0 || len(sc.Records) != want {
			got, _ := os.ReadFile(path)
			t.Errorf("%q: reopen found torn %+v, skipped %+v, %d records (want %d); file %q", tail, sc.Torn, sc.Skipped, len(sc.Records), want, got)
		}
	}
}

// A file damaged by a writer that did not cut its failures back (half a
// record with the next one glued on) gives the whole record back, and
// reports the damage.
func TestScanRecordsRecoversGluedRecord(t *testing.T) {
	data := []byte("{\"n\":1}\n{\"n\":2,\"ha{\"n\":3}\ngarbage\n{\"n\":4}\n")
	sc, end, _ := durable.ScanRecords(data, isObject)
	if got := strings.Join(records(sc), " "); got != `{"n":1} {"n":3} {"n":4}` {
		t.Errorf("records = %s, want n 1, 3, 4", got)
	}
	if end != int64(len(data)) {
		t.Errorf("end = %d, want %d", end, len(data))
	}
	if len(sc.Skipped) != 2 {
		t.Errorf("skipped = %+v, want the torn half and the garbage line", sc.Skipped)
	}
}

// WriteFile leaves the old content when any step fails, and leaves no
// temporary file behind.
func TestWriteFileFailureKeepsOld(t *testing.T) {
	for _, op := range []faultfs.Op{faultfs.Write, faultfs.Sync, faultfs.Create, faultfs.Rename} {
		t.Run(string(op), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "Memory.md")
			if err := os.WriteFile(path, []byte("old\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			ffs := &faultfs.FS{}
			ffs.FailAt(op, 1, faultfs.ErrNoSpace)
			if err := durable.WriteFile(ffs, path, []byte("new\n"), 0o640); err == nil && op != faultfs.Sync {
				t.Fatalf("WriteFile with a failing %s succeeded", op)
			}
			got, _ := os.ReadFile(path)
			if string(got) != "old\n" && string(got) != "new\n" {
				t.Errorf("Memory.md = %q, want the old or the new text whole", got)
			}
			if op != faultfs.Sync && string(got) != "old\n" {
				t.Errorf("Memory.md = %q after a failed write, want the old text", got)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if durable.IsTemp(e.Name()) {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

// As root, a replaced file keeps its owner, and a new one takes its
// folder's: an operator's sudo never leaves a file the daemon cannot read.
func TestWriteFileKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files away")
	}
	dir := t.TempDir()
	const uid, gid = 4321, 4322
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "Memory.md")
	if err := os.WriteFile(old, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(old, uid+1, gid+1); err != nil {
		t.Fatal(err)
	}
	if err := durable.WriteFile(nil, old, []byte("new\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	checkOwner(t, old, uid+1, gid+1)
	fresh := filepath.Join(dir, "skills", "x", "SKILL.md")
	if err := durable.MkdirAll(nil, filepath.Dir(fresh), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := durable.WriteFile(nil, fresh, []byte("x\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	checkOwner(t, filepath.Join(dir, "skills"), uid, gid)
	checkOwner(t, filepath.Dir(fresh), uid, gid)
	checkOwner(t, fresh, uid, gid)
	l, _, err := durable.OpenLog(nil, filepath.Join(dir, "ledger.jsonl"), 0o640, isObject)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	checkOwner(t, filepath.Join(dir, "ledger.jsonl"), uid, gid)
}

func checkOwner(t *testing.T, path string, uid, gid int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("%s is owned by %d:%d, want %d:%d", path, st.Uid, st.Gid, uid, gid)
	}
}

// A torn half full of braces (market text, tool arguments) does not hide
// the whole record glued after it.
func TestScanRecordsGluedAfterManyBraces(t *testing.T) {
	half := `{"n":1,"text":"` + strings.Repeat("{x} ", 500)
	data := []byte(half + `{"n":2}` + "\n")
	sc, _, _ := durable.ScanRecords(data, isObject)
	if got := strings.Join(records(sc), " "); got != `{"n":2}` {
		t.Errorf("records = %q, want the glued record {\"n\":2}", got)
	}
}

// opener is OpenLog or OpenLogAt from the file's start, as a test opens a
// log: both must recover a file the same way.
type opener struct {
	name string
	open func(fsys durable.FS, path string) (*durable.Log, durable.Scan, error)
}

var openers = []opener{
	{"OpenLog", func(fsys durable.FS, path string) (*durable.Log, durable.Scan, error) {
		return durable.OpenLog(fsys, path, 0o640, isObject)
	}},
	{"OpenLogAt", func(fsys durable.FS, path string) (*durable.Log, durable.Scan, error) {
		return durable.OpenLogAt(fsys, path, 0o640, 0, func(line []byte, _ int64) bool { return isObject(line) })
	}},
}

// readBack reopens path with every opener and fails unless each finds
// exactly want (the file's bytes) and no damage.
func readBack(t *testing.T, path, want string) {
	t.Helper()
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Fatalf("file = %q, want %q", got, want)
	}
	for _, o := range openers {
		l, sc, err := o.open(nil, path)
		if err != nil {
			t.Fatalf("%s again: %v", o.name, err)
		}
		_ = l.Close()
		if sc.Torn != nil || len(sc.Skipped) != 0 {
			t.Errorf("%s again found damage: torn %+v, skipped %+v", o.name, sc.Torn, sc.Skipped)
		}
	}
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Fatalf("file after reopening = %q, want %q", got, want)
	}
}

// logHolding writes content to log.jsonl in a fresh folder and returns
// its path.
func logHolding(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

// failedThenGoodAppend makes l's Append of bad fail at its first op (with
// err), appends {"n":3}, closes l and reads path back (readBack): the
// file must hold exactly the good records, {"n":1} then {"n":3}.
func failedThenGoodAppend(t *testing.T, ffs *faultfs.FS, l *durable.Log, path string, op faultfs.Op, err error, bad []byte) {
	t.Helper()
	ffs.FailAt(op, 1, err)
	if err := l.Append(bad, true); err == nil {
		t.Fatalf("Append with a failing %s succeeded", op)
	}
	if err := l.Append([]byte(`{"n":3}`), true); err != nil {
		t.Fatalf("the good Append after the fault: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	readBack(t, path, "{\"n\":1}\n{\"n\":3}\n")
}

// TestEveryRecoveryThenAFault: whatever the log recovered from (a last
// record without its newline, a torn tail with or without its newline,
// half a record of JSON or not, a failed write, a failed fsync, a failed
// cut), a failed append after it, then a good one, leave a file of
// exactly the good records, through OpenLog and OpenLogAt alike. (The
// issue's case: {"n":1} without its newline, a failed append, then
// {"n":3}: the file must read {"n":1}\n{"n":3}\n.)
func TestEveryRecoveryThenAFault(t *testing.T) {
	big := []byte(`{"n":2,"pad":"` + strings.Repeat("x", 100) + `"}`)
	recoveries := []struct {
		name    string
		content string
		// after runs on the opened log: a failure the log must recover from.
		after func(t *testing.T, ffs *faultfs.FS, l *durable.Log)
	}{
		{name: "no newline", content: `{"n":1}`},
		{name: "torn half of JSON", content: "{\"n\":1}\n{\"n\":2,\"ha"},
		{name: "torn half of JSON with its newline", content: "{\"n\":1}\n{\"n\":2,\"ha\n"},
		{name: "torn not JSON", content: "{\"n\":1}\ngarbage"},
		{name: "torn half after a record without newline", content: "{\"n\":1}\n{\"n\":2,\"ha{\""},
		{name: "failed write", content: "{\"n\":1}\n", after: func(t *testing.T, ffs *faultfs.FS, l *durable.Log) {
			ffs.FailAt(faultfs.Write, 1, faultfs.ErrNoSpace)
			if err := l.Append(big, true); err == nil {
				t.Fatal("Append with a failing write succeeded")
			}
		}},
		{name: "failed fsync", content: "{\"n\":1}\n", after: func(t *testing.T, ffs *faultfs.FS, l *durable.Log) {
			ffs.FailAt(faultfs.Sync, 1, faultfs.ErrIO)
			if err := l.Append(big, true); err == nil {
				t.Fatal("Append with a failing fsync succeeded")
			}
		}},
		{name: "failed cut", content: "{\"n\":1}\n", after: func(t *testing.T, ffs *faultfs.FS, l *durable.Log) {
			ffs.FailAt(faultfs.Write, 1, faultfs.ErrIO)
			ffs.FailAt(faultfs.Truncate, 1, faultfs.ErrIO)
			if err := l.Append(big, true); err == nil || l.Err() == nil {
				t.Fatalf("Append with a failing write and cut = %v, Err %v; want both set", err, l.Err())
			}
		}},
	}
	faults := []struct {
		op  faultfs.Op
		err error
	}{{faultfs.Write, faultfs.ErrNoSpace}, {faultfs.Sync, faultfs.ErrIO}}
	for _, o := range openers {
		for _, rc := range recoveries {
			for _, fault := range faults {
				t.Run(o.name+"/"+rc.name+"/then a failed "+string(fault.op), func(t *testing.T) {
					path := logHolding(t, rc.content)
					ffs := &faultfs.FS{}
					l, _, err := o.open(ffs, path)
					if err != nil {
						t.Fatal(err)
					}
					defer func() { _ = l.Close() }()
					if rc.after != nil {
						rc.after(t, ffs, l)
					}
					failedThenGoodAppend(t, ffs, l, path, fault.op, fault.err, big)
				})
			}
		}
	}
}

// TestAFaultDuringRecovery: when the open's own recovery fails (ending
// the last record with its newline, saving or cutting the torn tail), the
// open fails and changes nothing it cannot finish; the next open recovers,
// and a failed append then a good one leave exactly the good records.
func TestAFaultDuringRecovery(t *testing.T) {
	tests := []struct {
		name, content string
		op            faultfs.Op
	}{
		{"newline not written", `{"n":1}`, faultfs.Write},
		{"newline not synced", `{"n":1}`, faultfs.Sync},
		{"torn tail not saved", "{\"n\":1}\n{\"n\":2,\"ha", faultfs.Create},
		{"torn tail not cut", "{\"n\":1}\n{\"n\":2,\"ha", faultfs.Truncate},
	}
	for _, o := range openers {
		for _, tt := range tests {
			t.Run(o.name+"/"+tt.name, func(t *testing.T) {
				path := logHolding(t, tt.content)
				ffs := &faultfs.FS{}
				ffs.FailAt(tt.op, 1, faultfs.ErrIO)
				if l, _, err := o.open(ffs, path); err == nil {
					_ = l.Close()
					t.Fatalf("%s with a failing %s succeeded", o.name, tt.op)
				}
				ffs.Free()
				l, _, err := o.open(ffs, path)
				if err != nil {
					t.Fatalf("%s after the failed one: %v", o.name, err)
				}
				defer func() { _ = l.Close() }()
				failedThenGoodAppend(t, ffs, l, path, faultfs.Write, faultfs.ErrNoSpace, []byte(`{"n":2}`))
			})
		}
	}
}

// TestNewLogIsEnteredByItsFirstSync: opening a log that does not exist
// creates it without an fsync (an idle desk's ledger, opened at every
// start, costs none); its first fsync, a synced Append or Sync, fsyncs
// the folder first, so that a record reported durable is in a file that
// is in its folder; a failed folder fsync writes nothing and is tried
// again by the next synced Append.
func TestNewLogIsEnteredByItsFirstSync(t *testing.T) {
	for _, first := range []string{"append", "sync"} {
		t.Run(first, func(t *testing.T) {
			fsys := &faultfs.FS{}
			path := filepath.Join(t.TempDir(), "log.jsonl")
			l, _ := openLog(t, fsys, path)
			if n := fsys.Count(faultfs.Sync); n != 0 {
				t.Fatalf("opening a new log made %d fsyncs, want 0", n)
			}
			if err := l.Append([]byte(`{"n":0}`), false); err != nil {
				t.Fatal(err)
			}
			if n := fsys.Count(faultfs.Sync); n != 0 {
				t.Fatalf("an append without sync made %d fsyncs, want 0", n)
			}
			fsys.FailAt(faultfs.Sync, 1, faultfs.ErrIO) // the folder's
			var err error
			if first == "append" {
				err = l.Append([]byte(`{"n":1}`), true)
			} else {
				err = l.Sync()
			}
			if !errors.Is(err, faultfs.ErrIO) {
				t.Fatalf("first fsync with the folder's failing = %v, want %v", err, faultfs.ErrIO)
			}
			before := fsys.Count(faultfs.Sync)
			if err := l.Append([]byte(`{"n":2}`), true); err != nil {
				t.Fatal(err)
			}
			if n := fsys.Count(faultfs.Sync) - before; n != 2 {
				t.Errorf("the first synced append after a failed one made %d fsyncs, want 2 (the folder, the file)", n)
			}
			before = fsys.Count(faultfs.Sync)
			if err := l.Append([]byte(`{"n":3}`), true); err != nil {
				t.Fatal(err)
			}
			if n := fsys.Count(faultfs.Sync) - before; n != 1 {
				t.Errorf("a later synced append made %d fsyncs, want 1 (the file)", n)
			}
			want := "{\"n\":0}\n{\"n\":2}\n{\"n\":3}\n"
			if b, err := os.ReadFile(path); err != nil || string(b) != want {
				t.Errorf("the log holds %q (%v), want %q", b, err, want)
			}
		})
	}
}

// firstAppend appends {"n":1} to l, a log whose file is not made yet,
// wants that to make creates creations and syncs fsyncs in fsys (why
// says which), and closes l.
func firstAppend(t *testing.T, fsys *faultfs.FS, l *durable.Log, creates, syncs int, why string) {
	t.Helper()
	if err := l.Append([]byte(`{"n":1}`), true); err != nil {
		t.Fatal(err)
	}
	if c, s := fsys.Count(faultfs.Create), fsys.Count(faultfs.Sync); c != creates || s != syncs {
		t.Errorf("the first Append made %d creations and %d fsyncs, want %d and %d (%s)", c, s, creates, syncs, why)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenLogAtCreatesAtFirstAppend: OpenLogAt of a missing file makes
// none (an empty log, no descriptor); Sync and Close of it write nothing;
// its first Append creates the file, entered in its folder by the fsync.
func TestOpenLogAtCreatesAtFirstAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	none := func(line []byte, off int64) bool { return true }
	fsys := &faultfs.FS{}
	l, sc, err := durable.OpenLogAt(fsys, path, 0o640, 0, none)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatalf("Sync of a log not written: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) || sc.Torn != nil || fsys.Count(faultfs.Create)+fsys.Count(faultfs.Sync) != 0 {
		t.Fatalf("OpenLogAt of a missing file: %v, %d creations, %d fsyncs; want no file, none", err, fsys.Count(faultfs.Create), fsys.Count(faultfs.Sync))
	}
	firstAppend(t, fsys, l, 1, 2, "the folder, the file")
	if err := l.Append([]byte(`{"n":2}`), true); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Append after Close = %v, want os.ErrClosed", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "{\"n\":1}\n" {
		t.Errorf("the log holds %q (%v)", b, err)
	}
	// Never written: Close leaves no file, and Append then fails.
	other := filepath.Join(t.TempDir(), "other.jsonl")
	l, _, err = durable.OpenLogAt(nil, other, 0o640, 0, none)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]byte(`{"n":1}`), true); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Append after Close of a log never written = %v, want os.ErrClosed", err)
	}
	if _, err := os.Lstat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a log never written left a file: %v", err)
	}

	// In a folder not made yet (an idle desk's): the open makes no
	// folder; the first Append makes the folder, then the file.
	deep := filepath.Join(t.TempDir(), "desk", "log.jsonl")
	fsys = &faultfs.FS{}
	l, _, err = durable.OpenLogAt(fsys, deep, 0o640, 0, none)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Dir(deep)); !errors.Is(err, os.ErrNotExist) || fsys.Count(faultfs.Create) != 0 {
		t.Fatalf("OpenLogAt in a folder not made made it (%v, %d creations), want nothing", err, fsys.Count(faultfs.Create))
	}
	firstAppend(t, fsys, l, 2, 3, "in a folder not made: the folder, its parent; the file, the folder")
	if b, err := os.ReadFile(deep); err != nil || string(b) != "{\"n\":1}\n" {
		t.Errorf("the log holds %q (%v)", b, err)
	}
}
