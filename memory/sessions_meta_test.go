package memory_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
)

// metaSession creates session id of trading date day with parent, starting
// at start, and appends recs (their At relative to start when zero).
func metaSession(t *testing.T, f *memory.Folder, id, day, parent string, start time.Time, recs ...memory.Record) {
	t.Helper()
	log, err := f.CreateSession(memory.Record{Session: id, Date: day, Parent: parent, At: start})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for i, r := range recs {
		if r.At.IsZero() {
			r.At = start.Add(time.Duration(i+1) * time.Second)
		}
		if err := log.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

func metaUser(text string) memory.Record {
	return memory.Record{Type: memory.RecordMessage, Role: "user", Text: text, Trigger: "t"}
}

func metaAnswer(text string, in, out int) memory.Record {
	return memory.Record{Type: memory.RecordMessage, Role: "assistant", Text: text, Trigger: "t",
		Model: "offline", Provider: "scripted", Scripted: true, Usage: &memory.Usage{InputTokens: in, OutputTokens: out}}
}

func metaWriteJSON(t *testing.T, f *memory.Folder, name string, v any) {
	t.Helper()
	if err := f.WriteJSON(name, v); err != nil {
		t.Fatal(err)
	}
}

func TestListSessions(t *testing.T) {
	f := newFolder(t)
	day1 := utc("2026-03-01T04:00:00Z")
	call := memory.Record{Type: memory.RecordMessage, Role: "assistant", Trigger: "t", Model: "offline",
		ToolCalls: json.RawMessage(`[{"id":"c1","name":"note","arguments":{"text":"x"}}]`), Usage: &memory.Usage{InputTokens: 7, OutputTokens: 3}}
	metaSession(t, f, "s1", "2026-03-01", "", day1,
		metaUser("Check the tape."),
		call,
		memory.Record{Type: memory.RecordTool, Role: "tool", Trigger: "t", ToolCallID: "c1", ToolName: "note", Text: "ok"},
		metaAnswer("Done.", 20, 5),
		memory.Record{Type: memory.RecordMessage, Role: "user", Text: "flush", Trigger: "f", Silent: true},
		memory.Record{Type: memory.RecordMessage, Role: "assistant", Text: "NO_REPLY", Trigger: "f", Silent: true, Usage: &memory.Usage{InputTokens: 1, OutputTokens: 1}},
		memory.Record{Type: memory.RecordCheckpoint, Text: "checkpoint"},
		metaUser("Second."),
		metaAnswer("Two.", 30, 6),
		memory.Record{Type: memory.RecordEvent, Kind: "summary", Text: "A good day.", Usage: &memory.Usage{InputTokens: 100, OutputTokens: 10}},
	)
	metaSession(t, f, "s2", "2026-03-02", "s1", day1.Add(24*time.Hour),
		metaUser("[This is the first message of a new session. Summary of your previous session, from 2026-03-01:]\nA good day.\n"+
			"[End of the summary. Your lasting lessons are in Memory.md. The message follows.]\n\nOpen."),
		metaAnswer("Opened.", 2, 2),
	)
	metaSession(t, f, "s3", "2026-03-03", "s2", day1.Add(48*time.Hour))
	metaSession(t, f, "stray", "2026-02-28", "", day1.Add(-24*time.Hour), metaUser("Lost."))
	metaWriteJSON(t, f, "state.json", map[string]any{"session": "s3", "trading_date": "2026-03-03", "parent": "s2"})
	metaWriteJSON(t, f, "rollover.json", map[string]any{"session": "s2", "trading_date": "2026-03-02", "degraded": true, "done": true, "new_session": "s3"})

	got, err := f.ListSessions()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id, date, parent, first  string
		turns, msgs, checkpoints int
		in, out, tokens          int64
		state                    memory.SessionState
		rolled, degraded         bool
	}
	want := []row{
		{"stray", "2026-02-28", "", "Lost.", 0, 1, 0, 0, 0, 0, memory.SessionInactive, false, false},
		{"s1", "2026-03-01", "", "Check the tape.", 2, 8, 1, 158, 25, 183, memory.SessionRolledOver, true, false},
		{"s2", "2026-03-02", "s1", "[This is the first message", 1, 2, 0, 2, 2, 4, memory.SessionDegraded, true, true},
		{"s3", "2026-03-03", "s2", "", 0, 0, 0, 0, 0, 0, memory.SessionActive, false, false},
	}
	if len(got) != len(want) {
		t.Fatalf("ListSessions() = %d sessions, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		r := row{g.ID, g.Date.String(), g.Parent, g.FirstUserText, g.Turns, g.Messages, g.Checkpoints,
			g.InputTokens, g.OutputTokens, g.Tokens, g.State, g.RolledOver, g.Degraded}
		if !strings.HasPrefix(r.first, w.first) || (w.first == "" && r.first != "") {
			t.Errorf("session %d %s: first user text %q, want it to start with %q", i, g.ID, r.first, w.first)
		}
		r.first = w.first
		if r != w {
			t.Errorf("session %d:\n got %+v\nwant %+v", i, r, w)
		}
	}
	if !got[1].Scripted || got[3].Scripted {
		t.Errorf("Scripted = %v, %v; want true for s1, false for s3", got[1].Scripted, got[3].Scripted)
	}
	if !got[1].Started.Equal(day1) || !got[1].Updated.Equal(day1.Add(10*time.Second)) {
		t.Errorf("s1 started %s, updated %s; want %s and 10s later", got[1].Started, got[1].Updated, day1)
	}
}

func TestListSessionsDegradedSummaryFile(t *testing.T) {
	tests := []struct {
		name         string
		summary      string
		summaryEvent bool
		want         memory.SessionState
	}{
		{"degraded summary file", "[Degraded summary: the model could not summarise this session (boom).]\n\n- a\n", false, memory.SessionDegraded},
		{"good summary file", "A calm day.\n", false, memory.SessionRolledOver},
		{"summary event beats the file", "[Degraded summary: later manual rollover]\n", true, memory.SessionRolledOver},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFolder(t)
			start := utc("2026-03-01T04:00:00Z")
			recs := []memory.Record{metaUser("Hello."), metaAnswer("Hi.", 1, 1)}
			if tt.summaryEvent {
				recs = append(recs, memory.Record{Type: memory.RecordEvent, Kind: "summary", Text: "A calm day."})
			}
			metaSession(t, f, "old", "2026-03-01", "", start, recs...)
			metaSession(t, f, "new", "2026-03-02", "old", start.Add(24*time.Hour))
			metaWriteJSON(t, f, "state.json", map[string]any{"session": "new"})
			if _, err := f.WriteSummary(memory.Date{Year: 2026, Month: 3, Day: 1}, tt.summary); err != nil {
				t.Fatal(err)
			}
			info, err := f.SessionInfo("old")
			if err != nil {
				t.Fatal(err)
			}
			if info.State != tt.want {
				t.Errorf("SessionInfo(old).State = %q, want %q", info.State, tt.want)
			}
		})
	}
}

