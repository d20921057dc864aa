package memory_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
)

func header(id string) memory.Record {
	return memory.Record{Session: id, Date: "2025-01-02", At: utc("2025-01-02T03:30:00Z")}
}

func message(i int) memory.Record {
	return memory.Record{
		Type: memory.RecordMessage, At: utc("2025-01-02T04:00:00Z").Add(time.Duration(i) * time.Minute),
		Role: "assistant", Text: fmt.Sprintf("answer %d\nwith a second line", i),
		Model: "fast", Provider: "scripted", Scripted: true,
		Usage: &memory.Usage{InputTokens: 10 + i, OutputTokens: 5}, DurationMS: 12,
		Data: json.RawMessage(`{"tool": "quote", "args": {"sym": "NIFTY"}}`),
	}
}

// sameRecords compares records, times by instant and raw JSON by content.
// sameSession fails t unless session id of f reads as want.
func sameSession(t *testing.T, f *memory.Folder, id string, want []memory.Record) {
	t.Helper()
	recs, err := f.ReadSession(id)
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, recs, want)
}

func sameRecords(t *testing.T, got, want []memory.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d:\n%+v", len(got), len(want), got)
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.At.Equal(w.At) {
			t.Errorf("record %d: At %s, want %s", i, g.At, w.At)
		}
		if !jsonEqual(g.Data, w.Data) {
			t.Errorf("record %d: Data %s, want %s", i, g.Data, w.Data)
		}
		g.At, w.At, g.Data, w.Data = time.Time{}, time.Time{}, nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func TestCreateSessionAndAppendRoundTrip(t *testing.T) {
	f := newFolder(t)
	log, err := f.CreateSession(header("s-2025-01-02_1"))
	if err != nil {
		t.Fatal(err)
	}
	if log.ID() != "s-2025-01-02_1" || log.Path() != f.Path("sessions/s-2025-01-02_1.jsonl") {
		t.Errorf("ID, Path = %s, %s", log.ID(), log.Path())
	}
	want := []memory.Record{header("s-2025-01-02_1")}
	want[0].Type, want[0].Desk = memory.RecordHeader, "alpha"
	for i := range 3 {
		if err := log.Append(message(i)); err != nil {
			t.Fatal(err)
		}
		want = append(want, message(i))
	}
	// A zero At takes the folder's clock.
	ev := memory.Record{Type: memory.RecordEvent, Kind: "session.started"}
	if err := log.Append(ev); err != nil {
		t.Fatal(err)
	}
	ev.At = utc("2025-01-02T03:04:05.000000006Z")
	want = append(want, ev)
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := log.Append(message(9)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Append after Close = %v, want os.ErrClosed", err)
	}

	raw := memorytest.ReadFile(t, f.Path("sessions/s-2025-01-02_1.jsonl"))
	if n := strings.Count(raw, "\n"); n != len(want) || !strings.HasSuffix(raw, "\n") {
		t.Errorf("file has %d lines, want %d:\n%s", n, len(want), raw)
	}
	sameSession(t, f, "s-2025-01-02_1", want)

	log, recs, torn, err := f.OpenSession("s-2025-01-02_1")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if torn != nil || log.SkippedLines() != 0 {
		t.Errorf("clean file: torn %+v, skipped %d", torn, log.SkippedLines())
	}
	sameRecords(t, recs, want)
	if err := log.Append(message(5)); err != nil {
		t.Fatal(err)
	}
	sameSession(t, f, "s-2025-01-02_1", append(want, message(5)))
}

func TestCreateSessionRefuses(t *testing.T) {
	f := newFolder(t)
	log, err := f.CreateSession(header("dup"))
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Append(message(1)); err != nil {
		t.Fatal(err)
	}
	log.Close()
	before := memorytest.ReadFile(t, f.Path("sessions/dup.jsonl"))

	tests := []struct {
		name  string
		id    string
		exist bool
	}{
		{"existing id", "dup", true},
		{"empty id", "", false},
		{"slash", "a/b", false},
		{"dot dot", "..", false},
		{"space", "a b", false},
		{"too long", strings.Repeat("x", 81), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.CreateSession(header(tt.id))
			if err == nil {
				t.Fatal("want an error")
			}
			if tt.exist {
				if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), f.Path("sessions/dup.jsonl")) {
					t.Errorf("error %q: want fs.ErrExist naming the file", err)
				}
			}
		})
	}
	if got := memorytest.ReadFile(t, f.Path("sessions/dup.jsonl")); got != before {
		t.Errorf("existing session changed:\n%s", got)
	}
	log, err = f.CreateSession(header(strings.Repeat("x", 80)))
	if err != nil {
		t.Fatalf("80-character id: %v", err)
	}
	defer log.Close()
	if err := log.Append(memory.Record{Text: "no type"}); err == nil {
		t.Error("Append without a type: want an error")
	}
}

