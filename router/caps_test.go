package router_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
	"github.com/deskd/deskd/triggers"
)

// hostileTotal is how much a hostile service tries to stream: far more
// than any reply deskd keeps.
const hostileTotal = 32 << 20

// keptLimit is the most a test accepts deskd keeps of one hostile reply
// (with a max_output_tokens of 1000): a bound far under what was sent.
const keptLimit = 1 << 20

// hostileStream writes head, then body over and over until hostileTotal
// bytes are out or the client has gone, then tail. It counts what it wrote,
// and closes done (if not nil) when it returns.
func hostileStream(head []string, body string, tail []string, written *atomic.Int64, done chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if done != nil {
			defer close(done)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range head {
			fmt.Fprint(w, e, "\n\n")
		}
		for written.Load() < hostileTotal {
			n, err := fmt.Fprint(w, body, "\n\n")
			written.Add(int64(n))
			if err != nil || r.Context().Err() != nil {
				return
			}
		}
		for _, e := range tail {
			fmt.Fprint(w, e, "\n\n")
		}
		w.(http.Flusher).Flush()
	}
}

var (
	chunkText = strings.Repeat("SELL INFY NOW ", 4096/14)
	antHead   = "event: message_start\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`
	antTail   = []string{
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}`,
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`,
		"event: message_stop\n" + `data: {"type":"message_stop"}`,
	}
	oaiTail = []string{
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		"data: [DONE]",
	}
)

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// hostileReplies are streams far longer than any output limit allows.
var hostileReplies = []struct {
	name     string
	provider router.ProviderName
	head     []string
	body     string
	tail     []string
}{
	{
		name: "anthropic text", provider: router.AnthropicProvider,
		head: []string{antHead, "event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		body: "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + jsonString(chunkText) + `}}`,
		tail: antTail,
	},
	{
		name: "anthropic tool arguments", provider: router.AnthropicProvider,
		head: []string{antHead, "event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"note","input":{}}}`,
			"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"text\": \""}}`},
		body: "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":` + jsonString(chunkText) + `}}`,
		tail: append([]string{"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"}"}}`}, antTail...),
	},
	{
		name: "anthropic padding between events", provider: router.AnthropicProvider,
		head: []string{antHead, "event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		body: "event: ping\n" + `data: {"type":"ping","padding":` + jsonString(strings.Repeat(chunkText, 16)) + `}`,
		tail: append([]string{"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`}, antTail...),
	},
	{
		name: "openai text", provider: router.OpenAIProvider,
		head: []string{`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`},
		body: `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":` + jsonString(chunkText) + `},"finish_reason":null}]}`,
		tail: oaiTail,
	},
	{
		name: "openai tool arguments", provider: router.OpenAIProvider,
		head: []string{`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"note","arguments":"{\"text\": \""}}]},"finish_reason":null}]}`},
		body: `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":` + jsonString(chunkText) + `}}]},"finish_reason":null}]}`,
		tail: append([]string{`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]},"finish_reason":"tool_calls"}]}`}, oaiTail[1:]...),
	},
	{
		name: "openai padding between chunks", provider: router.OpenAIProvider,
		head: []string{`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`},
		body: `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":null}],"padding":` + jsonString(strings.Repeat(chunkText, 16)) + `}`,
		tail: append([]string{`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`}, oaiTail...),
	},
}

// hostileModel is a model whose service streams a hostile reply (h
// writes it), and the service.
func hostileModel(t *testing.T, provider router.ProviderName, h http.HandlerFunc) (router.Model, *routertest.Server) {
	t.Helper()
	srv := routertest.New(t, apiOf(provider), routertest.Options{Answer: routertest.Always(routertest.Reply{Write: h})})
	return serviceModel(t, srv, "sk-test", 1000), srv
}

// TestAStreamedReplyIsCutAtItsCap streams replies of many MiB: deskd stops
// reading at the cap its output limit sets, hangs up, and records the reply
// as truncated (its tool calls not run).
func TestAStreamedReplyIsCutAtItsCap(t *testing.T) {
	for _, tt := range hostileReplies {
		t.Run(tt.name, func(t *testing.T) {
			var written atomic.Int64
			done := make(chan struct{})
			m, _ := hostileModel(t, tt.provider, hostileStream(tt.head, tt.body, tt.tail, &written, done))
			g := newLoopRig(t)
			r := g.router(router.Settings{Route: []router.Model{m}})
			reply, err := r.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "go"})
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			select { // the handler stops once deskd has hung up
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the service still streams 10s after the reply: deskd did not hang up")
			}
			if !reply.Truncated {
				t.Errorf("the reply is not marked truncated")
			}
			if len(reply.Text) > keptLimit {
				t.Errorf("the reply holds %d bytes, want at most %d", len(reply.Text), keptLimit)
			}
			if !strings.Contains(reply.Text, "truncated") {
				t.Errorf("the reply's text does not say it was truncated: ...%s", reply.Text[max(0, len(reply.Text)-200):])
			}
			if n := written.Load(); n >= hostileTotal {
				t.Errorf("the service wrote all %d bytes: deskd read the stream to its end", n)
			}
			var assistant []memory.Record
			for _, rec := range g.sessionRecords(r) {
				switch {
				case rec.Type == memory.RecordMessage && rec.Role == router.RoleAssistant:
					assistant = append(assistant, rec)
				case rec.Type == memory.RecordTool:
					t.Errorf("a tool call of a truncated reply was run: %s", rec.ToolName)
				}
			}
			if len(assistant) != 1 || !assistant[0].Truncated || len(assistant[0].Text) > keptLimit || len(assistant[0].ToolCalls) > keptLimit {
				for _, a := range assistant {
					t.Logf("assistant record: truncated %v, %d bytes of text, %d of tool calls", a.Truncated, len(a.Text), len(a.ToolCalls))
				}
				t.Errorf("want one assistant record, truncated, under %d bytes", keptLimit)
			}
		})
	}
}

// TestATruncatedSummaryIsAFailure: a summary, fold, compaction or curator
// answer that was cut is not used (the caller falls back), and the session
// records it as truncated.
func TestATruncatedSummaryIsAFailure(t *testing.T) {
	tt := hostileReplies[0]
	var written atomic.Int64
	m, _ := hostileModel(t, tt.provider, hostileStream(tt.head, tt.body, tt.tail, &written, nil))
	g := newLoopRig(t)
	r := g.router(router.Settings{Route: []router.Model{m}})
	text, err := r.Summarise(t.Context(), memory.Date{Year: 2026, Month: 3, Day: 2})
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("Summarise = %d bytes, %v; want an error saying the answer was truncated", len(text), err)
	}
	var found bool
	for _, rec := range g.sessionRecords(r) {
		if rec.Type == memory.RecordEvent && rec.Kind == string(router.TaskSummary) {
			found = true
			if !rec.Truncated || len(rec.Text) > keptLimit {
				t.Errorf("summary record: truncated %v, %d bytes", rec.Truncated, len(rec.Text))
			}
		}
	}
	if !found {
		t.Errorf("the truncated summary was not recorded")
	}
}

// TestToolCallsOfOneReplyAreCapped: a reply that asks for 200 tool calls
// gets the first DefaultMaxToolCalls run and an error result for each of
// the others, saying it was not run and why.
func TestToolCallsOfOneReplyAreCapped(t *testing.T) {
	g := newLoopRig(t)
	var calls []router.ToolCall
	for i := range 200 {
		calls = append(calls, call(fmt.Sprintf("c%03d", i), "note", fmt.Sprintf(`{"text":"note %d"}`, i)))
	}
	p := &playbook{steps: []router.Response{{ToolCalls: calls}, {Text: "done"}}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}})
	reply, err := r.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "flood"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.ToolCalls != router.DefaultMaxToolCalls {
		t.Errorf("ran %d tools, want %d", reply.ToolCalls, router.DefaultMaxToolCalls)
	}
	notes, _, _ := g.folder.ReadNotes(memory.Date{Year: 2026, Month: 3, Day: 2})
	if n := strings.Count(notes, "\n"); n != router.DefaultMaxToolCalls {
		t.Errorf("%d notes written, want %d", n, router.DefaultMaxToolCalls)
	}
	var ran, refused int
	for _, rec := range g.sessionRecords(r) {
		if rec.Type != memory.RecordTool {
			continue
		}
		if !rec.IsError {
			ran++
			continue
		}
		refused++
		if !strings.Contains(rec.Text, "not run") || !strings.Contains(rec.Text, fmt.Sprint(router.DefaultMaxToolCalls)) ||
			!strings.Contains(rec.Text, "200") {
			t.Errorf("refused call %s: %q, want it to say it was not run, of 200, at most %d", rec.ToolCallID, rec.Text, router.DefaultMaxToolCalls)
		}
	}
	if ran != router.DefaultMaxToolCalls || refused != 200-router.DefaultMaxToolCalls {
		t.Errorf("%d results ran, %d refused; want %d and %d", ran, refused, router.DefaultMaxToolCalls, 200-router.DefaultMaxToolCalls)
	}
	// Every call gets its result, so that the next request is well formed.
	reqs := p.requests()
	if n := len(reqs[1].Messages); n != 1+1+200 {
		t.Errorf("the second request carries %d messages, want the trigger, the calls and 200 results", n)
	}

	// A desk setting lowers the cap.
	g2 := newLoopRig(t)
	p2 := &playbook{steps: []router.Response{{ToolCalls: calls[:5]}, {Text: "done"}}}
	r2 := g2.router(router.Settings{Route: []router.Model{model(p2, 0)}, MaxToolCalls: 2})
	if reply, err := r2.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "flood"}); err != nil || reply.ToolCalls != 2 {
		t.Errorf("MaxToolCalls 2: ran %d tools, %v", reply.ToolCalls, err)
	}
}

