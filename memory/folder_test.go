package memory_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
)

func TestOpenFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "desks", "beta")
	f, err := memory.OpenFolder(dir, "beta", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if f.Dir() != dir || f.Desk() != "beta" || f.Path("notes/x") != filepath.Join(dir, "notes", "x") {
		t.Errorf("Dir/Desk/Path = %s, %s, %s", f.Dir(), f.Desk(), f.Path("notes/x"))
	}
	// The open makes the folder; its folders are made by their first
	// write, not by the open.
	if got, err := os.ReadDir(dir); err != nil || len(got) != 0 {
		t.Errorf("folder holds %v (%v), want nothing", got, err)
	}
	// Opening again is fine.
	if _, err := memory.OpenFolder(dir, "beta", time.Now); err != nil {
		t.Fatal(err)
	}
	if _, err := memory.OpenFolder(dir, "beta", nil); err == nil {
		t.Error("OpenFolder with a nil clock: want an error")
	}
}

func TestWriteMemoryKeepsHistory(t *testing.T) {
	f := newFolder(t)
	steps := []struct {
		text     string
		wantHist string // "" when there was no previous Memory.md
		histText string
	}{
		{"# Lessons\n- one\n", "", ""},
		{"# Lessons\n- one\n- two\n", "history/memory/20250102T030405.000000006Z.md", "# Lessons\n- one\n"},
		{"# Lessons\n- three\n", "history/memory/20250102T030406.000000006Z.md", "# Lessons\n- one\n- two\n"},
	}
	got, err := f.ReadMemory()
	if err != nil || got != "" {
		t.Fatalf("ReadMemory on a new folder = %q, %v", got, err)
	}
	for i, s := range steps {
		hist, err := f.WriteMemory(s.text)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want := ""
		if s.wantHist != "" {
			want = f.Path(s.wantHist)
		}
		if hist != want {
			t.Errorf("step %d: history path = %q, want %q", i, hist, want)
		}
		if hist != "" {
			if got := memorytest.ReadFile(t, hist); got != s.histText {
				t.Errorf("step %d: history holds %q, want %q", i, got, s.histText)
			}
		}
		if got, err := f.ReadMemory(); err != nil || got != s.text {
			t.Errorf("step %d: ReadMemory = %q, %v; want %q", i, got, err, s.text)
		}
	}
	if tmp := tempFiles(t, f.Dir()); len(tmp) > 0 {
		t.Errorf("temp files left: %v", tmp)
	}
}

func TestWriteMemorySameInstantKeepsBoth(t *testing.T) {
	dir := t.TempDir()
	fixed := utc("2025-01-02T03:04:05Z")
	f, err := memory.OpenFolder(dir, "alpha", func() time.Time { return fixed })
	if err != nil {
		t.Fatal(err)
	}
	var hists []string
	for _, text := range []string{"v1", "v2", "v3", "v4"} {
		h, err := f.WriteMemory(text)
		if err != nil {
			t.Fatal(err)
		}
		hists = append(hists, h)
	}
	want := []string{"", "20250102T030405.000000000Z.md", "20250102T030405.000000000Z-2.md", "20250102T030405.000000000Z-3.md"}
	for i := range want {
		if want[i] != "" {
			want[i] = f.Path(filepath.Join("history", "memory", want[i]))
		}
	}
	if !reflect.DeepEqual(hists, want) {
		t.Fatalf("history paths = %v, want %v", hists, want)
	}
	for i, text := range []string{"v1", "v2", "v3"} {
		if got := memorytest.ReadFile(t, hists[i+1]); got != text {
			t.Errorf("%s holds %q, want %q", hists[i+1], got, text)
		}
	}
}

func TestHistoryCopyIsIdempotentAcrossACrash(t *testing.T) {
	tests := []struct {
		name    string
		replace func(f *memory.Folder, old, text string) (string, error)
	}{
		{"WriteMemory", func(f *memory.Folder, _, text string) (string, error) { return f.WriteMemory(text) }},
		{"ReplaceMemory", func(f *memory.Folder, old, text string) (string, error) { return f.ReplaceMemory(old, text) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFolder(t) // history stamps 03:04:05, 03:04:06, ... (.000000006)
			if _, err := f.WriteMemory("A\n"); err != nil {
				t.Fatal(err)
			}
			// A, then B, then A again, then C: the older copy of A is not
			// the newest history file, so A is kept once more.
			prev := "A\n"
			for _, text := range []string{"B\n", "A\n", "C\n"} {
				if _, err := tt.replace(f, prev, text); err != nil {
					t.Fatal(err)
				}
				prev = text
			}
			// A crash between the history copy and the rename leaves a copy
			// of C under history/ and C still in Memory.md.
			crashCopy := f.Path("history/memory/20250102T030407.500000000Z.md")
			writeFile(t, crashCopy, "C\n")

			hist, err := tt.replace(f, "C\n", "D\n")
			if err != nil {
				t.Fatal(err)
			}
			if hist != crashCopy {
				t.Errorf("history path after the crash = %q, want the crash's copy %q reused", hist, crashCopy)
			}
			if got, _ := f.ReadMemory(); got != "D\n" {
				t.Errorf("Memory.md = %q, want %q", got, "D\n")
			}
			versions, err := f.MemoryHistory()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range versions {
				text, err := f.ReadMemoryVersion(v.ID)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, v.ID+" "+strings.TrimSpace(text))
			}
			want := []string{
				"20250102T030405.000000006Z A",
				"20250102T030406.000000006Z B",
				"20250102T030407.000000006Z A",
				"20250102T030407.500000000Z C",
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("history/memory = %q, want %q", got, want)
			}
		})
	}
}

