package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
	"github.com/deskd/deskd/triggers"
)

// This file runs every kind of request deskd sends against httptest
// servers that speak the Messages API and the Chat Completions API and
// enforce the rules the real services enforce on a conversation with tool
// calls; a request that breaks one is answered 400 with the service's own
// wording, which deskd does not retry.

// step is one answer of a fake service: a tool call when the request lets
// the model call tools, else a text (tool-call steps become "ok").
type step = routertest.Reply

func callStep(tool, args string) step {
	return step{ToolCalls: []routertest.ToolCall{{Name: tool, Args: args}}}
}
func textStep(text string) step { return step{Text: text} }

// newRuleServer starts a strict fake service of provider (one that refuses
// a request breaking the service's rules with the service's 400) that
// answers the requests it accepts with script, a step each, and returns it
// with a model of it.
func newRuleServer(t *testing.T, provider router.ProviderName, script ...step) (*routertest.Server, router.Model) {
	t.Helper()
	next := routertest.Script(script...)
	srv := routertest.New(t, apiOf(provider), routertest.Options{Strict: true, Answer: func(r routertest.Request) routertest.Reply {
		if st := next(r); len(st.ToolCalls) == 0 || r.MayCallTools() {
			return st
		}
		return textStep("ok")
	}})
	m := serviceModel(t, srv, "sk-test", 1000)
	m.ContextWindow = 200000
	return srv, m
}

// ruleDesk is a router over a fresh desk folder (a loopRig), talking to a
// strict fake service.
type ruleDesk struct {
	*loopRig
	server *routertest.Server
	router *router.Router
}

func newRuleDesk(t *testing.T, provider router.ProviderName, s ruleSettings, script ...step) *ruleDesk {
	t.Helper()
	srv, m := newRuleServer(t, provider, script...)
	if s.ContextWindow > 0 {
		m.ContextWindow = s.ContextWindow
	}
	g := newLoopRig(t)
	s.Route = []router.Model{m}
	s.Instructions = "You run a test desk."
	return &ruleDesk{loopRig: g, server: srv, router: g.router(s.Settings)}
}

func (d *ruleDesk) send(id, text string) router.Reply {
	d.t.Helper()
	reply, err := d.router.Send(d.t.Context(), triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Market, Text: text})
	if err != nil {
		d.t.Fatalf("Send(%s): %v", id, err)
	}
	return reply
}

func (d *ruleDesk) records() []memory.Record {
	d.t.Helper()
	return d.sessionRecords(d.router)
}

// failedEvents returns the "*.failed" event records of the session.
func (d *ruleDesk) failedEvents() []string {
	var out []string
	for _, rec := range d.records() {
		if rec.Type == memory.RecordEvent && strings.HasSuffix(rec.Kind, ".failed") {
			out = append(out, rec.Kind+": "+rec.Text)
		}
	}
	return out
}

// ruleSettings are the router settings of one case, with the model's
// context window.
type ruleSettings struct {
	router.Settings
	ContextWindow int
}

// toolTurn is a first turn that calls the note tool once, then answers.
var toolTurn = []step{callStep("note", `{"text":"RELIANCE gapped up"}`), textStep("noted")}