func TestOpenSessionMissing(t *testing.T) {
	f := newFolder(t)
	if _, _, _, err := f.OpenSession("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenSession = %v, want fs.ErrNotExist", err)
	}
	if _, err := f.ReadSession("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadSession = %v, want fs.ErrNotExist", err)
	}
}

// goodSession writes a header and two messages with CreateSession/Append
// and returns the file's content and its records.
func goodSession(t *testing.T, f *memory.Folder, id string) (string, []memory.Record) {
	t.Helper()
	log, err := f.CreateSession(header(id))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := log.Append(message(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := f.ReadSession(id)
	if err != nil || len(recs) != 3 {
		t.Fatalf("ReadSession = %d records, %v", len(recs), err)
	}
	return memorytest.ReadFile(t, f.Path("sessions/"+id+".jsonl")), recs
}

func TestOpenSessionTornTail(t *testing.T) {
	full, err := json.Marshal(message(7))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tail string // appended to a good file of 3 records
	}{
		{"half a record", string(full[:len(full)/2])},
		{"one byte", "{"},
		{"all but the closing brace", string(full[:len(full)-1])},
		{"not JSON, with newline", "garbage\n"},
		{"JSON without a type, with newline", "{\"text\":\"x\"}\n"},
		{"torn then blank lines", string(full[:10]) + "\n\n  \n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFolder(t)
			good, want := goodSession(t, f, "s1")
			path := f.Path("sessions/s1.jsonl")
			writeFile(t, path, good+tt.tail)

			log, recs, torn, err := f.OpenSession("s1")
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, recs, want)
			if torn == nil {
				t.Fatal("torn = nil, want the damaged tail")
			}
			wantSaved := path + ".torn-" + strconv.Itoa(len(good))
			if torn.Path != path || torn.Offset != int64(len(good)) || torn.Bytes != len(tt.tail) || torn.SavedTo != wantSaved {
				t.Errorf("torn = %+v, want offset %d, %d bytes, saved to %s", *torn, len(good), len(tt.tail), wantSaved)
			}
			if got := memorytest.ReadFile(t, wantSaved); got != tt.tail {
				t.Errorf("saved tail = %q, want %q", got, tt.tail)
			}
			if got := memorytest.ReadFile(t, path); got != good {
				t.Errorf("file not truncated to the good part:\n%q", got)
			}
			if log.SkippedLines() != 0 {
				t.Errorf("SkippedLines = %d", log.SkippedLines())
			}
			log.Close()

			// The next open finds a clean file.
			log, recs, torn, err = f.OpenSession("s1")
			if err != nil {
				t.Fatal(err)
			}
			if torn != nil {
				t.Errorf("second open: torn = %+v", *torn)
			}
			sameRecords(t, recs, want)
			if err := log.Append(message(3)); err != nil {
				t.Fatal(err)
			}
			log.Close()
			raw := memorytest.ReadFile(t, path)
			for i, line := range strings.Split(strings.TrimSuffix(raw, "\n"), "\n") {
				var r memory.Record
				if err := json.Unmarshal([]byte(line), &r); err != nil || r.Type == "" {
					t.Errorf("line %d does not parse: %q", i+1, line)
				}
			}
			sameSession(t, f, "s1", append(want, message(3)))
			if tmp := tempFiles(t, f.Dir()); len(tmp) > 0 {
				t.Errorf("temp files left: %v", tmp)
			}
			// The torn file is not a session.
			if ids, err := f.SessionIDs(); err != nil || !reflect.DeepEqual(ids, []string{"s1"}) {
				t.Errorf("SessionIDs = %v, %v", ids, err)
			}
		})
	}
}

// A complete, valid record that only lacks its '\n' (the crash came
// between the JSON and the newline, or the file was edited by hand) is a
// good record: OpenSession keeps it and adds the newline.
func TestOpenSessionCompleteLastLineWithoutNewline(t *testing.T) {
	f := newFolder(t)
	good, want := goodSession(t, f, "s1")
	full, err := json.Marshal(message(7))
	if err != nil {
		t.Fatal(err)
	}
	path := f.Path("sessions/s1.jsonl")
	writeFile(t, path, good+string(full))
	want = append(want, message(7))

	// ReadSession keeps it too, without touching the file.
	sameSession(t, f, "s1", want)
	if got := memorytest.ReadFile(t, path); got != good+string(full) {
		t.Error("ReadSession changed the file")
	}

	log, recs, torn, err := f.OpenSession("s1")
	if err != nil {
		t.Fatal(err)
	}
	if torn != nil {
		t.Errorf("torn = %+v, want nil", *torn)
	}
	sameRecords(t, recs, want)
	if got := memorytest.ReadFile(t, path); got != good+string(full)+"\n" {
		t.Errorf("newline not added: %q", got[len(good):])
	}
	if err := log.Append(message(8)); err != nil {
		t.Fatal(err)
	}
	log.Close()
	sameSession(t, f, "s1", append(want, message(8)))
}