func TestNotes(t *testing.T) {
	f := newFolder(t)
	appends := []struct {
		date, line string
		wantErr    bool
	}{
		{"2025-01-03", "bought NIFTY calls", false},
		{"2025-01-03", "sold half\n\n", false},
		{"2025-01-01", "first day\r\n", false},
		{"2024-12-31", "year end", false},
		{"2025-01-03", "", true},
		{"2025-01-03", "\n", true},
		{"2025-01-03", "   ", true},
	}
	for _, a := range appends {
		err := f.AppendNote(date(a.date), a.line)
		if (err != nil) != a.wantErr {
			t.Errorf("AppendNote(%s, %q) error = %v, want error %v", a.date, a.line, err, a.wantErr)
		}
	}
	if err := f.AppendNote(memory.Date{Year: 2025, Month: 2, Day: 30}, "x"); err == nil {
		t.Error("AppendNote on 2025-02-30: want an error")
	}
	text, ok, err := f.ReadNotes(date("2025-01-03"))
	if err != nil || !ok || text != "bought NIFTY calls\nsold half\n" {
		t.Errorf("ReadNotes = %q, %v, %v", text, ok, err)
	}
	if text, ok, err := f.ReadNotes(date("2025-01-02")); err != nil || ok || text != "" {
		t.Errorf("ReadNotes of a day without notes = %q, %v, %v", text, ok, err)
	}

	// Junk that NoteDates must ignore.
	for _, name := range []string{"README.md", "2025-01-5.md", "2025-13-01.md", "2025-01-04.txt", "2025-01-04.md~", ".2025-01-04.md.tmp-1"} {
		writeFile(t, f.Path(filepath.Join("notes", name)), "junk\n")
	}
	if err := os.Mkdir(f.Path("notes/2025-01-06.md"), 0o750); err != nil {
		t.Fatal(err)
	}
	dates, err := f.NoteDates()
	if err != nil {
		t.Fatal(err)
	}
	want := []memory.Date{date("2024-12-31"), date("2025-01-01"), date("2025-01-03")}
	if !reflect.DeepEqual(dates, want) {
		t.Errorf("NoteDates = %v, want %v", dates, want)
	}
}

func TestAppendNoteAfterHandEditWithoutNewline(t *testing.T) {
	f := newFolder(t)
	writeFile(t, f.Path("notes/2025-01-03.md"), "typed by hand")
	if err := f.AppendNote(date("2025-01-03"), "from the desk"); err != nil {
		t.Fatal(err)
	}
	if got := memorytest.ReadFile(t, f.Path("notes/2025-01-03.md")); got != "typed by hand\nfrom the desk\n" {
		t.Errorf("notes = %q", got)
	}
}

func TestSummaries(t *testing.T) {
	f := newFolder(t)
	if _, ok, err := f.LatestSummary(); err != nil || ok {
		t.Fatalf("LatestSummary with none = %v, %v", ok, err)
	}
	writes := []struct{ date, text string }{
		{"2025-01-02", "day two"},
		{"2025-01-10", "day ten"},
		{"2024-12-31", "year end"},
		{"2025-01-09", "day nine"},
	}
	for _, w := range writes {
		path, err := f.WriteSummary(date(w.date), w.text)
		if err != nil {
			t.Fatal(err)
		}
		if want := f.Path("summaries/" + w.date + ".md"); path != want {
			t.Errorf("WriteSummary path = %s, want %s", path, want)
		}
	}
	// Junk that sorts after the real ones must be ignored.
	writeFile(t, f.Path("summaries/9999-notes.md"), "junk")
	writeFile(t, f.Path("summaries/2026-01-01.md.bak"), "junk")

	s, ok, err := f.LatestSummary()
	if err != nil || !ok {
		t.Fatalf("LatestSummary = %v, %v", ok, err)
	}
	want := memory.Summary{Date: date("2025-01-10"), Text: "day ten", Path: f.Path("summaries/2025-01-10.md")}
	if s != want {
		t.Errorf("LatestSummary = %+v, want %+v", s, want)
	}

	// Rewriting keeps the old text under history/summaries/.
	if _, err := f.WriteSummary(date("2025-01-10"), "day ten, again"); err != nil {
		t.Fatal(err)
	}
	s, ok, err = f.ReadSummary(date("2025-01-10"))
	if err != nil || !ok || s.Text != "day ten, again" {
		t.Errorf("ReadSummary = %+v, %v, %v", s, ok, err)
	}
	hist := memorytest.DirNames(t, f.Path("history/summaries/2025-01-10"))
	if len(hist) != 1 || memorytest.ReadFile(t, f.Path("history/summaries/2025-01-10/"+hist[0])) != "day ten" {
		t.Errorf("history of 2025-01-10 = %v", hist)
	}
	if _, ok, err := f.ReadSummary(date("2025-01-03")); err != nil || ok {
		t.Errorf("ReadSummary of a day without one = %v, %v", ok, err)
	}
	dates, err := f.SummaryDates()
	if err != nil || len(dates) != 4 {
		t.Errorf("SummaryDates = %v, %v", dates, err)
	}
}

