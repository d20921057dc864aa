package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// The operator tools' tests build a desk's state folder with the memory
// package's own API (no daemon), then run the commands in process.

// Sessions of the fixture: s1 is trading date 2026-03-02, rolled over into
// s2 (2026-03-03, active).
const (
	opsS1 = "20260302T033000Z-aaaa0001"
	opsS2 = "20260302T183005Z-bbbb0002"
)

// Memory.md's versions in the fixture: v1 at the start, v2 after an
// operator's edit during 2026-03-02, v3 after that day's fold, v4 after
// the next day's fold.
const (
	opsMemV1 = "# Memory\n- Respect the stop loss.\n"
	opsMemV2 = "# Memory\n- Respect the stop loss.\n- Operator: no trades before 09:20.\n"
	opsMemV3 = "# Memory\n- Respect the stop loss.\n- Operator: no trades before 09:20.\n\n## 2026-03-02\n- NIFTY opened flat; hedge early.\n"
	opsMemV4 = opsMemV3 + "\n## 2026-03-03\n- Quiet day.\n"
)

// opsSummary is the summary of 2026-03-02; opsEarlySummary the one it
// replaced.
const (
	opsSummary      = "Bought 1 lot of NIFTY 22500 CE and hedged.\nBANKNIFTY quote timed out.\n"
	opsEarlySummary = "Morning only: watching NIFTY.\n"
)

// opsSetup is a config and a desk's state folder built for a test.
type opsSetup struct {
	Config  string // the main file
	DeskDir string // state/desks/main
	Folder  *memory.Folder
	// now is the folder's clock, which the fixture moves before each write.
	now *time.Time
}

func utcTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// opsWrite writes text to dir/name, making folders, and returns the path.
func opsWrite(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// newOpsSetup writes deskd.yaml and desks.d/main.yaml into t.TempDir()
// and an empty desk folder for main.
func newOpsSetup(t *testing.T) *opsSetup {
	t.Helper()
	dir := t.TempDir()
	cfg := opsWrite(t, dir, "deskd.yaml", `state_dir: state
timezone: Asia/Kolkata
rollover_at: "00:00"
listen: 127.0.0.1:0
models:
  offline: {provider: scripted}
`)
	opsWrite(t, dir, filepath.Join("desks.d", "main.yaml"), "model: offline\ninstructions: |\n  You run the main desk.\n")
	s := &opsSetup{Config: cfg, DeskDir: filepath.Join(dir, "state", "desks", "main")}
	now := utcTime(t, "2026-03-01T10:00:00Z")
	s.now = &now
	f, err := memory.OpenFolder(s.DeskDir, "main", func() time.Time { return *s.now })
	if err != nil {
		t.Fatal(err)
	}
	s.Folder = f
	return s
}

// at moves the fixture's clock.
func (s *opsSetup) at(t *testing.T, when string) { *s.now = utcTime(t, when) }

// session creates a session and appends recs, each a second after the one
// before unless it has its own time.
func (s *opsSetup) session(t *testing.T, header memory.Record, recs ...memory.Record) {
	t.Helper()
	log, err := s.Folder.CreateSession(header)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	at := header.At
	for _, r := range recs {
		if r.At.IsZero() {
			at = at.Add(time.Second)
			r.At = at
		}
		at = r.At
		if err := log.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

// newOpsDesk builds the fixture's whole desk: two sessions with tool
// calls, a tool error, a checkpoint, a summary and a fold; Memory.md in
// four versions; notes; the curator and trigger ledgers; the rollover
// journal and state.json.
func newOpsDesk(t *testing.T) *opsSetup {
	t.Helper()
	s := newOpsSetup(t)
	s.at(t, "2026-03-01T10:00:00Z")
	if _, err := s.Folder.WriteMemory(opsMemV1); err != nil {
		t.Fatal(err)
	}
	s.at(t, "2026-03-02T05:00:00Z")
	if _, err := s.Folder.WriteMemory(opsMemV2); err != nil {
		t.Fatal(err)
	}
	scripted := func(text string, in, out int) memory.Record {
		return memory.Record{Type: memory.RecordMessage, Role: "assistant", Text: text, Model: "offline", Provider: "scripted",
			Scripted: true, Usage: &memory.Usage{InputTokens: in, OutputTokens: out}, DurationMS: 1200}
	}
	withTrigger := func(r memory.Record, id string) memory.Record { r.Trigger = id; return r }
	call := scripted("", 40, 8)
	call.ToolCalls = json.RawMessage(`[{"id":"call_1","name":"note","arguments":{"text":"NIFTY opened flat; hedge early."}}]`)
	quote := scripted("", 60, 6)
	quote.ToolCalls = json.RawMessage(`[{"id":"call_2","name":"quote","arguments":{"symbol":"BANKNIFTY"}}]`)
	s.session(t, memory.Record{Session: opsS1, Date: "2026-03-02", At: utcTime(t, "2026-03-02T03:30:00Z")},
		memory.Record{Type: memory.RecordMessage, Role: "user", Trigger: "open@1", Kind: "schedule",
			Text: "Check the tape.\nNIFTY 22,450 at the open. <script>alert('x')</script>"},
		withTrigger(call, "open@1"),
		memory.Record{Type: memory.RecordTool, Role: "tool", Trigger: "open@1", ToolCallID: "call_1", ToolName: "note", Text: "noted"},
		withTrigger(scripted("Bought 1 lot of NIFTY 22500 CE & hedged with <b>puts</b>.", 90, 20), "open@1"),
		memory.Record{Type: memory.RecordMessage, Role: "user", Trigger: "mkt-7", Kind: "market", Text: "Quote BANKNIFTY."},
		withTrigger(quote, "mkt-7"),
		memory.Record{Type: memory.RecordTool, Role: "tool", Trigger: "mkt-7", ToolCallID: "call_2", ToolName: "quote",
			Text: "quote: timed out after 10s", IsError: true},
		withTrigger(scripted("Could not quote BANKNIFTY.", 120, 9), "mkt-7"),
		memory.Record{Type: memory.RecordCheckpoint, Trigger: "mkt-8", Text: "Checkpoint: long NIFTY 22500 CE, hedged."},
		memory.Record{Type: memory.RecordEvent, Kind: "summary", At: utcTime(t, "2026-03-02T18:30:00Z"), Text: opsSummary,
			Model: "offline", Provider: "scripted", Scripted: true, Usage: &memory.Usage{InputTokens: 200, OutputTokens: 30}},
		memory.Record{Type: memory.RecordEvent, Kind: "fold", At: utcTime(t, "2026-03-02T18:30:01Z"), Text: opsMemV3,
			Model: "offline", Provider: "scripted", Scripted: true, Usage: &memory.Usage{InputTokens: 100, OutputTokens: 40}},
	)
	if err := s.Folder.AppendNote(memory.Date{Year: 2026, Month: 3, Day: 2}, "NIFTY opened flat; hedge early."); err != nil {
		t.Fatal(err)
	}
	// The date's summary was written twice (a manual rollover, then the
	// daily one): the first version is kept under history/.
	s.at(t, "2026-03-02T12:00:00Z")
	if _, err := s.Folder.WriteSummary(memory.Date{Year: 2026, Month: 3, Day: 2}, opsEarlySummary); err != nil {
		t.Fatal(err)
	}
	s.at(t, "2026-03-02T18:30:00.5Z")
	if _, err := s.Folder.WriteSummary(memory.Date{Year: 2026, Month: 3, Day: 2}, opsSummary); err != nil {
		t.Fatal(err)
	}
	s.at(t, "2026-03-02T18:30:02Z")
	if _, err := s.Folder.WriteMemory(opsMemV3); err != nil {
		t.Fatal(err)
	}
	first := triggers.WithSummary(triggers.Trigger{Text: "Good morning. Plan the day."}, "2026-03-02", strings.TrimRight(opsSummary, "\n")).Text
	s.session(t, memory.Record{Session: opsS2, Date: "2026-03-03", Parent: opsS1, At: utcTime(t, "2026-03-02T18:30:05Z")},
		memory.Record{Type: memory.RecordMessage, Role: "user", Trigger: "open@2", Kind: "schedule", Text: first},
		withTrigger(scripted("Plan: hold the hedge.", 300, 12), "open@2"),
	)
	s.at(t, "2026-03-03T18:30:02Z")
	if _, err := s.Folder.WriteMemory(opsMemV4); err != nil {
		t.Fatal(err)
	}
	opsWrite(t, s.DeskDir, "curator/ledger.jsonl",
		`{"at":"2026-03-01T18:30:03Z","trading_date":"2026-03-01","session":"old","action":"inventory","skills":[]}`+"\n"+
			`{"at":"2026-03-02T18:30:03Z","trading_date":"2026-03-02","session":"`+opsS1+`","action":"inventory","skills":[]}`+"\n"+
			`{"at":"2026-03-03T18:30:03Z","trading_date":"2026-03-03","session":"`+opsS2+`","action":"inventory","skills":[]}`+"\n")
	opsWrite(t, s.DeskDir, "triggers.jsonl", strings.Join([]string{
		`{"at":"2026-03-01T18:29:00Z","id":"late-0301","state":"queued"}`,  // 23:59 IST on 03-01
		`{"at":"2026-03-01T18:31:00Z","id":"early-0302","state":"queued"}`, // 00:01 IST on 03-02
		`{"at":"2026-03-02T03:30:00Z","id":"open@1","state":"queued"}`,     // 09:00 IST on 03-02
		`this line is damaged`, // does not parse
		`{"at":"2026-03-03T04:00:00Z","id":"open@1","state":"answered","session":"` + opsS1 + `","turn":1}`, // by session
		`{"at":"2026-03-02T18:31:00Z","id":"open@2","state":"queued"}`,                                      // 00:01 IST on 03-03
	}, "\n")+"\n")
	if err := s.Folder.WriteJSON("rollover.json", map[string]any{"session": opsS1, "trading_date": "2026-03-02", "reason": "daily_rollover",
		"summarised": true, "folded": true, "curated": true, "new_session": opsS2, "done": true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Folder.WriteJSON("state.json", map[string]any{"session": opsS2, "trading_date": "2026-03-03", "parent": opsS1}); err != nil {
		t.Fatal(err)
	}
	return s
}

// runOps runs deskd with args and the fixture's --config in process.
func runOps(t *testing.T, s *opsSetup, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), append(args, "--config", s.Config), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestSessionsList(t *testing.T) {
	s := newOpsDesk(t)
	code, out, errOut := runOps(t, s, "sessions", "main")
	if code != 0 {
		t.Fatalf("deskd sessions main: exit %d, stderr %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("deskd sessions printed %d lines, want a heading and 2 sessions:\n%s", len(lines), out)
	}
	want := [][]string{
		{"SESSION", "DATE", "TURNS", "TOKENS", "STATE", "TITLE"},
		{opsS1, "2026-03-02", "2", "723", "rolled", "over", "Check", "the", "tape."},
		{opsS2, "2026-03-03", "1", "312", "active", "Good", "morning.", "Plan", "the", "day."},
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d = %q, want the fields %q", i, lines[i], w)
		}
	}
}

func TestSessionsJSON(t *testing.T) {
	s := newOpsDesk(t)
	code, out, errOut := runOps(t, s, "sessions", "main", "--json")
	if code != 0 {
		t.Fatalf("deskd sessions --json: exit %d, stderr %s", code, errOut)
	}
	var rows []sessionRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %d sessions, want 2: %s", len(rows), out)
	}
	r := rows[0]
	// 40+90+60+120 in and 8+20+6+9 out for the turns, 200+30 for the
	// summary, 100+40 for the fold.
	if r.ID != opsS1 || r.Date != "2026-03-02" || r.Turns != 2 || r.Input != 610 || r.Output != 113 || r.Tokens != 723 ||
		r.State != "rolled over" || r.Checkpoints != 1 || !r.Scripted || r.TitleSource != "first message" {
		t.Errorf("session 1 = %+v", r)
	}
	if r := rows[1]; r.ID != opsS2 || r.Parent != opsS1 || r.State != "active" || r.Title != "Good morning. Plan the day." {
		t.Errorf("session 2 = %+v", r)
	}
}

func TestSessionStates(t *testing.T) {
	s := newOpsDesk(t)
	// The rollover of s1 degraded: its journal says so.
	if err := s.Folder.WriteJSON("rollover.json", map[string]any{"session": opsS1, "degraded": true, "done": true, "new_session": opsS2}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runOps(t, s, "sessions", "main", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var rows []sessionRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].State != "degraded" || rows[1].State != "active" {
		t.Errorf("states = %+v, want degraded then active", rows)
	}
}

func TestSessionsUnknownDesk(t *testing.T) {
	s := newOpsDesk(t)
	for _, name := range []string{"nosuch", "../desks/main", ".."} {
		code, _, errOut := runOps(t, s, "sessions", name)
		if code != 2 || !strings.Contains(errOut, fmt.Sprintf("no desk %q", name)) {
			t.Errorf("deskd sessions %s: exit %d, stderr %q; want 2 and the reason", name, code, errOut)
		}
	}
}

func TestSessionsOfDeskNoLongerConfigured(t *testing.T) {
	s := newOpsDesk(t)
	if err := os.Remove(filepath.Join(filepath.Dir(s.Config), "desks.d", "main.yaml")); err != nil {
		t.Fatal(err)
	}
	opsWrite(t, filepath.Dir(s.Config), filepath.Join("desks.d", "other.yaml"), "model: offline\ninstructions: x\n")
	code, out, errOut := runOps(t, s, "sessions", "main")
	if code != 0 || !strings.Contains(out, opsS1) {
		t.Errorf("deskd sessions of a desk removed from the config: exit %d, stderr %q, out %q; want its sessions", code, errOut, out)
	}
	bundle := filepath.Join(t.TempDir(), "a.tar.gz")
	if code, _, errOut := runOps(t, s, "audit", "main", "2026-03-02", "-o", bundle); code != 0 {
		t.Fatalf("deskd audit of a desk removed from the config: exit %d, stderr %s", code, errOut)
	}
	files := readBundle(t, bundle)
	if len(files) == 0 || !strings.Contains(files[0].data, "config: the desk is not in the config at export time; only the main file is included") {
		t.Errorf("the audit of a desk removed from the config does not say so")
	}
	for _, f := range files {
		if strings.Contains(f.name, "desks.d/") {
			t.Errorf("the audit of a desk removed from the config holds %s", f.name)
		}
	}
	code, _, errOut = runOps(t, s, "sessions", "other")
	if code != 1 || !strings.Contains(errOut, "desk other has no state folder yet") {
		t.Errorf("deskd sessions of a desk that never ran: exit %d, stderr %q", code, errOut)
	}
}

func TestRename(t *testing.T) {
	s := newOpsDesk(t)
	// A unique prefix names the session; the title's words are joined.
	code, out, errOut := runOps(t, s, "rename", "main", opsS1[:18], "Budget", "day:", "NIFTY gap")
	if code != 0 {
		t.Fatalf("deskd rename: exit %d, stderr %s", code, errOut)
	}
	if want := opsS1 + ": Budget day: NIFTY gap\n"; out != want {
		t.Errorf("deskd rename printed %q, want %q", out, want)
	}
	_, out, _ = runOps(t, s, "sessions", "main", "--json")
	var rows []sessionRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if rows[0].Title != "Budget day: NIFTY gap" || rows[0].TitleSource != "operator" {
		t.Errorf("after rename: title %q from %s, want the operator's", rows[0].Title, rows[0].TitleSource)
	}
	if rows[1].TitleSource != "first message" {
		t.Errorf("the other session's title changed too: %+v", rows[1])
	}
	_, out, _ = runOps(t, s, "show", "main", opsS1)
	if !strings.Contains(out, "title: Budget day: NIFTY gap\n") {
		t.Errorf("deskd show does not carry the new title:\n%s", out)
	}
}

func TestRenameRefused(t *testing.T) {
	s := newOpsDesk(t)
	tests := []struct {
		name   string
		args   []string
		reason string
	}{
		{"unknown session", []string{"rename", "main", "nosuch", "x"}, `no session "nosuch"`},
		{"ambiguous prefix", []string{"rename", "main", "20260302T", "x"}, "names 2 sessions"},
		{"two lines", []string{"rename", "main", opsS1, "one\ntwo"}, "control character"},
		{"blank", []string{"rename", "main", opsS1, " "}, "empty title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runOps(t, s, tt.args...)
			if code != 2 || !strings.Contains(errOut, tt.reason) {
				t.Errorf("deskd %v: exit %d, stderr %q; want 2 and %q", tt.args, code, errOut, tt.reason)
			}
		})
	}
	if _, ok, err := s.Folder.SessionTitle(opsS1); ok || err != nil {
		t.Errorf("a refused rename stored a title (ok %v, err %v)", ok, err)
	}
}

func TestSessionDefaultTitle(t *testing.T) {
	long := strings.Repeat("é", 70)
	tests := []struct {
		name, text, want string
	}{
		{"first line", "Check the tape.\nNIFTY 22,450.", "Check the tape."},
		{"summary preamble stripped", triggers.WithSummary(triggers.Trigger{Text: "\n  Open the book.  \nMore."}, "2026-03-01", "Old summary.").Text, "Open the book."},
		{"market framing skipped", triggers.Prompt(triggers.Trigger{Kind: triggers.Market, ID: "m1", Source: "feed", Text: "NIFTY down 2%\nmore"}), "NIFTY down 2%"},
		{"spaces folded", "  a \t b  ", "a b"},
		{"cut at 60 characters", long, strings.Repeat("é", 59) + "…"},
		{"exactly 60", strings.Repeat("x", 60), strings.Repeat("x", 60)},
		{"empty", "", untitled},
		{"blank lines only", "\n \n", untitled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultTitle(tt.text); got != tt.want {
				t.Errorf("defaultTitle(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestShow(t *testing.T) {
	s := newOpsDesk(t)
	code, out, errOut := runOps(t, s, "show", "main", opsS1)
	if code != 0 {
		t.Fatalf("deskd show main %s: exit %d, stderr %s", opsS1, code, errOut)
	}
	for _, want := range []string{
		"desk main, session " + opsS1 + ", trading date 2026-03-02\n",
		"title: Check the tape.\n",
		"state: rolled over; turns 2; tokens 723 (610 in, 113 out)\n",
		"SCRIPTED: answers in this session come from the offline scripted model",
		"--- 2026-03-02 09:00:01 IST  user · schedule · trigger open@1\nCheck the tape.\nNIFTY 22,450 at the open. <script>alert('x')</script>\n",
		"assistant · offline (scripted) SCRIPTED · 40 in / 8 out tokens · 1.2s\n",
		`-> tool call note (call_1): { "text": "NIFTY opened flat; hedge early." }`,
		"tool result note (call_1)",
		"tool result quote (call_2) · ERROR\nquote: timed out after 10s\n",
		"checkpoint (the exchanges before it were summarised into this)\nCheckpoint: long NIFTY 22500 CE, hedged.\n",
		"event summary · offline (scripted) SCRIPTED · 200 in / 30 out tokens\n" + opsSummary,
		"Bought 1 lot of NIFTY 22500 CE & hedged with <b>puts</b>.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("deskd show lacks %q:\n%s", want, out)
		}
	}
}

func TestShowDefaultsToActiveSession(t *testing.T) {
	s := newOpsDesk(t)
	code, out, errOut := runOps(t, s, "show", "main")
	if code != 0 {
		t.Fatalf("deskd show main: exit %d, stderr %s", code, errOut)
	}
	if !strings.Contains(out, "session "+opsS2) || !strings.Contains(out, "Good morning. Plan the day.") {
		t.Errorf("deskd show main did not show the active session %s:\n%s", opsS2, out)
	}
	if !strings.Contains(out, "[carries the summary of the previous session, from 2026-03-02: 2 lines; --full prints it]") ||
		strings.Contains(out, "BANKNIFTY quote timed out.") {
		t.Errorf("deskd show main should fold the summary the first message carries:\n%s", out)
	}
	_, full, _ := runOps(t, s, "show", "main", "--full")
	if !strings.Contains(full, "[summary of the previous session, from 2026-03-02:]\n"+opsSummary+"[end of the summary]\nGood morning.") {
		t.Errorf("deskd show --full does not print the carried summary:\n%s", full)
	}
}

func TestShowNoSessions(t *testing.T) {
	s := newOpsSetup(t)
	code, _, errOut := runOps(t, s, "show", "main")
	if code != 1 || !strings.Contains(errOut, "desk main has no sessions") {
		t.Errorf("deskd show on an empty desk: exit %d, stderr %q", code, errOut)
	}
}

func TestShowEscapesControlCharacters(t *testing.T) {
	s := newOpsSetup(t)
	s.session(t, memory.Record{Session: "s1", Date: "2026-03-02", At: utcTime(t, "2026-03-02T03:30:00Z")},
		memory.Record{Type: memory.RecordMessage, Role: "user", Text: "\x1b[2JWipe\rthe screen", Trigger: "t"},
		memory.Record{Type: memory.RecordMessage, Role: "assistant", Text: "ok\tdone", Trigger: "t"},
	)
	for _, args := range [][]string{{"show", "main"}, {"sessions", "main"}} {
		code, out, errOut := runOps(t, s, args...)
		if code != 0 {
			t.Fatalf("deskd %v: exit %d, stderr %s", args, code, errOut)
		}
		if strings.ContainsAny(out, "\x1b\r") {
			t.Errorf("deskd %v printed control characters: %q", args, out)
		}
		if !strings.Contains(out, `\u001b[2JWipe`) {
			t.Errorf("deskd %v does not show the escaped text: %q", args, out)
		}
	}
	_, out, _ := runOps(t, s, "show", "main")
	if !strings.Contains(out, `Wipe\u000dthe screen`) || !strings.Contains(out, "ok\tdone") {
		t.Errorf("deskd show should escape the carriage return and keep the tab: %q", out)
	}
}