func script(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// requestKinds are the kinds of request deskd sends, each after a turn
// that called a tool, so that the request carries tool calls and results.
var requestKinds = []struct {
	name     string
	settings ruleSettings
	script   []step
	run      func(t *testing.T, d *ruleDesk)
}{
	{
		name:   "turn",
		script: script(toolTurn, []step{textStep("second answer")}),
		run: func(t *testing.T, d *ruleDesk) {
			d.send("t1", "RELIANCE opens")
			if reply := d.send("t2", "and now?"); reply.Text != "second answer" {
				t.Errorf("second turn answered %q", reply.Text)
			}
		},
	},
	{
		name:   "tool round",
		script: script(toolTurn, []step{callStep("memory_search", `{"query":"reliance"}`), textStep("found it")}),
		run: func(t *testing.T, d *ruleDesk) {
			d.send("t1", "RELIANCE opens")
			if reply := d.send("t2", "what did you note?"); reply.Text != "found it" || reply.ToolCalls != 1 {
				t.Errorf("tool round: reply %q, %d tool calls", reply.Text, reply.ToolCalls)
			}
		},
	},
	{
		name:     "round after max_tool_rounds",
		settings: ruleSettings{Settings: router.Settings{MaxToolRounds: 1}},
		script:   []step{callStep("note", `{"text":"one"}`), callStep("note", `{"text":"two"}`)},
		run: func(t *testing.T, d *ruleDesk) {
			reply := d.send("t1", "keep calling")
			if reply.ToolCalls != 1 {
				t.Errorf("ran %d tools, want 1", reply.ToolCalls)
			}
			reqs := d.server.Requests()
			if last := reqs[len(reqs)-1]; last.MayCallTools() {
				t.Errorf("the round after max_tool_rounds lets the model call tools: tools %v, tool_choice %v", last.Body["tools"], last.Body["tool_choice"])
			}
		},
	},
	{
		name:   "summary",
		script: script(toolTurn, []step{textStep("the day's summary")}),
		run: func(t *testing.T, d *ruleDesk) {
			d.send("t1", "RELIANCE opens")
			text, err := d.router.Summarise(t.Context(), memory.Date{Year: 2026, Month: 3, Day: 2})
			if err != nil || text != "the day's summary" {
				t.Errorf("Summarise = %q, %v", text, err)
			}
		},
	},
	{
		name:   "fold",
		script: script(toolTurn, []step{textStep("# Memory\n\n- RELIANCE gaps fill.\n")}),
		run: func(t *testing.T, d *ruleDesk) {
			d.send("t1", "RELIANCE opens")
			text, err := d.router.Fold(t.Context(), memory.Date{Year: 2026, Month: 3, Day: 2}, "# Memory\n", "RELIANCE gapped up\n")
			if err != nil || !strings.Contains(text, "gaps fill") {
				t.Errorf("Fold = %q, %v", text, err)
			}
		},
	},
	{
		name:     "flush",
		settings: ruleSettings{Settings: router.Settings{CompactShare: 0.5}, ContextWindow: 100},
		script:   script(toolTurn, []step{callStep("note", `{"text":"keep this"}`), textStep("NO_REPLY"), textStep("checkpoint"), textStep("after")}),
		run: func(t *testing.T, d *ruleDesk) {
			d.send("t1", "RELIANCE opens")
			d.send("t2", "the window is full")
			var silentTools int
			for _, rec := range d.records() {
				if rec.Silent && rec.Type == memory.RecordTool && !rec.IsError {
					silentTools++
				}
			}
			if silentTools != 1 {
				t.Errorf("the flush ran %d note calls, want 1", silentTools)
			}
		},
	},
	{
		name:     "compaction",
		settings: ruleSettings{Settings: router.Settings{CompactShare: 0.5}, ContextWindow: 100},
		script:   script(toolTurn, []step{textStep("NO_REPLY"), textStep("the checkpoint"), textStep("after")}),
		run: func(t *testing.T, d *ruleDesk) {
			d.send("t1", "RELIANCE opens")
			d.send("t2", "the window is full")
			var checkpoints []string
			for _, rec := range d.records() {
				if rec.Type == memory.RecordCheckpoint {
					checkpoints = append(checkpoints, rec.Text)
				}
			}
			if len(checkpoints) != 1 || checkpoints[0] != "the checkpoint" {
				t.Errorf("checkpoints %q, want one: the checkpoint", checkpoints)
			}
		},
	},
	{
		name:   "curator",
		script: script(toolTurn, []step{textStep(`{"operations": [{"op": "keep", "skill": "vwap", "reason": "fine"}]}`)}),
		run: func(t *testing.T, d *ruleDesk) {
			d.send("t1", "RELIANCE opens")
			if _, err := d.folder.WriteSkill("vwap", "---\nname: vwap\ndescription: VWAP entries\n---\n\nBody.\n"); err != nil {
				t.Fatal(err)
			}
			rev := curator.Reviewer{Folder: d.folder, Model: d.router, Now: d.clock.Now}
			if _, err := rev.Review(t.Context(), memory.Date{Year: 2026, Month: 3, Day: 2}, d.router.SessionID()); err != nil {
				t.Errorf("Review: %v", err)
			}
			if n := d.server.Count(); n != 3 {
				t.Errorf("%d requests, want 3 (two for the turn, one for the review)", n)
			}
		},
	},
}

// TestEveryRequestKindKeepsTheServicesRules sends every kind of request
// deskd makes to each provider's fake service, which answers a request that
// breaks its rules with the real service's 400: none may.
func TestEveryRequestKindKeepsTheServicesRules(t *testing.T) {
	for _, provider := range []router.ProviderName{router.AnthropicProvider, router.OpenAIProvider} {
		for _, k := range requestKinds {
			t.Run(string(provider)+"/"+k.name, func(t *testing.T) {
				d := newRuleDesk(t, provider, k.settings, k.script...)
				k.run(t, d)
				for _, p := range d.server.Refused() {
					t.Errorf("the %s service refused a request: %s", provider, p)
				}
				if failed := d.failedEvents(); len(failed) > 0 {
					t.Errorf("failures recorded in the session:\n%s", strings.Join(failed, "\n"))
				}
			})
		}
	}
}

// TestRuleServersRefuseBrokenRequests shows that the fake services do
// enforce their rules: each broken request is refused, through the
// providers' own clients.
func TestRuleServersRefuseBrokenRequests(t *testing.T) {
	use := router.Message{Role: router.RoleAssistant, ToolCalls: []router.ToolCall{{ID: "c1", Name: "note", Arguments: json.RawMessage(`{}`)}}}
	result := router.Message{Role: router.RoleTool, ToolCallID: "c1", ToolName: "note", Text: "noted"}
	stray := router.Message{Role: router.RoleTool, ToolCallID: "c9", ToolName: "note", Text: "noted"}
	user := router.Message{Role: router.RoleUser, Text: "go"}
	note := router.ToolSpec{Name: "note", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}
	cases := []struct {
		name      string
		provider  router.ProviderName
		req       router.Request
		wantError string
	}{
		{"anthropic: first message is the assistant's", router.AnthropicProvider,
			router.Request{Messages: []router.Message{{Role: router.RoleAssistant, Text: "hi"}, user}}, "first message"},
		{"anthropic: two assistant messages in a row", router.AnthropicProvider,
			router.Request{Messages: []router.Message{user, {Role: router.RoleAssistant, Text: "a"}, {Role: router.RoleAssistant, Text: "b"}, user}}, "alternate"},
		{"anthropic: a tool_result that answers no tool_use", router.AnthropicProvider,
			router.Request{Messages: []router.Message{user, use, result, stray}, Tools: []router.ToolSpec{note}}, "unexpected `tool_use_id`"},
		{"anthropic: a tool_use without its result", router.AnthropicProvider,
			router.Request{Messages: []router.Message{user, use, user}, Tools: []router.ToolSpec{note}}, "without `tool_result`"},
		{"openai: a tool message that answers no tool_call", router.OpenAIProvider,
			router.Request{Messages: []router.Message{user, use, result, stray}, Tools: []router.ToolSpec{note}}, "role 'tool'"},
		{"openai: a tool_call without its answer", router.OpenAIProvider,
			router.Request{Messages: []router.Message{user, use, user}, Tools: []router.ToolSpec{note}}, "did not have response messages"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, m := newRuleServer(t, tt.provider)
			_, err := m.Client.Complete(context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantError) || !strings.Contains(err.Error(), "400") {
				t.Errorf("Complete = %v, want a 400 saying %q", err, tt.wantError)
			}
		})
	}
	// tool_choice none with tools is a request the services accept.
	for _, provider := range []router.ProviderName{router.AnthropicProvider, router.OpenAIProvider} {
		_, m := newRuleServer(t, provider)
		_, err := m.Client.Complete(context.Background(), router.Request{Messages: []router.Message{user, use, result, user},
			Tools: []router.ToolSpec{note}, ToolChoice: router.ToolChoiceNone})
		if err != nil {
			t.Errorf("%s: a well-formed request with tools and tool choice none was refused: %v", provider, err)
		}
	}
}