type state struct {
	Session string      `json:"session"`
	Date    memory.Date `json:"date"`
	Count   int         `json:"count"`
}

func TestJSONRoundTrip(t *testing.T) {
	f := newFolder(t)
	var got state
	if ok, err := f.ReadJSON("state.json", &got); ok || err != nil {
		t.Fatalf("ReadJSON of a missing file = %v, %v", ok, err)
	}
	tests := []struct {
		name string
		in   state
	}{
		{"state.json", state{"s1", date("2025-01-02"), 1}},
		{"state.json", state{"s2", date("2025-01-03"), 2}},
		{"ledger/rollover.json", state{"s3", date("2025-01-04"), 3}},
	}
	for _, tt := range tests {
		if err := f.WriteJSON(tt.name, tt.in); err != nil {
			t.Fatal(err)
		}
		var out state
		ok, err := f.ReadJSON(tt.name, &out)
		if err != nil || !ok || out != tt.in {
			t.Errorf("ReadJSON(%s) = %+v, %v, %v; want %+v", tt.name, out, ok, err, tt.in)
		}
		raw := memorytest.ReadFile(t, f.Path(tt.name))
		if !strings.HasPrefix(raw, "{\n  \"session\"") || !strings.HasSuffix(raw, "}\n") {
			t.Errorf("%s is not indented JSON: %q", tt.name, raw)
		}
	}
	for _, bad := range []string{"", "../escape.json", "/abs.json"} {
		if err := f.WriteJSON(bad, 1); err == nil {
			t.Errorf("WriteJSON(%q): want an error", bad)
		}
		if _, err := f.ReadJSON(bad, new(int)); err == nil {
			t.Errorf("ReadJSON(%q): want an error", bad)
		}
	}
	if tmp := tempFiles(t, f.Dir()); len(tmp) > 0 {
		t.Errorf("temp files left: %v", tmp)
	}
}

func TestReadJSONCorrupt(t *testing.T) {
	corrupt := []struct {
		content string
		kept    bool // WriteJSON keeps a copy: only of files that are not JSON at all
	}{
		{`{"session": "s1", "count": `, true},
		{``, true},
		{`not json`, true},
		{`{} {}`, true},
		{`{"count": "seven"}`, false},
	}
	for _, c := range corrupt {
		content := c.content
		f := newFolder(t)
		path := f.Path("state.json")
		writeFile(t, path, content)
		var out state
		ok, err := f.ReadJSON("state.json", &out)
		if err == nil || ok {
			t.Errorf("ReadJSON of %q = %v, %v; want an error", content, ok, err)
			continue
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not name %s", err, path)
		}
		if got := memorytest.ReadFile(t, path); got != content {
			t.Errorf("file changed to %q", got)
		}
		// Overwriting it keeps the corrupt version in history.
		if err := f.WriteJSON("state.json", state{Count: 1}); err != nil {
			t.Fatal(err)
		}
		if !c.kept {
			if _, err := os.Stat(f.Path("history/state")); err == nil {
				t.Errorf("valid JSON %q was kept in history", content)
			}
			continue
		}
		kept := memorytest.DirNames(t, f.Path("history/state/state.json"))
		if len(kept) != 1 || memorytest.ReadFile(t, f.Path("history/state/state.json/"+kept[0])) != content {
			t.Errorf("corrupt file not kept: %v", kept)
		}
	}
}

func TestWriteJSONUnencodable(t *testing.T) {
	f := newFolder(t)
	writeFile(t, f.Path("state.json"), `{"count":1}`)
	if err := f.WriteJSON("state.json", map[string]any{"c": make(chan int)}); err == nil {
		t.Fatal("want an error")
	}
	if got := memorytest.ReadFile(t, f.Path("state.json")); got != `{"count":1}` {
		t.Errorf("file changed to %q", got)
	}
	var v json.RawMessage
	if ok, err := f.ReadJSON("state.json", &v); !ok || err != nil {
		t.Errorf("ReadJSON = %v, %v", ok, err)
	}
}
