package memory_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/memory/memorytest"
)

// TestSessionLogSize: Size is the file's length, after a create, appends
// and a reopen that mends a torn tail or adds a missing '\n'.
func TestSessionLogSize(t *testing.T) {
	f := newFolder(t)
	log, err := f.CreateSession(header("s1"))
	if err != nil {
		t.Fatal(err)
	}
	path := f.SessionPath("s1")
	check := func(what string, log *memory.SessionLog) {
		t.Helper()
		if got, want := log.Size(), int64(len(memorytest.ReadFile(t, path))); got != want {
			t.Errorf("%s: Size() = %d, want the file's length %d", what, got, want)
		}
	}
	check("created", log)
	for i := range 3 {
		if err := log.Append(message(i)); err != nil {
			t.Fatal(err)
		}
		check("appended", log)
	}
	log.Close()
	good := memorytest.ReadFile(t, path)
	for _, tail := range []string{`{"type":"message","te`, "", "\n\n"} {
		writeFile(t, path, good+tail)
		log, _, _, err := f.OpenSession("s1")
		if err != nil {
			t.Fatal(err)
		}
		check("reopened after "+strconv.Quote(tail), log)
		log.Close()
	}
	writeFile(t, path, good[:len(good)-1]) // the last line lacks its '\n'
	log, _, _, err = f.OpenSession("s1")
	if err != nil {
		t.Fatal(err)
	}
	check("reopened without the last '\\n'", log)
	log.Close()
}

// TestReadSessionTail: the records from an offset on, as ReadSession
// reads them; whether OpenSession would mend anything there; and an
// offset that is not where a line begins is refused, not misread.
func TestReadSessionTail(t *testing.T) {
	f := newFolder(t)
	good, want := goodSession(t, f, "s1")
	path := f.SessionPath("s1")
	lines := splitLines(good)
	second := int64(len(lines[0])) // where record 1 begins

	tests := []struct {
		name   string
		file   string
		offset int64
		ok     bool
		recs   []memory.Record
		clean  bool
	}{
		{"from the start", good, 0, true, want, true},
		{"from record 1", good, second, true, want[1:], true},
		{"at the end", good, int64(len(good)), true, nil, true},
		{"torn after", good + `{"type":"mess`, second, true, want[1:], false},
		{"no last newline", good[:len(good)-1], second, true, want[1:], false},
		{"past the end", good, int64(len(good)) + 1, false, nil, false},
		{"inside a line", good, second + 3, false, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, path, tt.file)
			tail, ok, err := f.ReadSessionTail("s1", tt.offset)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			sameRecords(t, tail.Records, tt.recs)
			if tail.Clean != tt.clean {
				t.Errorf("Clean = %v, want %v", tail.Clean, tt.clean)
			}
			if got := memorytest.ReadFile(t, path); got != tt.file {
				t.Errorf("ReadSessionTail changed the file")
			}
		})
	}
	if _, _, err := f.ReadSessionTail("nope", 0); err == nil {
		t.Error("ReadSessionTail of a missing session: no error")
	}
}

// TestOpenSessionLines: the same records as OpenSession, undecoded until
// asked, their types told without decoding; a torn tail is mended and
// reported as by OpenSession.
func TestOpenSessionLines(t *testing.T) {
	f := newFolder(t)
	good, want := goodSession(t, f, "s1")
	path := f.SessionPath("s1")
	tail := `{"type":"message","role":"assistant","te`
	writeFile(t, path, good+"not json\n"+good[len(splitLines(good)[0]):]+tail)
	log, lines, torn, err := f.OpenSessionLines("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if torn == nil || torn.Bytes != len(tail) {
		t.Errorf("torn = %+v, want the %d bytes of the torn tail", torn, len(tail))
	}
	if log.SkippedLines() != 1 {
		t.Errorf("SkippedLines() = %d, want 1", log.SkippedLines())
	}
	all := append(append([]memory.Record(nil), want...), want[1:]...)
	if lines.Len() != len(all) {
		t.Fatalf("Len() = %d, want %d", lines.Len(), len(all))
	}
	var got []memory.Record
	for i := range lines.Len() {
		rec, ok := lines.Record(i)
		if !ok {
			t.Fatalf("Record(%d) does not decode", i)
		}
		if !lines.Is(i, rec.Type) || lines.Is(i, rec.Type+"x") {
			t.Errorf("Is(%d, %q) is false, or Is(%d, %q) true", i, rec.Type, i, rec.Type+"x")
		}
		got = append(got, rec)
	}
	sameRecords(t, got, all)
	if log.Size() != int64(len(memorytest.ReadFile(t, path))) {
		t.Errorf("Size() = %d, want the mended file's length", log.Size())
	}
}

// splitLines splits s after each '\n'.
func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		if i < len(s) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// TestReadSessionTailOfAFIFO: a named pipe in a session file's place is
// refused at once, not waited on.
func TestReadSessionTailOfAFIFO(t *testing.T) {
	f := newFolder(t)
	goodSession(t, f, "s1")
	path := f.SessionPath("s1")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	faultfs.Mkfifo(t, path)
	if _, _, err := f.ReadSessionTail("s1", 0); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadSessionTail of a FIFO: %v, want a refusal", err)
	}
}