func TestListSessionsRolledOverByJournal(t *testing.T) {
	f := newFolder(t)
	metaSession(t, f, "only", "2026-03-01", "", utc("2026-03-01T04:00:00Z"))
	metaWriteJSON(t, f, "rollover.json", map[string]any{"session": "only", "done": true, "new_session": "gone"})
	info, err := f.SessionInfo("only")
	if err != nil {
		t.Fatal(err)
	}
	if info.State != memory.SessionRolledOver || !info.RolledOver {
		t.Errorf("state %q, rolled over %v; want %q", info.State, info.RolledOver, memory.SessionRolledOver)
	}
}

func TestListSessionsReadOnly(t *testing.T) {
	f := newFolder(t)
	metaSession(t, f, "s1", "2026-03-01", "", utc("2026-03-01T04:00:00Z"), metaUser("Hello."), metaAnswer("Hi.", 3, 4))
	path := f.SessionPath("s1")
	torn := `{"type":"message","role":"assi`
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(torn); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	before := memorytest.ReadFile(t, path)
	got, err := f.ListSessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Turns != 1 || got[0].Tokens != 7 {
		t.Fatalf("ListSessions() = %+v, want s1 with 1 turn and 7 tokens", got)
	}
	if after := memorytest.ReadFile(t, path); after != before {
		t.Errorf("ListSessions changed the session file:\n before %q\n after  %q", before, after)
	}
	if names := memorytest.DirNames(t, f.Path(memory.SessionsDir)); len(names) != 1 {
		t.Errorf("sessions/ holds %v, want only s1.jsonl", names)
	}
}

func TestSessionInfoMissing(t *testing.T) {
	f := newFolder(t)
	if _, err := f.SessionInfo("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SessionInfo(nope) error = %v, want fs.ErrNotExist", err)
	}
	if _, err := f.SessionInfo("../x"); err == nil {
		t.Error("SessionInfo(../x) succeeded, want an invalid id error")
	}
}

