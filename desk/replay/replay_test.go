package replay_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/replay"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
	"github.com/deskd/deskd/triggers"
)

// The day replayed, 2026-12-01 in Asia/Kolkata: it began at
// 2026-11-30T18:30Z.
const day = "2026-12-01"

var ist = mustZone("Asia/Kolkata")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// Texts of the live desk as it stood before the day, and as the day
// changed it.
const (
	memoryBefore = "# Lessons\n- keep position sizes small\n"
	memoryDuring = "# Lessons\n- REWRITTEN DURING THE DAY\n"
	skillBefore  = "---\nname: tape\ndescription: read the tape\n---\nRead the tape slowly.\n"
	skillDuring  = "---\nname: tape\ndescription: read the tape\n---\nREWRITTEN DURING THE DAY.\n"
	lateSkill    = "---\nname: late\ndescription: made during the day\n---\nLate.\n"
	yesterday    = "Yesterday the desk bought INFY."
	midday       = "The morning was quiet."
)

// fixture is a live desk with one trading day of 20 triggers in its
// folder, and the config that names it.
type fixture struct {
	cfg     *config.Config
	dir     string // the config's folder
	folder  *memory.Folder
	replies map[string]string // the ledger's reply of each answered trigger
	ids     []string
	llm     *routertest.Server
}