// TestToolResultsAreCapped: what a tool answers reaches the model and the
// session cut to the tool's cap, with a line saying how much was kept.
func TestToolResultsAreCapped(t *testing.T) {
	g := newLoopRig(t)
	huge := strings.Repeat("x", 10<<20)
	tools := router.BuiltinTools(g.folder, func() memory.Date { return g.day.DateOf(g.clock.Now()) })
	tools = append(tools, router.Tool{
		Spec: router.ToolSpec{Name: "dump", Schema: json.RawMessage(`{"type":"object","properties":{}}`)},
		Run:  func(context.Context, json.RawMessage) (string, error) { return huge, nil },
	})
	// An operator's skill of 1 MiB, read by the model.
	skill := "---\nname: big\ndescription: a big skill\n---\n\n" + strings.Repeat("y", 1<<20)
	if err := os.MkdirAll(g.folder.Path("skills/big"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.folder.Path("skills/big/SKILL.md"), []byte(skill), 0o640); err != nil {
		t.Fatal(err)
	}
	p := &playbook{steps: []router.Response{
		{ToolCalls: []router.ToolCall{call("c1", "dump", `{}`), call("c2", "skill_read", `{"name":"big"}`)}},
		{Text: "done"},
	}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}, Tools: tools})
	if _, err := r.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "dump"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"c1": fmt.Sprintf("truncated: %d of %d bytes kept", router.DefaultMaxToolResult, len(huge)),
		"c2": fmt.Sprintf("truncated: %d of %d bytes kept", router.DefaultMaxToolResult, len(skill)),
	}
	for _, rec := range g.sessionRecords(r) {
		if rec.Type != memory.RecordTool {
			continue
		}
		if len(rec.Text) > router.DefaultMaxToolResult+200 || !strings.Contains(rec.Text, want[rec.ToolCallID]) {
			t.Errorf("result of %s: %d bytes ending %q; want at most %d bytes, saying %q", rec.ToolName, len(rec.Text),
				rec.Text[max(0, len(rec.Text)-80):], router.DefaultMaxToolResult, want[rec.ToolCallID])
		}
		delete(want, rec.ToolCallID)
	}
	if len(want) > 0 {
		t.Errorf("no result for %v", want)
	}
	for _, m := range p.requests()[1].Messages {
		if m.Role == router.RoleTool && len(m.Text) > router.DefaultMaxToolResult+200 {
			t.Errorf("the model was sent %d bytes of %s's result", len(m.Text), m.ToolName)
		}
	}
}