func TestSetSessionTitle(t *testing.T) {
	f := newFolder(t)
	metaSession(t, f, "s1", "2026-03-01", "", utc("2026-03-01T04:00:00Z"), metaUser("Hello."))
	if _, ok, err := f.SessionTitle("s1"); err != nil || ok {
		t.Fatalf("SessionTitle before rename = ok %v, err %v; want none", ok, err)
	}
	stored, err := f.SetSessionTitle("s1", "  Budget day: NIFTY gap  ")
	if err != nil {
		t.Fatal(err)
	}
	if stored != "Budget day: NIFTY gap" {
		t.Errorf("SetSessionTitle stored %q, want it trimmed", stored)
	}
	title, ok, err := f.SessionTitle("s1")
	if err != nil || !ok || title != "Budget day: NIFTY gap" {
		t.Errorf("SessionTitle = %q, %v, %v; want the new title", title, ok, err)
	}
	if _, err := f.SetSessionTitle("s1", "Renamed again"); err != nil {
		t.Fatal(err)
	}
	info, err := f.SessionInfo("s1")
	if err != nil {
		t.Fatal(err)
	}
	if info.Title != "Renamed again" {
		t.Errorf("SessionInfo title = %q, want %q", info.Title, "Renamed again")
	}
	ids, err := f.SessionIDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 {
		t.Errorf("SessionIDs() = %v after a rename, want [s1]: the title file is not a session", ids)
	}
	if tmp := tempFiles(t, f.Dir()); len(tmp) > 0 {
		t.Errorf("temp files left: %v", tmp)
	}
	if b := memorytest.ReadFile(t, filepath.Join(f.Dir(), "sessions", "s1.title")); !bytes.Equal([]byte(b), []byte("Renamed again\n")) {
		t.Errorf("title file holds %q", b)
	}
}

func TestSetSessionTitleRefused(t *testing.T) {
	f := newFolder(t)
	metaSession(t, f, "s1", "2026-03-01", "", utc("2026-03-01T04:00:00Z"))
	tests := []struct {
		name, id, title string
		notExist        bool
	}{
		{"empty", "s1", "   ", false},
		{"two lines", "s1", "one\ntwo", false},
		{"tab", "s1", "a\tb", false},
		{"too long", "s1", strings.Repeat("x", memory.MaxTitleLen+1), false},
		{"bad utf-8", "s1", "a\xffb", false},
		{"bad id", "../s1", "ok", false},
		{"unknown session", "s9", "ok", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.SetSessionTitle(tt.id, tt.title)
			if err == nil {
				t.Fatalf("SetSessionTitle(%q, %q) succeeded, want an error", tt.id, tt.title)
			}
			if errors.Is(err, fs.ErrNotExist) != tt.notExist {
				t.Errorf("SetSessionTitle(%q, %q) = %v; fs.ErrNotExist %v, want %v", tt.id, tt.title, err, !tt.notExist, tt.notExist)
			}
		})
	}
	if _, ok, _ := f.SessionTitle("s1"); ok {
		t.Error("a refused title was stored")
	}
	if _, err := f.SetSessionTitle("s1", strings.Repeat("é", memory.MaxTitleLen)); err != nil {
		t.Errorf("a title of exactly %d characters was refused: %v", memory.MaxTitleLen, err)
	}
}