// newFixture writes the desk of a day of 20 triggers: ten in a session
// whose first message carries yesterday's summary, a manual rollover at
// midday, ten more in the next session (one of them interrupted). Every
// fifth trigger calls the free MCP tool quote; trigger t07 calls
// place_order, under approve, which an operator approved. Memory.md and
// the skill tape are rewritten during the day, and the skill late is
// made then. The models: the scripted offline one, and "other", an
// OpenAI-compatible fake (with prices) that answers answer.
func newFixture(t *testing.T, answer func(routertest.Request) routertest.Reply) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), replies: map[string]string{}}
	f.llm = routertest.New(t, routertest.ChatCompletions, routertest.Options{Answer: answer})
	t.Setenv("DESKD_REPLAY_TEST_KEY", "k")
	memorytest.Write(t, f.dir, "deskd.yaml", fmt.Sprintf(`state_dir: state
timezone: Asia/Kolkata
listen: 127.0.0.1:0
models:
  offline: {provider: scripted}
  other: {provider: openai, base_url: %q, model: fake, api_key_env: DESKD_REPLAY_TEST_KEY, prices: {input: 1000, output: 1000}}
mcp_servers:
  broker: {url: "http://127.0.0.1:9/mcp", timeout: 5s}
`, f.llm.BaseURL()))
	memorytest.Write(t, f.dir, "desks.d/main.yaml", `model: offline
instructions: You run the main desk.
budgets: {day_cost: 7.5}
mcp:
  broker: {tools: [quote, place_order], approve: [place_order]}
`)
	cfg, err := config.Load(filepath.Join(f.dir, "deskd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f.cfg = cfg
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) // the day before
	f.folder, err = memory.OpenFolder(filepath.Join(cfg.StateDir, "desks", "main"), "main", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	must0(t, errOf(f.folder.WriteMemory(memoryBefore)))
	must0(t, errOf(f.folder.WriteSkill("tape", skillBefore)))
	must0(t, errOf(f.folder.WriteSummary(memory.Date{Year: 2026, Month: 11, Day: 30}, yesterday)))
	old := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	if err := os.Chtimes(f.folder.Path("skills/tape/SKILL.md"), old, old); err != nil {
		t.Fatal(err)
	}

	ledger, err := triggers.OpenLedger(f.folder.Path(triggers.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 1, 3, 45, 0, 0, time.UTC) // 09:15 IST
	var log *memory.SessionLog
	session := ""
	for i := 1; i <= 20; i++ {
		id := fmt.Sprintf("t%02d", i)
		at := start.Add(time.Duration(i-1) * 15 * time.Minute)
		now = at
		if i == 1 || i == 11 {
			if log != nil {
				must0(t, log.Close())
				must0(t, errOf(f.folder.WriteSummary(memory.Date{Year: 2026, Month: 12, Day: 1}, midday)))
			}
			parent := session
			session = fmt.Sprintf("s%d", i)
			log, err = f.folder.CreateSession(memory.Record{At: at.Add(-time.Minute), Session: session, Desk: "main", Date: day, Parent: parent})
			if err != nil {
				t.Fatal(err)
			}
		}
		if i == 6 { // the day's changes to Memory.md and the skills
			must0(t, errOf(f.folder.WriteMemory(memoryDuring)))
			must0(t, errOf(f.folder.WriteSkill("tape", skillDuring)))
			must0(t, errOf(f.folder.WriteSkill("late", lateSkill)))
		}
		text := fmt.Sprintf("Trigger %d: check the tape.", i)
		if i%5 == 0 {
			text = fmt.Sprintf("Trigger %d: quote INFY.", i)
		}
		seen := text
		switch i {
		case 1:
			seen = triggers.WithSummary(triggers.Trigger{Text: text}, "2026-11-30", yesterday).Text
		case 11:
			seen = triggers.WithSummary(triggers.Trigger{Text: text}, day, midday).Text
		}
		tr := triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Manual, Text: text, At: at, Source: "api"}
		must0(t, ledger.Append(triggers.Record{At: at, ID: id, State: triggers.StateQueued, Trigger: &tr}))
		rec := func(r memory.Record) {
			t.Helper()
			r.Trigger = id
			must0(t, log.Append(r))
		}
		rec(memory.Record{Type: memory.RecordMessage, At: at, Role: router.RoleUser, Text: seen, Kind: "manual"})
		rec(memory.Record{Type: memory.RecordEvent, At: at, Kind: memory.RequestSentKind})
		usage := &memory.Usage{InputTokens: 100, OutputTokens: 10}
		if i == 17 { // cut off: the ledger says interrupted
			must0(t, ledger.Append(triggers.Record{At: at.Add(time.Second), ID: id, State: triggers.StateInterrupted, Reason: "deskd stopped during the turn"}))
			f.ids = append(f.ids, id)
			continue
		}
		reply := fmt.Sprintf("Answer %d: the tape is calm.", i)
		switch {
		case i%5 == 0:
			calls, _ := json.Marshal([]memory.ToolCall{{ID: "c" + id, Name: "mcp__broker__quote", Arguments: json.RawMessage(`{"symbol": "INFY"}`)}})
			rec(memory.Record{Type: memory.RecordMessage, At: at.Add(time.Second), Role: router.RoleAssistant, Model: "offline", Provider: "scripted", Scripted: true, Usage: usage, ToolCalls: calls})
			rec(memory.Record{Type: memory.RecordTool, At: at.Add(2 * time.Second), Role: router.RoleTool, ToolCallID: "c" + id, ToolName: "mcp__broker__quote", Text: "QUOTE INFY 101.25"})
			reply = fmt.Sprintf("Answer %d: INFY is at 101.25. <b>bold</b> & <script>alert(1)</script>", i)
		case i == 7:
			calls, _ := json.Marshal([]memory.ToolCall{{ID: "o7", Name: "mcp__broker__place_order", Arguments: json.RawMessage(`{"symbol":"INFY","qty":5,"side":"buy"}`)}})
			rec(memory.Record{Type: memory.RecordMessage, At: at.Add(time.Second), Role: router.RoleAssistant, Model: "offline", Provider: "scripted", Scripted: true, Usage: usage, ToolCalls: calls})
			d, _ := json.Marshal(router.Decision{ID: "a1", Call: "o7", Tool: "mcp__broker__place_order", Outcome: "approved", By: "alice"})
			rec(memory.Record{Type: memory.RecordEvent, At: at.Add(2 * time.Second), Kind: router.RecordApproval, ToolCallID: "o7", ToolName: "mcp__broker__place_order", Data: d})
			rec(memory.Record{Type: memory.RecordTool, At: at.Add(3 * time.Second), Role: router.RoleTool, ToolCallID: "o7", ToolName: "mcp__broker__place_order", Text: "ORDER 1 buy 5 INFY accepted"})
			reply = "Answer 7: bought 5 INFY."
		}
		rec(memory.Record{Type: memory.RecordMessage, At: at.Add(4 * time.Second), Role: router.RoleAssistant, Text: reply, Model: "offline", Provider: "scripted", Scripted: true, Usage: usage, DurationMS: 40})
		must0(t, ledger.Append(triggers.Record{At: at.Add(5 * time.Second), ID: id, State: triggers.StateAnswered, Session: session, Turn: i, Reply: reply}))
		f.replies[id] = reply
		f.ids = append(f.ids, id)
	}
	must0(t, log.Close())
	must0(t, ledger.Close())
	// A trigger of the next day is no trigger of this one.
	tr := triggers.Trigger{ID: "next-day", Desk: "main", Kind: triggers.Manual, Text: "tomorrow", At: time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)}
	nl, err := f.folder.CreateSession(memory.Record{At: tr.At, Session: "s21", Desk: "main", Date: "2026-12-02", Parent: session})
	if err != nil {
		t.Fatal(err)
	}
	must0(t, nl.Append(memory.Record{Type: memory.RecordMessage, At: tr.At, Role: router.RoleUser, Text: "tomorrow", Trigger: "next-day"}))
	must0(t, nl.Close())
	return f
}

