package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
	"github.com/deskd/deskd/triggers"
)

// playbook is a model that gives canned responses in order and records
// every request; past the end it answers "done".
type playbook struct {
	mu    sync.Mutex
	steps []router.Response
	reqs  []router.Request
}

func (p *playbook) Complete(_ context.Context, req router.Request) (router.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, req)
	if req.Task != router.TaskTurn && req.Task != router.TaskFlush {
		return router.Response{Text: "checkpoint: " + string(req.Task), Usage: memory.Usage{InputTokens: 5, OutputTokens: 5}}, nil
	}
	if len(p.steps) == 0 {
		return router.Response{Text: "done", Usage: memory.Usage{InputTokens: 10, OutputTokens: 2}}, nil
	}
	r := p.steps[0]
	p.steps = p.steps[1:]
	return r, nil
}

func (p *playbook) requests() []router.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]router.Request(nil), p.reqs...)
}

func call(id, name, args string) router.ToolCall {
	return router.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

type loopRig struct {
	t      testing.TB
	clock  *clock.Fake
	bus    *event.Bus
	folder *memory.Folder
	day    memory.TradingDay
}

func newLoopRig(t testing.TB) *loopRig {
	t.Helper()
	c := clock.NewFake(time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC)) // 09:30 IST
	f, err := memory.OpenFolder(filepath.Join(t.TempDir(), "desks", "main"), "main", c.Now)
	if err != nil {
		t.Fatal(err)
	}
	bus := event.New()
	t.Cleanup(bus.Close)
	return &loopRig{t: t, clock: c, bus: bus, folder: f, day: desktest.Day()}
}

func (g *loopRig) router(s router.Settings) *router.Router {
	g.t.Helper()
	if s.Tools == nil {
		s.Tools = router.BuiltinTools(g.folder, func() memory.Date { return g.day.DateOf(g.clock.Now()) })
	}
	r, err := router.New(router.Options{Desk: "main", Folder: g.folder, Clock: g.clock, Day: g.day, Bus: g.bus, Settings: s})
	if err != nil {
		g.t.Fatal(err)
	}
	if _, err := r.RestoreSession(context.Background()); err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { r.Close() })
	return r
}

func model(p router.Provider, window int) router.Model {
	return router.Model{Name: "m", Provider: "openai", Client: p, ContextWindow: window}
}

// apiOf is the wire API of a provider's service.
func apiOf(provider router.ProviderName) routertest.API {
	if provider == router.AnthropicProvider {
		return routertest.Messages
	}
	return routertest.ChatCompletions
}