func TestOpenSessionSkipsBadMiddleLines(t *testing.T) {
	f := newFolder(t)
	good, want := goodSession(t, f, "s1")
	lines := strings.SplitAfter(good, "\n")
	// header, junk, message 0, half a record, blank, message 1
	damaged := lines[0] + "junk\n" + lines[1] + lines[2][:20] + "\n\n" + lines[2]
	path := f.Path("sessions/s1.jsonl")
	writeFile(t, path, damaged)

	log, recs, torn, err := f.OpenSession("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if torn != nil {
		t.Errorf("torn = %+v, want nil", *torn)
	}
	if log.SkippedLines() != 2 {
		t.Errorf("SkippedLines = %d, want 2", log.SkippedLines())
	}
	sameRecords(t, recs, want)
	if got := memorytest.ReadFile(t, path); got != damaged {
		t.Error("OpenSession changed a file whose last line is good")
	}
}

func TestTornTailSavedTwiceKeepsBoth(t *testing.T) {
	f := newFolder(t)
	good, _ := goodSession(t, f, "s1")
	path := f.Path("sessions/s1.jsonl")
	for i, tail := range []string{`{"type":"mess`, `{"type":"eve`, `{"type":"eve`} {
		writeFile(t, path, good+tail)
		log, _, torn, err := f.OpenSession("s1")
		if err != nil {
			t.Fatal(err)
		}
		log.Close()
		if torn == nil {
			t.Fatalf("round %d: torn = nil", i)
		}
		want := path + ".torn-" + strconv.Itoa(len(good))
		if i == 1 || i == 2 { // a different fragment at the same offset; the third is the same as the second
			want += "-2"
		}
		if torn.SavedTo != want || memorytest.ReadFile(t, torn.SavedTo) != tail {
			t.Errorf("round %d: saved to %s, want %s", i, torn.SavedTo, want)
		}
	}
}

func TestSessionIDs(t *testing.T) {
	f := newFolder(t)
	ids := []string{"c", "a", "b"}
	for _, id := range ids {
		l, err := f.CreateSession(header(id))
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	// Order by mod time: b oldest, then a and c at the same time (by name).
	base := utc("2025-01-02T00:00:00Z")
	times := map[string]time.Time{"b": base, "a": base.Add(time.Hour), "c": base.Add(time.Hour)}
	for id, mt := range times {
		if err := os.Chtimes(f.Path("sessions/"+id+".jsonl"), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	for _, junk := range []string{"x.json", "bad id.jsonl", ".hidden.jsonl", "a.jsonl.torn-10", ".a.jsonl.tmp-1"} {
		writeFile(t, filepath.Join(f.Dir(), "sessions", junk), "{}\n")
	}
	got, err := f.SessionIDs()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b", "a", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SessionIDs = %v, want %v", got, want)
	}
}

func TestAppendConcurrent(t *testing.T) {
	f := newFolder(t)
	log, err := f.CreateSession(header("busy"))
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r := message(i)
				r.Text = fmt.Sprintf("writer %d record %d %s", w, i, strings.Repeat("x", 5000))
				if err := log.Append(r); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	log.Close()
	_, recs, torn, err := f.OpenSession("busy")
	if err != nil || torn != nil {
		t.Fatalf("OpenSession: torn %v, err %v", torn, err)
	}
	if len(recs) != 1+writers*each {
		t.Errorf("got %d records, want %d", len(recs), 1+writers*each)
	}
}

func BenchmarkAppend(b *testing.B) {
	f := newFolder(b)
	log, err := f.CreateSession(header("bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	r := message(1)
	n := 0
	for b.Loop() {
		if err := log.Append(r); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}

// TestRecordCalls: a record's tool calls decode into memory.ToolCall, the
// one shape of them; a record without any has none, and undecodable ones
// are said so.
func TestRecordCalls(t *testing.T) {
	r := memory.Record{ToolCalls: []byte(`[{"id":"c1","name":"skill_read","arguments":{"name":"tape"}}]`)}
	calls, ok := r.Calls()
	if !ok || len(calls) != 1 || calls[0].ID != "c1" || calls[0].Name != "skill_read" || string(calls[0].Arguments) != `{"name":"tape"}` {
		t.Errorf("Calls() = %+v, %v", calls, ok)
	}
	if calls, ok := (memory.Record{}).Calls(); !ok || calls != nil {
		t.Errorf("no tool calls: Calls() = %+v, %v; want none, ok", calls, ok)
	}
	if _, ok := (memory.Record{ToolCalls: []byte(`{"not": "a list"}`)}).Calls(); ok {
		t.Error("undecodable tool calls: Calls() says ok")
	}
}