// errOf is the error of a call that returns a value too.
func errOf[T any](_ T, err error) error { return err }

func must0(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hashes returns the SHA-256 of every file below dir, by path.
func hashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[p] = "dir " + info.Mode().String()
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[p] = hex.EncodeToString(sum[:]) + " " + info.Mode().String() + " " + info.ModTime().String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameHashes(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, h := range before {
		if after[p] != h {
			t.Errorf("the live desk folder changed: %s was %q, is %q", p, h, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("the live desk folder changed: %s is new", p)
		}
	}
}

// candidateAnswer is the "other" model: it asks for a quote of INFY (the
// call the original made: replayed), of TCS (refused) and for an order
// (under approve: refused) when a trigger asks for a quote, and answers
// the rest in its own words.
func candidateAnswer(r routertest.Request) routertest.Reply {
	last := r.Last()
	if last.Role == "tool" {
		return routertest.Reply{Text: "Candidate heard: " + last.Text, Usage: routertest.Usage{Input: 200, Output: 20}}
	}
	if strings.Contains(r.LastUser(), "quote INFY") && r.MayCallTools() {
		return routertest.Reply{ToolCalls: []routertest.ToolCall{
			{Name: "mcp__broker__quote", Args: `{"symbol":"INFY"}`},
			{Name: "mcp__broker__quote", Args: `{"symbol":"TCS"}`},
			{Name: "mcp__broker__place_order", Args: `{"symbol":"TCS","qty":1,"side":"buy"}`},
		}, Usage: routertest.Usage{Input: 200, Output: 20}}
	}
	return routertest.Reply{Text: "Candidate: <i>nothing to do</i>.", Usage: routertest.Usage{Input: 200, Output: 20}}
}

// run replays the fixture's day with the candidate desk file text (""
// for the desk's own file) and model (""), into a new folder.
func (f *fixture) run(t *testing.T, candidate, model string, edit func(*replay.Options)) (*replay.Report, string, error) {
	t.Helper()
	dc := f.cfg.Desks["main"]
	source := ""
	if candidate != "" {
		var err error
		dc, err = config.LoadDeskFile(f.cfg, memorytest.Write(t, t.TempDir(), "candidate.yaml", candidate))
		if err != nil {
			t.Fatal(err)
		}
		dc.Name = "main"
		source = "--with candidate.yaml"
	}
	if model != "" {
		c := *dc
		c.Model, c.Fallbacks = model, nil
		dc = &c
		source = "--model " + model
	}
	out := filepath.Join(t.TempDir(), "out")
	o := replay.Options{Config: f.cfg, Candidate: dc, Source: source, Live: f.folder, Date: memory.Date{Year: 2026, Month: 12, Day: 1},
		Out: out, Clock: clock.Real(), Version: "test"}
	if edit != nil {
		edit(&o)
	}
	rep, err := replay.Run(t.Context(), o)
	return rep, out, err
}

const otherInstructions = `model: other
instructions: You are the CANDIDATE desk. Trade carefully.
mcp:
  broker: {tools: [quote, place_order], approve: [place_order]}
`

// TestReplayWithOtherInstructionsAndModel: a day of 20 triggers replayed
// against a candidate file with other instructions and another model (an
// OpenAI-compatible service): every trigger is run in order with the text
// the model saw; the original side is the ledger's replies; the call the
// original made is answered from the record, other calls are refused, the
// call under approve is listed; the live folder is byte for byte the same.
func TestReplayWithOtherInstructionsAndModel(t *testing.T) {
	f := newFixture(t, candidateAnswer)
	before := hashes(t, f.folder.Dir())
	var progress strings.Builder
	rep, out, err := f.run(t, otherInstructions, "", func(o *replay.Options) { o.Progress = &progress })
	if err != nil {
		t.Fatal(err)
	}
	sameHashes(t, before, hashes(t, f.folder.Dir()))

	if rep.Totals.Triggers != 20 || rep.Totals.Replayed != 20 || rep.Stopped != "" {
		t.Fatalf("totals %+v, stopped %q; want 20 triggers, all replayed", rep.Totals, rep.Stopped)
	}
	if !strings.Contains(progress.String(), "12/20 triggers\n") || !strings.HasSuffix(progress.String(), "20/20 triggers\n") {
		t.Errorf("progress = %q", progress.String())
	}
	for i, row := range rep.Triggers {
		if row.ID != f.ids[i] {
			t.Fatalf("trigger %d is %s, want %s (in order)", i, row.ID, f.ids[i])
		}
		if row.Original.Reply != f.replies[row.ID] {
			t.Errorf("%s: original reply %q, want the ledger's %q", row.ID, row.Original.Reply, f.replies[row.ID])
		}
		if row.Candidate == nil || row.Candidate.Model != "other" || row.Candidate.Scripted {
			t.Fatalf("%s: candidate %+v, want model other", row.ID, row.Candidate)
		}
		if !row.Differs {
			t.Errorf("%s: the replies are marked the same: %q and %q", row.ID, row.Original.Reply, row.Candidate.Reply)
		}
		if row.Candidate.Cost <= 0 || row.Candidate.Tokens.InputTokens == 0 {
			t.Errorf("%s: candidate cost %v, tokens %+v: want both counted", row.ID, row.Candidate.Cost, row.Candidate.Tokens)
		}
	}
	if got := rep.Triggers[0].Text; !strings.Contains(got, yesterday) || !strings.HasSuffix(got, "Trigger 1: check the tape.") {
		t.Errorf("the first trigger's text %q: want the summary it carried in front of its own text", got)
	}
	if rep.Triggers[16].Outcome != "interrupted" || rep.Triggers[16].Original.Reply != "" || rep.Triggers[16].Original.Error == "" {
		t.Errorf("t17: %+v; want interrupted, no reply, and why", rep.Triggers[16])
	}
	if rep.Triggers[6].Original.ToolCalls[0].Outcome != "approved" || !rep.Triggers[6].Original.ToolCalls[0].Approval {
		t.Errorf("t07's original call %+v: want the operator's approval", rep.Triggers[6].Original.ToolCalls)
	}

	// The quote trigger's calls: replayed, refused, refused under approve.
	q := rep.Triggers[4].Candidate
	if len(q.ToolCalls) != 3 {
		t.Fatalf("t05's candidate calls = %+v, want 3", q.ToolCalls)
	}
	if c := q.ToolCalls[0]; c.Outcome != replay.CallReplayed || c.Result != "QUOTE INFY 101.25" || c.From != "t05" {
		t.Errorf("quote INFY: %+v, want replayed from t05's record", c)
	}
	if c := q.ToolCalls[1]; c.Outcome != replay.CallRefused || c.Result != "not run in replay: mcp__broker__quote" {
		t.Errorf("quote TCS: %+v, want refused", c)
	}
	if c := q.ToolCalls[2]; c.Outcome != replay.CallRefused || !c.Approval || !strings.HasPrefix(c.Result, "not run in replay: mcp__broker__place_order") {
		t.Errorf("place_order: %+v, want refused, under approve", c)
	}
	if !strings.Contains(q.Reply, "not run in replay: mcp__broker__place_order") {
		t.Errorf("the candidate's model did not hear the refusal: %q", q.Reply)
	}
	if len(rep.Approvals) != 4 || rep.Approvals[0].Tool != "mcp__broker__place_order" || rep.Totals.Refused != 8 {
		t.Errorf("approvals %+v, refused %d: want the 4 calls of place_order listed, 8 refused", rep.Approvals, rep.Totals.Refused)
	}

	// The sandbox: the desk as it stood when the day began.
	sb := filepath.Join(out, replay.SandboxDir, "desks", "main")
	if b, _ := os.ReadFile(filepath.Join(sb, "Memory.md")); string(b) != memoryBefore {
		t.Errorf("sandbox Memory.md = %q, want the version in force at the day's start", b)
	}
	if b, _ := os.ReadFile(filepath.Join(sb, "skills/tape/SKILL.md")); string(b) != skillBefore {
		t.Errorf("sandbox skill tape = %q, want the version of the day's start", b)
	}
	if _, err := os.Stat(filepath.Join(sb, "skills/late")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("sandbox has the skill made during the day (%v)", err)
	}
	if rep.Start.Summary != "2026-11-30" {
		t.Errorf("start %+v: want the summary of 2026-11-30", rep.Start)
	}
	first := f.llm.Requests()[0]
	if sys := first.Messages[0]; sys.Role != "system" || !strings.Contains(sys.Text, "CANDIDATE desk") || !strings.Contains(sys.Text, "keep position sizes small") ||
		strings.Contains(sys.Text, "REWRITTEN") {
		t.Errorf("the candidate's system prompt = %q; want its instructions and the day's start Memory.md", sys.Text)
	}
	// The rollover: the candidate started a new session where the original did.
	ids, err := os.ReadDir(filepath.Join(sb, "sessions"))
	if err != nil || len(ids) != 2 {
		t.Errorf("the sandbox's sessions = %v (%v), want 2 (the day crossed a rollover)", ids, err)
	}

	// report.html: self-contained, sandboxed, the replies' markup as text.
	page, err := os.ReadFile(filepath.Join(out, replay.ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"default-src 'none'", "&lt;b&gt;bold&lt;/b&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;i&gt;nothing to do&lt;/i&gt;",
		`class="side original"`, `class="side candidate"`, "differing replies <b>20</b>", "tool calls refused <b>8</b>"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, bad := range []string{"<b>bold</b>", "<script>alert", "<i>nothing", "http://", "https://"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("report.html holds %q", bad)
		}
	}

	// report.json is the report.
	got, err := replay.ReadReport(out)
	if err != nil || got.Totals != rep.Totals || len(got.Triggers) != 20 {
		t.Errorf("report.json = %+v, %v", got, err)
	}
}

// TestReplayScriptedCandidate: the desk's own file with --model offline
// runs on the scripted model, labelled as such.
func TestReplayScriptedCandidate(t *testing.T) {
	f := newFixture(t, candidateAnswer)
	rep, out, err := f.run(t, "", "offline", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Candidate.Scripted || rep.Candidate.Source != "--model offline" {
		t.Errorf("candidate %+v: want scripted, by --model", rep.Candidate)
	}
	for _, row := range rep.Triggers {
		if !row.Candidate.Scripted || !strings.HasPrefix(row.Candidate.Reply, router.ScriptedLabel) {
			t.Errorf("%s: candidate %+v, want the scripted model's labelled reply", row.ID, row.Candidate)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, replay.ReportHTML))
	if err != nil || !strings.Contains(string(page), "SCRIPTED") {
		t.Errorf("report.html does not label the scripted candidate (%v)", err)
	}
	if f.llm.Count() != 0 {
		t.Errorf("the other model was called %d times", f.llm.Count())
	}
}

// TestReplayMaxCostStopsEarly: the replay stops once the candidate's
// estimated cost passes --max-cost; what ran is reported, the rest has
// no candidate side.
func TestReplayMaxCostStopsEarly(t *testing.T) {
	f := newFixture(t, candidateAnswer)
	// Each turn of "other" costs 200 in and 20 out at 1000 a million: 0.22.
	rep, _, err := f.run(t, otherInstructions, "", func(o *replay.Options) { o.MaxCost = 0.5 })
	if err != nil {
		t.Fatal(err)
	}
	if rep.Stopped == "" || rep.Totals.Replayed != 3 || len(rep.Triggers) != 20 || rep.Triggers[3].Candidate != nil {
		t.Fatalf("stopped %q, replayed %d of %d; want stopped after 3 (0.22 each, past 0.5)", rep.Stopped, rep.Totals.Replayed, len(rep.Triggers))
	}
	if rep.Totals.CandidateCost <= 0.5 {
		t.Errorf("candidate cost %v", rep.Totals.CandidateCost)
	}
}

// TestReplayRefusesBadOptions: an allowed tool the candidate does not
// have, an output folder inside the desk's, and a date with no trigger
// are refused, each saying why. (An allowed tool under approve is not
// refused: it never runs, TestReplayAllowedMCPTool.)
func TestReplayRefusesBadOptions(t *testing.T) {
	f := newFixture(t, candidateAnswer)
	_, _, err := f.run(t, "", "", func(o *replay.Options) { o.AllowTools = []string{"nosuch"} })
	if !errors.Is(err, replay.ErrBadOptions) || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("allow nosuch: %v", err)
	}
	before := hashes(t, f.folder.Dir())
	_, _, err = f.run(t, "", "", func(o *replay.Options) { o.Out = filepath.Join(f.folder.Dir(), "replay") })
	if !errors.Is(err, replay.ErrBadOptions) || !strings.Contains(err.Error(), "inside the desk's folder") {
		t.Errorf("out inside the desk folder: %v", err)
	}
	sameHashes(t, before, hashes(t, f.folder.Dir()))
	_, _, err = f.run(t, "", "", func(o *replay.Options) { o.Date = memory.Date{Year: 2026, Month: 11, Day: 20} })
	if !errors.Is(err, replay.ErrNoTriggers) {
		t.Errorf("a day without triggers: %v", err)
	}
}

// TestReplayAllowedToolRuns: a command tool listed in --allow-tools runs
// for real when the original made no such call.
func TestReplayAllowedToolRuns(t *testing.T) {
	f := newFixture(t, func(r routertest.Request) routertest.Reply {
		if r.Last().Role == "tool" {
			return routertest.Reply{Text: "heard " + r.Last().Text}
		}
		if r.MayCallTools() {
			return routertest.Reply{ToolCalls: []routertest.ToolCall{{Name: "clock", Args: `{}`}, {Name: "note", Args: `{"text":"x"}`}}}
		}
		return routertest.Reply{Text: "?"}
	})
	cand := otherInstructions + `tools:
  - {name: clock, description: say the time, command: [echo, "TEN O'CLOCK"]}
`
	rep, _, err := f.run(t, cand, "", func(o *replay.Options) { o.AllowTools = []string{"clock"} })
	if err != nil {
		t.Fatal(err)
	}
	calls := rep.Triggers[1].Candidate.ToolCalls
	if len(calls) != 2 || calls[0].Outcome != replay.CallRun || !strings.Contains(calls[0].Result, "TEN O'CLOCK") ||
		calls[1].Outcome != replay.CallRefused || calls[1].Result != "not run in replay: note" {
		t.Errorf("calls = %+v; want clock run, note refused", calls)
	}
}