// serviceModel is a model of srv's provider, as deskd configures one: the
// provider's client over srv, with key and an output cap of maxOut (0:
// none).
func serviceModel(t *testing.T, srv *routertest.Server, key string, maxOut int) router.Model {
	t.Helper()
	provider := router.ProviderName(srv.API().String())
	m := router.Model{Name: string(provider), Provider: provider}
	var err error
	if srv.API() == routertest.Messages {
		m.Client, err = router.NewAnthropic(router.AnthropicOptions{Name: string(provider), BaseURL: srv.BaseURL(), Model: "claude-test",
			APIKey: key, MaxOutputTokens: maxOut, Timeout: time.Minute, HTTPClient: srv.Client()})
	} else {
		m.Client, err = router.NewOpenAI(router.OpenAIOptions{Name: string(provider), BaseURL: srv.BaseURL(), Model: "gpt-test",
			APIKey: key, MaxOutputTokens: maxOut, Timeout: time.Minute, HTTPClient: srv.Client()})
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// send runs a turn of a trigger of no kind, and fails the test if it fails.
func (g *loopRig) send(r *router.Router, id, text string) {
	g.t.Helper()
	if _, err := r.Send(context.Background(), triggers.Trigger{ID: id, Text: text}); err != nil {
		g.t.Fatalf("Send(%s): %v", id, err)
	}
}

func (g *loopRig) sessionRecords(r *router.Router) []memory.Record {
	g.t.Helper()
	recs, err := g.folder.ReadSession(r.SessionID())
	if err != nil {
		g.t.Fatal(err)
	}
	return recs
}

func TestToolLoopRunsToolsUntilTheModelAnswers(t *testing.T) {
	g := newLoopRig(t)
	p := &playbook{steps: []router.Response{
		{ToolCalls: []router.ToolCall{call("c1", "note", `{"text":"RELIANCE gapped up 2%"}`), call("c2", "nope", `{}`)}},
		{ToolCalls: []router.ToolCall{call("c3", "note", `{"wrong":1}`), call("c4", "memory_search", `{"query":"reliance"}`)}},
		{Text: "Noted the gap."},
	}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}})
	reply, err := r.Send(context.Background(), triggers.Trigger{ID: "t1", Kind: triggers.Market, Text: "RELIANCE opens"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Noted the gap." || reply.ToolCalls != 4 || r.Exchanges() != 1 {
		t.Fatalf("reply %+v, exchanges %d", reply, r.Exchanges())
	}
	notes, ok, _ := g.folder.ReadNotes(memory.Date{Year: 2026, Month: 3, Day: 2})
	if !ok || notes != "RELIANCE gapped up 2%\n" {
		t.Fatalf("notes = %q", notes)
	}
	var results []string
	for _, rec := range g.sessionRecords(r) {
		if rec.Type == memory.RecordTool {
			results = append(results, rec.ToolName+"|"+rec.Text)
			if (rec.ToolName == "nope" || rec.ToolCallID == "c3") != rec.IsError {
				t.Errorf("tool record %s is_error = %v", rec.ToolCallID, rec.IsError)
			}
		}
	}
	if len(results) != 4 || !strings.Contains(results[1], "no tool named nope") || !strings.Contains(results[2], "missing text") ||
		!strings.Contains(results[3], "notes/2026-03-02.md:1: RELIANCE gapped up 2%") {
		t.Fatalf("tool results:\n%s", strings.Join(results, "\n"))
	}
	// The third request carries both rounds' calls and results.
	reqs := p.requests()
	if n := len(reqs[2].Messages); n != 7 {
		t.Errorf("third request has %d messages, want user + 2x(assistant + 2 results)", n)
	}
}

func TestToolRoundsAreBounded(t *testing.T) {
	g := newLoopRig(t)
	loop := router.Response{ToolCalls: []router.ToolCall{call("c", "skill_read", `{}`)}}
	p := &playbook{steps: []router.Response{loop, loop, loop, loop, {Text: "forced answer", ToolCalls: loop.ToolCalls}}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}, MaxToolRounds: 2})
	reply, err := r.Send(context.Background(), triggers.Trigger{ID: "t1", Text: "loop"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := p.requests()
	if len(reqs) != 3 || len(reqs[0].Tools) == 0 || reqs[0].ToolChoice == router.ToolChoiceNone {
		t.Fatalf("%d requests; the first let the model call %d tools (tool choice %q)", len(reqs), len(reqs[0].Tools), reqs[0].ToolChoice)
	}
	// The last round still defines the tools, so that the conversation's
	// calls stay well formed, but lets the model call none.
	if last := reqs[2]; len(last.Tools) == 0 || last.ToolChoice != router.ToolChoiceNone {
		t.Fatalf("the last round defines %d tools with tool choice %q, want the tools and none", len(last.Tools), last.ToolChoice)
	}
	if reply.ToolCalls != 2 {
		t.Errorf("ran %d tools, want 2 (one per allowed round)", reply.ToolCalls)
	}
}

func TestCommandToolGetsArgumentsOnStdinAndNoSecrets(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "quote.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"args=$(cat) key=${OPENAI_API_KEY:-none} desk=$DESKD_DESK\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	quote := router.CommandTool{Name: "quote", Argv: []string{script}, Timeout: 5 * time.Second,
		Schema: json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}},"required":["symbol"]}`)}.Tool("main")
	out, err := quote.Run(context.Background(), json.RawMessage(`{"symbol":"TCS"}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != `args={"symbol":"TCS"} key=none desk=main` {
		t.Fatalf("tool output %q", out)
	}

	slow := router.CommandTool{Name: "slow", Argv: []string{"/bin/sh", "-c", "exec sleep 30"}, Timeout: 50 * time.Millisecond}.Tool("main")
	if _, err := slow.Run(context.Background(), json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("slow tool: %v", err)
	}
	big := router.CommandTool{Name: "big", Argv: []string{"/bin/sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x"}, MaxOutput: 100}.Tool("main")
	out, err = big.Run(context.Background(), json.RawMessage(`{}`))
	if err != nil || out != strings.Repeat("x", 100)+"\n[truncated: 100 of 5000 bytes kept]" {
		t.Fatalf("capped output %q, %v", out, err)
	}
	failing := router.CommandTool{Name: "fail", Argv: []string{"/bin/sh", "-c", "echo broker down >&2; exit 3"}}.Tool("main")
	if _, err := failing.Run(context.Background(), json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "broker down") {
		t.Fatalf("failing tool: %v", err)
	}
}