// TestProvidersDefineTheToolsAConversationCalled: a request whose
// messages carry tool calls but that defines no tools (or not those) is
// sent with a stub of each tool called, and, when it defines none of its
// own, with tool choice none: the provider, where the wire request is
// built, keeps every caller within the services' rules.
func TestProvidersDefineTheToolsAConversationCalled(t *testing.T) {
	quote := router.ToolSpec{Name: "quote", Schema: json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}}}`)}
	msgs := []router.Message{
		{Role: router.RoleUser, Text: "price?"},
		{Role: router.RoleAssistant, ToolCalls: []router.ToolCall{{ID: "c1", Name: "removed_tool", Arguments: json.RawMessage(`{}`)}}},
		{Role: router.RoleTool, ToolCallID: "c1", ToolName: "removed_tool", Text: "TCS 4100"},
		{Role: router.RoleUser, Text: "summarise"},
	}
	for _, provider := range []router.ProviderName{router.AnthropicProvider, router.OpenAIProvider} {
		for _, tt := range []struct {
			name     string
			tools    []router.ToolSpec
			callable bool
		}{
			{"no tools of its own", nil, false},
			{"other tools", []router.ToolSpec{quote}, true},
		} {
			t.Run(string(provider)+"/"+tt.name, func(t *testing.T) {
				s, m := newRuleServer(t, provider)
				if _, err := m.Client.Complete(context.Background(), router.Request{Messages: msgs, Tools: tt.tools}); err != nil {
					t.Fatalf("Complete: %v", err)
				}
				req := s.Requests()[0]
				var names []string
				tools, _ := req.Body["tools"].([]any)
				for _, tool := range tools {
					name := routertest.JSONAt(tool, "name") // Messages API
					if name == nil {
						name = routertest.JSONAt(tool, "function", "name") // Chat Completions
					}
					names = append(names, fmt.Sprint(name))
				}
				if !slices.Contains(names, "removed_tool") {
					t.Errorf("tools %v do not define the tool the conversation called", names)
				}
				if got := req.MayCallTools(); got != tt.callable {
					t.Errorf("the model may call tools: %v, want %v (tool_choice %v)", got, tt.callable, req.Body["tool_choice"])
				}
			})
		}
	}
}
