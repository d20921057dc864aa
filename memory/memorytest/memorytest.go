// Package memorytest builds desk folders for the tests of the packages
// that read them (the operator tools, transcripts, the audit bundle): a
// config and an empty desk folder on a clock the test moves (New), the
// same with a whole fixture desk written through package memory's own API
// (Populated), and a live desk, the real router and keeper over such a
// folder on a fake clock (NewLive), for what must be what the daemon
// writes.
package memorytest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// Sessions of the Populated desk: S1 is trading date 2026-03-02, rolled
// over into S2 (2026-03-03, active).
const (
	S1 = "20260302T033000Z-aaaa0001"
	S2 = "20260302T183005Z-bbbb0002"
)

// Memory.md's versions in the Populated desk: MemV1 at the start, MemV2
// after an operator's edit during 2026-03-02, MemV3 after that day's
// fold, MemV4 after the next day's fold.
const (
	MemV1 = "# Memory\n- Respect the stop loss.\n"
	MemV2 = "# Memory\n- Respect the stop loss.\n- Operator: no trades before 09:20.\n"
	MemV3 = "# Memory\n- Respect the stop loss.\n- Operator: no trades before 09:20.\n\n## 2026-03-02\n- NIFTY opened flat; hedge early.\n"
	MemV4 = MemV3 + "\n## 2026-03-03\n- Quiet day.\n"
)

// Summary is the Populated desk's summary of 2026-03-02; EarlySummary the
// one it replaced.
const (
	Summary      = "Bought 1 lot of NIFTY 22500 CE and hedged.\nBANKNIFTY quote timed out.\n"
	EarlySummary = "Morning only: watching NIFTY.\n"
)

// Desk is a config and a desk's state folder built for a test: the main
// file names state_dir state beside it, the Asia/Kolkata zone and the
// offline scripted model; desks.d/main.yaml is the desk main.
type Desk struct {
	Config  string // the main file
	DeskDir string // state/desks/main
	Folder  *memory.Folder
	// now is the folder's clock, which the fixture moves before each write.
	now *time.Time
}

