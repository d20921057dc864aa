package durable_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory/durable"
)

// scanBoth scans data with ScanRecords, with ScanFile (from 0) and with
// EachRecord, and fails unless they find the same records (at the same
// offsets, where they say), the same skipped lines and the same end.
func scanBoth(t *testing.T, data []byte) {
	t.Helper()
	want, wantEnd, wantTerm := durable.ScanRecords(data, isObject)
	var each []string
	eachEnd, eachTerm := durable.EachRecord(data, func(line []byte) bool {
		if !isObject(line) {
			return false
		}
		each = append(each, string(line))
		return true
	})
	if eachEnd != wantEnd || eachTerm != wantTerm || len(each) != len(want.Records) {
		t.Fatalf("EachRecord: end %d, terminated %v, %d records; want %d, %v, %d", eachEnd, eachTerm, len(each), wantEnd, wantTerm, len(want.Records))
	}
	for i := range each {
		if each[i] != string(want.Records[i]) {
			t.Fatalf("EachRecord's record %d = %q, want %q", i, each[i], want.Records[i])
		}
	}
	var recs []string
	var offs []int64
	got, end, size, term, err := durable.ScanFile(bytes.NewReader(data), 0, func(line []byte, off int64) bool {
		if !isObject(line) {
			return false
		}
		recs = append(recs, string(line))
		offs = append(offs, off)
		return true
	})
	if err != nil {
		t.Fatalf("ScanFile: %v", err)
	}
	if end != wantEnd || term != wantTerm || size != int64(len(data)) {
		t.Fatalf("end, terminated, size = %d, %v, %d; want %d, %v, %d", end, term, size, wantEnd, wantTerm, len(data))
	}
	if got.Records != nil || got.Offsets != nil {
		t.Fatalf("ScanFile kept its records")
	}
	if !reflect.DeepEqual(got.Skipped, want.Skipped) {
		t.Fatalf("Skipped = %v, want %v", got.Skipped, want.Skipped)
	}
	if len(recs) != len(want.Records) {
		t.Fatalf("%d records, want %d", len(recs), len(want.Records))
	}
	for i := range recs {
		if recs[i] != string(want.Records[i]) || offs[i] != want.Offsets[i] {
			t.Fatalf("record %d = %q at %d, want %q at %d", i, recs[i], offs[i], want.Records[i], want.Offsets[i])
		}
	}
}

// FuzzScanFile: reading a file in chunks finds what reading it whole does.
func FuzzScanFile(f *testing.F) {
	for _, s := range []string{"", "\n", `{"a":1}`, "{\"a\":1}\n{\"b\"\n{\"c\":2}\n", "x\n{\"a\":1}\n  \n", "{\"a\":{\"b\":1}\ny", "{\"x\":{\"a\":1}\n", "\v"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { scanBoth(t, data) })
}

// TestScanFileLongLines: lines longer than a chunk, and lines across the
// chunks' edges, are read whole.
func TestScanFileLongLines(t *testing.T) {
	var b bytes.Buffer
	for i := range 40 {
		b.WriteString(`{"k":"` + strings.Repeat("x", i*17_003) + `"}` + "\n")
		if i%7 == 3 {
			b.WriteString("not a record\n")
		}
	}
	b.WriteString(`{"k":"` + strings.Repeat("y", 600<<10) + `"}` + "\n")
	b.WriteString(`{"torn":`)
	scanBoth(t, b.Bytes())
}

// TestOpenLogAt: it reads only from its offset on, reports the damage of
// that part at its offsets in the file, sets a torn tail aside as OpenLog
// does, and refuses a file shorter than its offset.
func TestOpenLogAt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	head := "{\"a\":1}\nnot read\n"
	tail := "{\"b\":2}\nbad\n{\"c\":3}\n{\"torn\":"
	if err := os.WriteFile(path, []byte(head+tail), 0o640); err != nil {
		t.Fatal(err)
	}
	var seen []int64
	l, sc, err := durable.OpenLogAt(nil, path, 0o640, int64(len(head)), func(line []byte, off int64) bool {
		if !isObject(line) {
			return false
		}
		seen = append(seen, off)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	h := int64(len(head))
	if want := []int64{h, h + 8 + 4}; !reflect.DeepEqual(seen, want) {
		t.Fatalf("records at %v, want %v", seen, want)
	}
	if want := []durable.Skipped{{Offset: h + 8, Bytes: 3}}; !reflect.DeepEqual(sc.Skipped, want) {
		t.Fatalf("Skipped = %v, want %v", sc.Skipped, want)
	}
	if sc.Torn == nil || sc.Torn.Offset != h+20 || sc.Torn.Bytes != len(`{"torn":`) {
		t.Fatalf("Torn = %+v", sc.Torn)
	}
	if err := l.Append([]byte(`{"d":4}`), true); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	b, _ := os.ReadFile(path)
	if want := head + "{\"b\":2}\nbad\n{\"c\":3}\n{\"d\":4}\n"; string(b) != want {
		t.Fatalf("file = %q, want %q", b, want)
	}
	if _, _, err := durable.OpenLogAt(nil, path, 0o640, int64(len(b))+1, func([]byte, int64) bool { return true }); !errors.Is(err, durable.ErrShort) {
		t.Fatalf("OpenLogAt past the end: %v, want ErrShort", err)
	}
}