func TestBudgetsStopTurnsAndReserveLetsTheRolloverRun(t *testing.T) {
	g := newLoopRig(t)
	exceeded := eventtest.Watch[event.BudgetExceeded](t, g.bus)
	p := &playbook{steps: []router.Response{{Text: "ok", Usage: memory.Usage{InputTokens: 380, OutputTokens: 10}}}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}, Budgets: router.Budgets{DayTokens: 400}})
	g.send(r, "t1", "first")
	_, err := r.Send(context.Background(), triggers.Trigger{ID: "t2", Text: "second"})
	var be *router.BudgetError
	if !errors.As(err, &be) || be.Budget != "day_tokens" {
		t.Fatalf("second turn: %v, want the day_tokens budget", err)
	}
	if !strings.Contains(err.Error(), "resets at the next rollover") {
		t.Errorf("the refusal does not say when it resets: %v", err)
	}
	if e := eventtest.Next[event.BudgetExceeded](exceeded); e.Budget != "day_tokens" || e.Limit != 400 || e.Used != 390 {
		t.Errorf("budget.exceeded = %+v", e)
	}
	if r.Exchanges() != 1 {
		t.Errorf("exchanges = %d after a refused turn", r.Exchanges())
	}
	if _, err := r.Summarise(context.Background(), memory.Date{Year: 2026, Month: 3, Day: 2}); err != nil {
		t.Errorf("the summary could not use the reserve: %v", err)
	}
	// The next trading date resets the day's budget.
	g.clock.Advance(24 * time.Hour)
	if _, err := r.Send(context.Background(), triggers.Trigger{ID: "t3", Text: "next day"}); err != nil {
		t.Errorf("a turn on the next trading date: %v", err)
	}
}

func TestTurnBudgetStopsATurnBetweenToolRounds(t *testing.T) {
	g := newLoopRig(t)
	spin := router.Response{ToolCalls: []router.ToolCall{call("c", "skill_read", `{}`)}, Usage: memory.Usage{InputTokens: 400, OutputTokens: 10}}
	p := &playbook{steps: []router.Response{spin, spin, spin}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}, Budgets: router.Budgets{TurnTokens: 700}})
	_, err := r.Send(context.Background(), triggers.Trigger{ID: "t1", Text: "go"})
	var be *router.BudgetError
	if !errors.As(err, &be) || be.Budget != "turn_tokens" {
		t.Fatalf("Send = %v, want turn_tokens", err)
	}
	if n := len(p.requests()); n != 2 {
		t.Errorf("%d model calls, want 2 before the budget stopped the turn", n)
	}
}