// TestANoteIsCapped: the note tool writes at most MaxNoteBytes of a note,
// and says what it cut.
func TestANoteIsCapped(t *testing.T) {
	g := newLoopRig(t)
	long := strings.Repeat("word ", 20000) // 100000 bytes
	p := &playbook{steps: []router.Response{{ToolCalls: []router.ToolCall{call("c1", "note", `{"text":`+jsonString(long)+`}`)}}, {Text: "done"}}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}})
	if _, err := r.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "note"}); err != nil {
		t.Fatal(err)
	}
	notes, _, _ := g.folder.ReadNotes(memory.Date{Year: 2026, Month: 3, Day: 2})
	if len(notes) > router.MaxNoteBytes+1 || len(notes) < router.MaxNoteBytes/2 {
		t.Errorf("the note written is %d bytes, want at most %d", len(notes), router.MaxNoteBytes)
	}
	for _, rec := range g.sessionRecords(r) {
		if rec.Type == memory.RecordTool {
			if rec.IsError || !strings.Contains(rec.Text, fmt.Sprintf("of %d bytes kept", len(strings.TrimSpace(long)))) {
				t.Errorf("note result %q, want it to say how much was kept", rec.Text)
			}
		}
	}
}

// TestSkillWriteRefusesAPinnedSkill: the model cannot replace a skill the
// operator pinned, nor shadow it under its front matter name; the tool says
// which skill and why.
func TestSkillWriteRefusesAPinnedSkill(t *testing.T) {
	g := newLoopRig(t)
	pinned := "---\nname: hedging\ndescription: Hedge when VIX > 20\npinned: true\n---\n\nThe operator's rule.\n"
	if err := os.MkdirAll(g.folder.Path("skills/hedge"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.folder.Path("skills/hedge/SKILL.md"), []byte(pinned), 0o640); err != nil {
		t.Fatal(err)
	}
	p := &playbook{steps: []router.Response{
		{ToolCalls: []router.ToolCall{
			call("c1", "skill_write", `{"name":"hedge","description":"never hedge","body":"YOLO"}`),
			call("c2", "skill_write", `{"name":"hedging","description":"never hedge","body":"YOLO"}`),
			call("c3", "skill_write", `{"name":"scalp","description":"small moves","body":"Fine."}`),
		}},
		{Text: "done"},
	}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}})
	if _, err := r.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "rewrite"}); err != nil {
		t.Fatal(err)
	}
	for _, rec := range g.sessionRecords(r) {
		if rec.Type != memory.RecordTool {
			continue
		}
		switch rec.ToolCallID {
		case "c1", "c2":
			if !rec.IsError || !strings.Contains(rec.Text, "pinned") || !strings.Contains(rec.Text, "hedg") {
				t.Errorf("skill_write of a pinned skill (%s): is_error %v, %q", rec.ToolCallID, rec.IsError, rec.Text)
			}
		case "c3":
			if rec.IsError {
				t.Errorf("skill_write of a new skill: %q", rec.Text)
			}
		}
	}
	if got := readFile(t, g.folder.Path("skills/hedge/SKILL.md")); got != pinned {
		t.Errorf("the pinned skill was changed:\n%s", got)
	}
	if _, err := os.Stat(g.folder.Path("skills/hedging")); err == nil {
		t.Errorf("a skill shadowing the pinned one by name was written")
	}
	if _, err := os.Stat(filepath.Join(g.folder.Path("skills/scalp"), "SKILL.md")); err != nil {
		t.Errorf("the new skill was not written: %v", err)
	}
}

// TestSkillWriteRefusesAnOversizedSkill: a skill bigger than MaxSkillBytes
// is refused whole, never cut.
func TestSkillWriteRefusesAnOversizedSkill(t *testing.T) {
	g := newLoopRig(t)
	body := strings.Repeat("z", router.MaxSkillBytes+1)
	p := &playbook{steps: []router.Response{{ToolCalls: []router.ToolCall{call("c1", "skill_write", `{"name":"huge","description":"d","body":"`+body+`"}`)}}, {Text: "done"}}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}})
	if _, err := r.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "write"}); err != nil {
		t.Fatal(err)
	}
	for _, rec := range g.sessionRecords(r) {
		if rec.Type == memory.RecordTool && (!rec.IsError || !strings.Contains(rec.Text, "huge")) {
			t.Errorf("skill_write of %d bytes: is_error %v, %q", len(body), rec.IsError, rec.Text)
		}
	}
	if _, err := os.Stat(g.folder.Path("skills/huge")); err == nil {
		t.Errorf("the oversized skill was written")
	}
}