// TestListSessionsFork: a fork is listed as forked from its parent, and the
// parent as forked (into the fork), not as rolled over; the records a fork
// carries count where they were written, not again in the fork.
func TestListSessionsFork(t *testing.T) {
	f := newFolder(t)
	start := utc("2026-03-02T04:00:00Z")
	metaSession(t, f, "p", "2026-03-02", "", start, metaUser("Remember the gap."), metaAnswer("Noted.", 30, 5))
	carried := func(r memory.Record, at time.Time) memory.Record { r.ForkedFrom, r.At = "p", at; return r }
	log, err := f.CreateSession(memory.Record{Session: "k", Date: "2026-03-02", Parent: "p", ForkedFrom: "p", At: start.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []memory.Record{
		carried(metaUser("Remember the gap."), start.Add(time.Second)),
		carried(metaAnswer("Noted.", 30, 5), start.Add(2*time.Second)),
		metaUser("And now?"),
		metaAnswer("Still the gap.", 40, 6),
	} {
		if err := log.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	metaWriteJSON(t, f, "state.json", map[string]any{"session": "k", "trading_date": "2026-03-02", "parent": "p"})

	got, err := f.ListSessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("ListSessions() = %+v, want p and k", got)
	}
	p, k := got[0], got[1]
	if p.State != memory.SessionForked || p.RolledOver || len(p.Forks) != 1 || p.Forks[0] != "k" || p.ForkedFrom != "" {
		t.Errorf("the parent: state %q, rolled over %v, forks %v, forked from %q; want forked into k", p.State, p.RolledOver, p.Forks, p.ForkedFrom)
	}
	if k.State != memory.SessionActive || k.ForkedFrom != "p" || k.Parent != "p" {
		t.Errorf("the fork: state %q, forked from %q, parent %q; want active, forked from p", k.State, k.ForkedFrom, k.Parent)
	}
	if k.Turns != 1 || k.Tokens != 46 || k.Carried != 2 || k.Messages != 4 || k.FirstUserText != "And now?" {
		t.Errorf("the fork: turns %d, tokens %d, carried %d, messages %d, first %q; want 1, 46, 2, 4 and its own first message",
			k.Turns, k.Tokens, k.Carried, k.Messages, k.FirstUserText)
	}
}

// TestSessionSummaryIsTheSessionsOwn: each session's summary is the one
// written when it rolled over, not the date's latest: a manual rollover's
// summary, replaced in summaries/ by the daily one of the same date, is
// found in history/ by its text, which the session recorded.
func TestSessionSummaryIsTheSessionsOwn(t *testing.T) {
	f := newFolder(t)
	date := memory.Date{Year: 2026, Month: 3, Day: 2}
	start := utc("2026-03-02T04:00:00Z")
	summary := func(text string) memory.Record {
		return memory.Record{Type: memory.RecordEvent, Kind: "summary", Text: text}
	}
	metaSession(t, f, "morning", "2026-03-02", "", start, metaUser("Open."), metaAnswer("Opened.", 1, 1), summary("Morning: opened."))
	if _, err := f.WriteSummary(date, "Morning: opened.\n"); err != nil {
		t.Fatal(err)
	}
	metaSession(t, f, "afternoon", "2026-03-02", "morning", start.Add(4*time.Hour), metaUser("Close."), metaAnswer("Closed.", 1, 1), summary("Afternoon: closed."))
	if _, err := f.WriteSummary(date, "Afternoon: closed.\n"); err != nil {
		t.Fatal(err)
	}
	metaSession(t, f, "next", "2026-03-03", "afternoon", start.Add(24*time.Hour), metaUser("Hello."))
	metaWriteJSON(t, f, "state.json", map[string]any{"session": "next"})

	for _, tt := range []struct {
		id, text string
		current  bool
	}{
		{"morning", "Morning: opened.\n", false},
		{"afternoon", "Afternoon: closed.\n", true},
	} {
		s, ok, err := f.SessionSummary(tt.id)
		if err != nil || !ok {
			t.Fatalf("SessionSummary(%s) = ok %v, err %v", tt.id, ok, err)
		}
		if s.Text != tt.text || s.Session != tt.id || s.Date != date || s.Source != memory.SummaryFromSession || s.Degraded {
			t.Errorf("SessionSummary(%s) = %+v, want the text %q from the session", tt.id, s, tt.text)
		}
		inHistory := strings.Contains(s.Path, filepath.Join(memory.HistoryDir, memory.SummariesDir, "2026-03-02")+string(filepath.Separator))
		if s.Path == "" || memorytest.ReadFile(t, s.Path) != tt.text || inHistory == tt.current {
			t.Errorf("SessionSummary(%s).Path = %q, want the file holding its text (current %v)", tt.id, s.Path, tt.current)
		}
	}
	if s, ok, err := f.SessionSummary("next"); ok || err != nil {
		t.Errorf("SessionSummary(next), the active session = %+v, %v, %v; want none", s, ok, err)
	}
	if _, _, err := f.SessionSummary("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SessionSummary(nope) error = %v, want fs.ErrNotExist", err)
	}
}

// TestSessionSummaryDegraded: a degraded rollover records no summary in
// the session; its summary is the journal's, while the journal names the
// session, and otherwise the date's file when the session is the date's
// last to roll over with turns.
func TestSessionSummaryDegraded(t *testing.T) {
	f := newFolder(t)
	date := memory.Date{Year: 2026, Month: 3, Day: 2}
	start := utc("2026-03-02T04:00:00Z")
	digest := "[Degraded summary: the model could not summarise this session (boom).]\n\n- Open. -> Opened.\n"
	metaSession(t, f, "old", "2026-03-02", "", start, metaUser("Open."), metaAnswer("Opened.", 1, 1))
	if _, err := f.WriteSummary(date, digest); err != nil {
		t.Fatal(err)
	}
	metaSession(t, f, "new", "2026-03-03", "old", start.Add(24*time.Hour))
	metaWriteJSON(t, f, "state.json", map[string]any{"session": "new"})
	metaWriteJSON(t, f, "rollover.json", map[string]any{"session": "old", "trading_date": "2026-03-02", "summary": digest, "degraded": true, "done": true})
	s, ok, err := f.SessionSummary("old")
	if err != nil || !ok || s.Text != digest || s.Source != memory.SummaryFromJournal || !s.Degraded || s.Path != f.Path("summaries/2026-03-02.md") {
		t.Errorf("SessionSummary(old) with the journal = %+v, %v, %v", s, ok, err)
	}
	metaWriteJSON(t, f, "rollover.json", map[string]any{"session": "new", "trading_date": "2026-03-03", "done": true})
	s, ok, err = f.SessionSummary("old")
	if err != nil || !ok || s.Text != digest || s.Source != memory.SummaryFromDate || !s.Degraded {
		t.Errorf("SessionSummary(old) from the date's file = %+v, %v, %v", s, ok, err)
	}
}