func TestCompactionWritesACheckpointAndKeepsTheCurrentTurn(t *testing.T) {
	g := newLoopRig(t)
	p := &playbook{}
	note := router.BuiltinTools(g.folder, func() memory.Date { return g.day.DateOf(g.clock.Now()) })[:1]
	r := g.router(router.Settings{Route: []router.Model{model(p, 400)}, CompactShare: 0.5, Tools: note})
	long := strings.Repeat("tick ", 100) // about 125 tokens
	// The first two turns stay under half the window; the third passes it.
	for _, text := range []string{long, "short"} {
		if _, err := r.Send(context.Background(), triggers.Trigger{ID: text[:5], Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.requests()); n != 2 {
		t.Fatalf("%d calls before the window filled, want 2 (no compaction yet)", n)
	}
	before := len(g.sessionRecords(r))
	current := long + "the current turn"
	g.send(r, "now", current)
	var tasks []string
	for _, req := range p.requests() {
		tasks = append(tasks, string(req.Task))
	}
	if got := strings.Join(tasks, ","); !strings.Contains(got, "flush,compact,turn") {
		t.Fatalf("tasks = %s, want a flush then a compaction before the turn", got)
	}
	last := p.requests()[len(p.requests())-1]
	if len(last.Messages) != 1 || last.Messages[0].Text != current {
		t.Errorf("the turn after compaction carried %d messages: %+v", len(last.Messages), last.Messages)
	}
	if !strings.Contains(last.System, "checkpoint: compact") {
		t.Errorf("the system prompt does not carry the checkpoint:\n%s", last.System)
	}
	recs := g.sessionRecords(r)
	if len(recs) <= before {
		t.Fatal("records were lost")
	}
	var checkpoints, silent int
	for _, rec := range recs {
		if rec.Type == memory.RecordCheckpoint {
			checkpoints++
		}
		if rec.Silent {
			silent++
		}
	}
	if checkpoints != 1 || silent == 0 {
		t.Errorf("checkpoints %d, silent records %d", checkpoints, silent)
	}
	// A restart rebuilds the same: the checkpoint, then the current turn.
	c := router.Rebuild(recs)
	if c.Checkpoint != "checkpoint: compact" || c.Exchanges != 3 || len(c.History) != 2 {
		t.Errorf("rebuilt %+v", c)
	}
}

func TestDayMarkerWhenASessionSpansTheBoundary(t *testing.T) {
	g := newLoopRig(t)
	p := &playbook{}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}})
	g.send(r, "t1", "monday")
	g.clock.Advance(24 * time.Hour)
	for _, id := range []string{"t2", "t3"} {
		g.send(r, id, "tuesday")
	}
	var users []string
	for _, rec := range g.sessionRecords(r) {
		if rec.Role == router.RoleUser {
			users = append(users, rec.Text)
		}
	}
	want := "[deskd: a new trading day, 2026-03-03; it is now 09:30 IST. The turns above were on 2026-03-02 or before.]\ntuesday"
	if len(users) != 3 || users[0] != "monday" || users[1] != want || users[2] != "tuesday" {
		t.Fatalf("user messages:\n%s", strings.Join(users, "\n---\n"))
	}
}

func TestForkCarriesTheContext(t *testing.T) {
	g := newLoopRig(t)
	p := &playbook{}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}})
	g.send(r, "t1", "remember the gap")
	parent := r.SessionID()
	child, err := r.Fork(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if child == parent || r.Exchanges() != 1 {
		t.Fatalf("fork %s of %s, exchanges %d", child, parent, r.Exchanges())
	}
	recs := g.sessionRecords(r)
	if recs[0].Parent != parent {
		t.Errorf("child header parent = %q, want %q", recs[0].Parent, parent)
	}
	g.send(r, "t2", "and now?")
	last := p.requests()[len(p.requests())-1]
	if len(last.Messages) != 3 || last.Messages[0].Text != "remember the gap" {
		t.Errorf("the forked session's request: %+v", last.Messages)
	}
}
