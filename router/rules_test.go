package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// This file runs every kind of request deskd sends against httptest
// servers that speak the Messages API and the Chat Completions API and
// enforce the rules the real services enforce on a conversation with tool
// calls; a request that breaks one is answered 400 with the service's own
// wording, which deskd does not retry.

// step is one answer of a fake service: a tool call when the request lets
// the model call tools, else a text (tool-call steps become "ok").
type step struct {
	tool, args string
	text       string
}

func callStep(tool, args string) step { return step{tool: tool, args: args} }
func textStep(text string) step       { return step{text: text} }

// ruleServer is a fake model service that checks every request it gets.
type ruleServer struct {
	t        *testing.T
	provider router.ProviderName // router.AnthropicProvider or router.OpenAIProvider

	mu       sync.Mutex
	script   []step
	bodies   []map[string]any
	problems []string
	calls    int
}

func newRuleServer(t *testing.T, provider router.ProviderName, script ...step) (*ruleServer, router.Model) {
	t.Helper()
	s := &ruleServer{t: t, provider: provider, script: script}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	m := router.Model{Name: string(provider), Provider: provider, ContextWindow: 200000}
	var err error
	switch provider {
	case router.AnthropicProvider:
		m.Client, err = router.NewAnthropic(router.AnthropicOptions{Name: string(provider), BaseURL: srv.URL, Model: "claude-test",
			APIKey: "sk-test", MaxOutputTokens: 1000, Timeout: time.Minute, HTTPClient: srv.Client()})
	case router.OpenAIProvider:
		m.Client, err = router.NewOpenAI(router.OpenAIOptions{Name: string(provider), BaseURL: srv.URL + "/v1", Model: "gpt-test",
			APIKey: "sk-test", MaxOutputTokens: 1000, Timeout: time.Minute, HTTPClient: srv.Client()})
	}
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

func (s *ruleServer) serve(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	var body map[string]any
	if err == nil {
		err = json.Unmarshal(b, &body)
	}
	if err != nil {
		s.t.Errorf("request body: %v", err)
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	var problems []string
	if s.provider == router.AnthropicProvider {
		problems = anthropicProblems(body)
	} else {
		problems = openAIProblems(body)
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.problems = append(s.problems, problems...)
	var st step
	if len(problems) == 0 && len(s.script) > 0 {
		st, s.script = s.script[0], s.script[1:]
	}
	s.calls++
	n := s.calls
	s.mu.Unlock()
	if len(problems) > 0 {
		msg, _ := json.Marshal(problems[0])
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		if s.provider == router.AnthropicProvider {
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%s}}`, msg)
		} else {
			fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","param":"messages","code":null}}`, msg)
		}
		return
	}
	if st.tool != "" && !mayCallTools(s.provider, body) {
		st = textStep("ok")
	}
	if st.tool == "" && st.text == "" {
		st.text = "ok"
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range streamOf(s.provider, st, n) {
		fmt.Fprint(w, e, "\n\n")
	}
	w.(http.Flusher).Flush()
}

// requests returns the bodies of every request so far.
func (s *ruleServer) requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

func (s *ruleServer) broken() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// mayCallTools reports whether the request defines tools and lets the
// model call them.
func mayCallTools(provider router.ProviderName, body map[string]any) bool {
	tools, _ := body["tools"].([]any)
	if len(tools) == 0 {
		return false
	}
	if provider == router.AnthropicProvider {
		return jsonPath(body, "tool_choice", "type") != "none"
	}
	return body["tool_choice"] != "none"
}

// streamOf is the event stream of one answer.
func streamOf(provider router.ProviderName, st step, n int) []string {
	if provider == router.AnthropicProvider {
		out := []string{"event: message_start\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`}
		stop := "end_turn"
		if st.tool != "" {
			stop = "tool_use"
			args, _ := json.Marshal(st.args)
			out = append(out,
				"event: content_block_start\n"+fmt.Sprintf(`data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_%02d","name":%q,"input":{}}}`, n, st.tool),
				"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+string(args)+`}}`)
		} else {
			text, _ := json.Marshal(st.text)
			out = append(out,
				"event: content_block_start\n"+`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(text)+`}}`)
		}
		return append(out,
			"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":0}`,
			"event: message_delta\n"+`data: {"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":5}}`,
			"event: message_stop\n"+`data: {"type":"message_stop"}`)
	}
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-test","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
	}
	if st.tool != "" {
		args, _ := json.Marshal(st.args)
		return []string{
			chunk(fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_%02d","type":"function","function":{"name":%q,"arguments":%s}}]}`, n, st.tool, args), ""),
			chunk(`{}`, "tool_calls"),
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
			"data: [DONE]",
		}
	}
	text, _ := json.Marshal(st.text)
	return []string{
		chunk(`{"role":"assistant","content":`+string(text)+`}`, ""),
		chunk(`{}`, "stop"),
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
		"data: [DONE]",
	}
}

// jsonPath digs into decoded JSON: keys for objects, ints for arrays.
func jsonPath(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// blocks returns a Messages API message's content as blocks (a string
// content is one text block).
func blocks(m map[string]any) []map[string]any {
	switch c := m["content"].(type) {
	case string:
		return []map[string]any{{"type": "text", "text": c}}
	case []any:
		var out []map[string]any
		for _, b := range c {
			bm, _ := b.(map[string]any)
			out = append(out, bm)
		}
		return out
	}
	return nil
}

// anthropicProblems checks a Messages API request as the service does:
// the first message is the user's and the roles alternate; text blocks are
// not blank; every tool_result answers a tool_use of the assistant message
// just before it, and every tool_use is answered by tool_result blocks at
// the start of the next message; a request with tool_use or tool_result
// blocks defines tools; tool_choice, if any, is one the API knows.
func anthropicProblems(body map[string]any) []string {
	var out []string
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return []string{"messages: at least one message is required"}
	}
	toolBlocks := false
	var prevRole string
	var prevUses []string
	for i, raw := range msgs {
		m, _ := raw.(map[string]any)
		role, _ := m["role"].(string)
		if i == 0 && role != "user" {
			out = append(out, `messages: first message must use the "user" role`)
		}
		if i > 0 && role == prevRole {
			out = append(out, fmt.Sprintf(`messages: roles must alternate between "user" and "assistant", but found multiple %q roles in a row`, role))
		}
		bs := blocks(m)
		if len(bs) == 0 {
			out = append(out, fmt.Sprintf("messages.%d: all messages must have non-empty content", i))
		}
		var uses []string
		answered := map[string]bool{}
		leading := true
		for j, b := range bs {
			switch b["type"] {
			case "text":
				leading = false
				if s, _ := b["text"].(string); strings.TrimSpace(s) == "" {
					out = append(out, fmt.Sprintf("messages.%d.content.%d.text: text content blocks must contain non-whitespace text", i, j))
				}
			case "tool_use":
				toolBlocks = true
				leading = false
				id, _ := b["id"].(string)
				uses = append(uses, id)
			case "tool_result":
				toolBlocks = true
				id, _ := b["tool_use_id"].(string)
				if !contains(prevUses, id) || role != "user" {
					out = append(out, fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
						"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id))
				}
				if leading {
					answered[id] = true
				}
			default:
				leading = false
			}
		}
		var missing []string
		for _, id := range prevUses {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
				"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", ")))
		}
		prevRole, prevUses = role, uses
	}
	if len(prevUses) > 0 {
		out = append(out, fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
			"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(msgs)-1, strings.Join(prevUses, ", ")))
	}
	tools, _ := body["tools"].([]any)
	if toolBlocks && len(tools) == 0 {
		out = append(out, "Requests which include `tool_use` or `tool_result` blocks must define tools.")
	}
	if tc, ok := body["tool_choice"]; ok {
		switch jsonPath(tc, "type") {
		case "auto", "any", "tool", "none":
		default:
			out = append(out, fmt.Sprintf("tool_choice: unknown type %v", jsonPath(tc, "type")))
		}
	}
	return out
}

// openAIProblems checks a Chat Completions request as the service does: a
// "tool" message answers a tool_call id of the assistant message before it
// (other tool messages between them), every tool_call of an assistant
// message is answered before the next message of another role, and
// tool_choice is set only with tools.
func openAIProblems(body map[string]any) []string {
	var out []string
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return []string{"[] is too short - 'messages'"}
	}
	var open []string // the tool_call ids of the last assistant message not answered yet
	var calls []string
	inTools := false
	for i, raw := range msgs {
		m, _ := raw.(map[string]any)
		role, _ := m["role"].(string)
		if role == "tool" {
			id, _ := m["tool_call_id"].(string)
			if !inTools || !contains(calls, id) {
				out = append(out, fmt.Sprintf("Invalid parameter: messages[%d]: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", i))
			}
			open = remove(open, id)
			continue
		}
		if len(open) > 0 {
			out = append(out, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "+
				"The following tool_call_ids did not have response messages: "+strings.Join(open, ", "))
		}
		open, calls, inTools = nil, nil, false
		if role == "assistant" {
			tcs, _ := m["tool_calls"].([]any)
			for _, tc := range tcs {
				id, _ := jsonPath(tc, "id").(string)
				calls = append(calls, id)
			}
			open = append(open, calls...)
			inTools = len(calls) > 0
		}
	}
	if len(open) > 0 {
		out = append(out, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "+
			"The following tool_call_ids did not have response messages: "+strings.Join(open, ", "))
	}
	tools, _ := body["tools"].([]any)
	if tc, ok := body["tool_choice"]; ok && len(tools) == 0 {
		out = append(out, fmt.Sprintf("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified (got %v).", tc))
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func remove(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// ruleDesk is a router over a fresh desk folder, talking to a ruleServer.
type ruleDesk struct {
	t      *testing.T
	server *ruleServer
	router *router.Router
	folder *memory.Folder
	clock  *clock.Fake
	day    memory.TradingDay
}

func newRuleDesk(t *testing.T, provider router.ProviderName, s ruleSettings, script ...step) *ruleDesk {
	t.Helper()
	srv, m := newRuleServer(t, provider, script...)
	if s.ContextWindow > 0 {
		m.ContextWindow = s.ContextWindow
	}
	ist, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	c := clock.NewFake(time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC)) // 09:30 IST
	f, err := memory.OpenFolder(filepath.Join(t.TempDir(), "desks", "main"), "main", c.Now)
	if err != nil {
		t.Fatal(err)
	}
	bus := event.New()
	t.Cleanup(bus.Close)
	day := memory.TradingDay{Location: ist}
	s.Route = []router.Model{m}
	s.Instructions = "You run a test desk."
	s.Tools = router.BuiltinTools(f, func() memory.Date { return day.DateOf(c.Now()) })
	r, err := router.New(router.Options{Desk: "main", Folder: f, Clock: c, Day: day, Bus: bus, Settings: s.Settings})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RestoreSession(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &ruleDesk{t: t, server: srv, router: r, folder: f, clock: c, day: day}
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
	recs, err := d.folder.ReadSession(d.router.SessionID())
	if err != nil {
		d.t.Fatal(err)
	}
	return recs
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
			last := d.server.requests()[len(d.server.requests())-1]
			if mayCallTools(d.server.provider, last) {
				t.Errorf("the round after max_tool_rounds lets the model call tools: tools %v, tool_choice %v", last["tools"], last["tool_choice"])
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
			if n := len(d.server.requests()); n != 3 {
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
				for _, p := range d.server.broken() {
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
				body := s.requests()[0]
				var names []string
				tools, _ := body["tools"].([]any)
				for _, tool := range tools {
					name := jsonPath(tool, "name") // Messages API
					if name == nil {
						name = jsonPath(tool, "function", "name") // Chat Completions
					}
					names = append(names, fmt.Sprint(name))
				}
				if !contains(names, "removed_tool") {
					t.Errorf("tools %v do not define the tool the conversation called", names)
				}
				if got := mayCallTools(provider, body); got != tt.callable {
					t.Errorf("the model may call tools: %v, want %v (tool_choice %v)", got, tt.callable, body["tool_choice"])
				}
			})
		}
	}
}