// UTC parses an RFC 3339 instant.
func UTC(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Write writes text to dir/name, making folders, and returns the path.
func Write(t testing.TB, dir, name, text string) string {
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

// ReadFile returns the text of the file at path, failing the test if it
// cannot be read.
func ReadFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// DirNames returns the names in dir, sorted. A missing dir has none (as
// for memory.ListDir); any other error fails the test.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := memory.ListDir(dir, "test folder")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// New writes deskd.yaml and desks.d/main.yaml into t.TempDir() and opens
// an empty desk folder for main, its clock at 2026-03-01T10:00:00Z.
func New(t testing.TB) *Desk {
	t.Helper()
	dir := t.TempDir()
	cfg := Write(t, dir, "deskd.yaml", `state_dir: state
timezone: Asia/Kolkata
rollover_at: "00:00"
listen: 127.0.0.1:0
models:
  offline: {provider: scripted}
`)
	Write(t, dir, filepath.Join("desks.d", "main.yaml"), "model: offline\ninstructions: |\n  You run the main desk.\n")
	d := &Desk{Config: cfg, DeskDir: filepath.Join(dir, "state", "desks", "main")}
	now := UTC(t, "2026-03-01T10:00:00Z")
	d.now = &now
	f, err := memory.OpenFolder(d.DeskDir, "main", func() time.Time { return *d.now })
	if err != nil {
		t.Fatal(err)
	}
	d.Folder = f
	return d
}

// At moves the folder's clock to when (RFC 3339).
func (d *Desk) At(t testing.TB, when string) { *d.now = UTC(t, when) }

// Session creates a session and appends recs, each a second after the one
// before unless it has its own time.
func (d *Desk) Session(t testing.TB, header memory.Record, recs ...memory.Record) {
	t.Helper()
	log, err := d.Folder.CreateSession(header)
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

// Populated builds New's desk with a whole day's state: two sessions (S1
// with tool calls, a tool error, a checkpoint, a summary and a fold; S2,
// active, whose first message carries S1's summary); Memory.md in four
// versions; notes; the summary of 2026-03-02 written twice; the curator
// and trigger ledgers (with one damaged line); the rollover journal and
// state.json.
func Populated(t testing.TB) *Desk {
	t.Helper()
	d := New(t)
	d.At(t, "2026-03-01T10:00:00Z")
	if _, err := d.Folder.WriteMemory(MemV1); err != nil {
		t.Fatal(err)
	}
	d.At(t, "2026-03-02T05:00:00Z")
	if _, err := d.Folder.WriteMemory(MemV2); err != nil {
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
	d.Session(t, memory.Record{Session: S1, Date: "2026-03-02", At: UTC(t, "2026-03-02T03:30:00Z")},
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
		memory.Record{Type: memory.RecordEvent, Kind: "summary", At: UTC(t, "2026-03-02T18:30:00Z"), Text: Summary,
			Model: "offline", Provider: "scripted", Scripted: true, Usage: &memory.Usage{InputTokens: 200, OutputTokens: 30}},
		memory.Record{Type: memory.RecordEvent, Kind: "fold", At: UTC(t, "2026-03-02T18:30:01Z"), Text: MemV3,
			Model: "offline", Provider: "scripted", Scripted: true, Usage: &memory.Usage{InputTokens: 100, OutputTokens: 40}},
	)
	if err := d.Folder.AppendNote(memory.Date{Year: 2026, Month: 3, Day: 2}, "NIFTY opened flat; hedge early."); err != nil {
		t.Fatal(err)
	}
	// The date's summary was written twice (a manual rollover, then the
	// daily one): the first version is kept under history/.
	d.At(t, "2026-03-02T12:00:00Z")
	if _, err := d.Folder.WriteSummary(memory.Date{Year: 2026, Month: 3, Day: 2}, EarlySummary); err != nil {
		t.Fatal(err)
	}
	d.At(t, "2026-03-02T18:30:00.5Z")
	if _, err := d.Folder.WriteSummary(memory.Date{Year: 2026, Month: 3, Day: 2}, Summary); err != nil {
		t.Fatal(err)
	}
	d.At(t, "2026-03-02T18:30:02Z")
	if _, err := d.Folder.WriteMemory(MemV3); err != nil {
		t.Fatal(err)
	}
	first := triggers.WithSummary(triggers.Trigger{Text: "Good morning. Plan the day."}, "2026-03-02", strings.TrimRight(Summary, "\n")).Text
	d.Session(t, memory.Record{Session: S2, Date: "2026-03-03", Parent: S1, At: UTC(t, "2026-03-02T18:30:05Z")},
		memory.Record{Type: memory.RecordMessage, Role: "user", Trigger: "open@2", Kind: "schedule", Text: first},
		withTrigger(scripted("Plan: hold the hedge.", 300, 12), "open@2"),
	)
	d.At(t, "2026-03-03T18:30:02Z")
	if _, err := d.Folder.WriteMemory(MemV4); err != nil {
		t.Fatal(err)
	}
	Write(t, d.DeskDir, "curator/ledger.jsonl",
		`{"at":"2026-03-01T18:30:03Z","trading_date":"2026-03-01","session":"old","action":"inventory","skills":[]}`+"\n"+
			`{"at":"2026-03-02T18:30:03Z","trading_date":"2026-03-02","session":"`+S1+`","action":"inventory","skills":[]}`+"\n"+
			`{"at":"2026-03-03T18:30:03Z","trading_date":"2026-03-03","session":"`+S2+`","action":"inventory","skills":[]}`+"\n")
	Write(t, d.DeskDir, "triggers.jsonl", strings.Join([]string{
		`{"at":"2026-03-01T18:29:00Z","id":"late-0301","state":"queued"}`,  // 23:59 IST on 03-01
		`{"at":"2026-03-01T18:31:00Z","id":"early-0302","state":"queued"}`, // 00:01 IST on 03-02
		`{"at":"2026-03-02T03:30:00Z","id":"open@1","state":"queued"}`,     // 09:00 IST on 03-02
		`this line is damaged`, // does not parse
		`{"at":"2026-03-03T04:00:00Z","id":"open@1","state":"answered","session":"` + S1 + `","turn":1}`, // by session
		`{"at":"2026-03-02T18:31:00Z","id":"open@2","state":"queued"}`,                                   // 00:01 IST on 03-03
	}, "\n")+"\n")
	if err := d.Folder.WriteJSON(memory.RolloverFile, map[string]any{"session": S1, "trading_date": "2026-03-02", "reason": "daily_rollover",
		"summarised": true, "folded": true, "curated": true, "new_session": S2, "done": true}); err != nil {
		t.Fatal(err)
	}
	if err := d.Folder.WriteJSON(memory.StateFile, map[string]any{"session": S2, "trading_date": "2026-03-03", "parent": S1}); err != nil {
		t.Fatal(err)
	}
	return d
}
