package router

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router/routertest"
)

// checkAnthropicKey fails t unless r carries the key as the API takes it:
// an x-api-key header or a bearer token.
func checkAnthropicKey(t *testing.T, r routertest.Request) {
	t.Helper()
	if r.Header.Get("X-Api-Key") != fakeAPIKey && r.Header.Get("Authorization") != "Bearer "+fakeAPIKey {
		t.Errorf("request carries neither x-api-key nor a bearer token with the key: %v", r.Header)
	}
}

// The events of a Messages API stream, as the API sends them.
const (
	antStart = "event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-test-20260101","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":40,"cache_creation_input_tokens":8,"cache_read_input_tokens":1100,"output_tokens":1,"service_tier":"standard"}}}`
	antPing      = "event: ping\n" + `data: {"type": "ping"}`
	antTextStart = "event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	antStop0     = "event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}`
	antMsgStop   = "event: message_stop\n" + `data: {"type":"message_stop"}`
)

func antText(i int, s string) string {
	b, _ := json.Marshal(s)
	return "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":` + antInt(i) + `,"delta":{"type":"text_delta","text":` + string(b) + `}}`
}

func antDelta(stop string, out int) string {
	return "event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"` + stop + `","stop_sequence":null},"usage":{"output_tokens":` + antInt(out) + `}}`
}

func antInt(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestAnthropicStreamsReply(t *testing.T) {
	p, srv := newTestProvider(t, routertest.Messages, time.Minute, stream(antStart, antTextStart, antPing, antText(0, "Bought 10"), antText(0, " INFY."), antStop0,
		antDelta("end_turn", 15), antMsgStop))

	resp := mustComplete(t, p, Request{
		Task: TaskTurn, System: "You are a desk.",
		Messages: []Message{{Role: RoleUser, Text: "buy INFY"}},
	})
	checkTextReply(t, resp, Response{
		Text:       "Bought 10 INFY.",
		Usage:      memory.Usage{InputTokens: 40 + 8 + 1100, OutputTokens: 15, CachedTokens: 1100, CacheWriteTokens: 8},
		ModelID:    "claude-test-20260101",
		StopReason: "end_turn",
	})

	got := onlyRequest(t, srv)
	checkAnthropicKey(t, got)
	if got.Path != "/v1/messages" {
		t.Errorf("path = %q, want /v1/messages", got.Path)
	}
	if got.Header.Get("Anthropic-Version") == "" {
		t.Errorf("no anthropic-version header")
	}
	checkWire(t, got.Body, []wire{
		{[]any{"model"}, "claude-test"},
		{[]any{"stream"}, true},
		{[]any{"max_tokens"}, 2000.0},
		{[]any{"system", 0, "type"}, "text"},
		{[]any{"system", 0, "text"}, "You are a desk."},
		{[]any{"messages", 0, "role"}, "user"},
		{[]any{"messages", 0, "content", 0, "type"}, "text"},
		{[]any{"messages", 0, "content", 0, "text"}, "buy INFY"},
	})
}

func TestAnthropicToolCall(t *testing.T) {
	p, srv := newTestProvider(t, routertest.Messages, time.Minute, stream(antStart, antTextStart, antText(0, "Checking."), antStop0,
		"event: content_block_start\n"+`data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_quote","input":{}}}`,
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"symbol\": \"IN"}}`,
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"FY\"}"}}`,
		"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":1}`,
		"event: content_block_start\n"+`data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_02","name":"note","input":{}}}`,
		"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":2}`,
		antDelta("tool_use", 60), antMsgStop))

	resp := completeToolCalls(t, p, []Message{
		{Role: RoleUser, Text: "price?"},
		{Role: RoleAssistant, Text: "Looking.", ToolCalls: []ToolCall{
			{ID: "toolu_a", Name: "get_quote", Arguments: json.RawMessage(`{"symbol":"TCS"}`)},
			{ID: "toolu_b", Name: "note", Arguments: json.RawMessage(`{"text":"x"}`)},
		}},
		{Role: RoleTool, ToolCallID: "toolu_a", ToolName: "get_quote", Text: "TCS 4100"},
		{Role: RoleTool, ToolCallID: "toolu_b", ToolName: "note", Text: "disk full", IsError: true},
		{Role: RoleUser, Text: "and INFY?"},
	}, []ToolCall{
		{ID: "toolu_01", Name: "get_quote", Arguments: json.RawMessage(`{"symbol": "INFY"}`)},
		{ID: "toolu_02", Name: "note", Arguments: json.RawMessage(`{}`)},
	})
	if resp.Text != "Checking." || resp.StopReason != "tool_use" {
		t.Errorf("Text, StopReason = %q, %q; want Checking. and tool_use", resp.Text, resp.StopReason)
	}

	got := onlyRequest(t, srv)
	checkWire(t, got.Body, []wire{
		{[]any{"tools", 0, "name"}, "get_quote"},
		{[]any{"tools", 0, "description"}, "Last price of a symbol."},
		{[]any{"tools", 0, "input_schema", "type"}, "object"},
		{[]any{"tools", 0, "input_schema", "properties", "symbol", "type"}, "string"},
		{[]any{"tools", 0, "input_schema", "required", 0}, "symbol"},
		{[]any{"tools", 0, "input_schema", "additionalProperties"}, false},
		{[]any{"messages", 1, "role"}, "assistant"},
		{[]any{"messages", 1, "content", 0, "text"}, "Looking."},
		{[]any{"messages", 1, "content", 1, "type"}, "tool_use"},
		{[]any{"messages", 1, "content", 1, "id"}, "toolu_a"},
		{[]any{"messages", 1, "content", 1, "name"}, "get_quote"},
		{[]any{"messages", 1, "content", 1, "input", "symbol"}, "TCS"},
		// Both results and the next user text make one user turn.
		{[]any{"messages", 2, "role"}, "user"},
		{[]any{"messages", 2, "content", 0, "type"}, "tool_result"},
		{[]any{"messages", 2, "content", 0, "tool_use_id"}, "toolu_a"},
		{[]any{"messages", 2, "content", 0, "content"}, "TCS 4100"}, // the shorthand of its one text block
		{[]any{"messages", 2, "content", 1, "tool_use_id"}, "toolu_b"},
		{[]any{"messages", 2, "content", 1, "is_error"}, true},
		{[]any{"messages", 2, "content", 2, "type"}, "text"},
		{[]any{"messages", 2, "content", 2, "text"}, "and INFY?"},
		{[]any{"messages", 3}, nil},
	})
}

func antError(kind, msg string) string {
	return `{"type":"error","error":{"type":"` + kind + `","message":"` + msg + `"},"request_id":"req_011"}`
}

var anthropicFailures = []apiFailureCase{
	{
		name: "429 with Retry-After",
		reply: jsonError(429, antError("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
			"Retry-After", "12"),
		status: 429, retryable: true, retryAfter: 12 * time.Second, text: "rate_limit_error: Number of request tokens",
	},
	{
		name:   "500",
		reply:  jsonError(500, antError("api_error", "Internal server error")),
		status: 500, retryable: true, text: "Internal server error",
	},
	{
		name:   "529 overloaded",
		reply:  jsonError(529, antError("overloaded_error", "Overloaded")),
		status: 529, retryable: true, text: "Overloaded",
	},
	{
		name: "overloaded_error event mid-stream",
		reply: routertest.Reply{Events: []string{antStart, antTextStart, antText(0, "Bought"),
			"event: error\n" + `data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}},
		status: 529, retryable: true, text: "overloaded_error: Overloaded",
	},
	{
		name:   "400 prompt is too long",
		reply:  jsonError(400, antError("invalid_request_error", "prompt is too long: 208154 tokens > 200000 maximum")),
		status: 400, overflow: true, text: "prompt is too long",
	},
	{
		name:   "400 other",
		reply:  jsonError(400, antError("invalid_request_error", "messages: roles must alternate")),
		status: 400, text: "roles must alternate",
	},
	{
		name:   "403",
		reply:  jsonError(403, antError("permission_error", "Your API key does not have permission to use the specified resource.")),
		status: 403, text: "permission",
	},
	{
		name:      "stream ends before message_stop",
		reply:     routertest.Reply{Events: []string{antStart, antTextStart, antText(0, "Bought 10"), antStop0, antDelta("end_turn", 15)}},
		retryable: true, text: "before message_stop",
	},
	{
		name:      "connection cut mid-stream",
		reply:     routertest.Reply{Events: []string{antStart, antTextStart, antText(0, "Bought")}, Cut: true},
		retryable: true, text: "connection dropped",
	},
	{
		name:  "malformed JSON in the stream",
		reply: routertest.Reply{Events: []string{antStart, antTextStart, "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"`, antMsgStop}},
		text:  "malformed JSON",
	},
	{
		name:   "401 echoing the key",
		reply:  jsonError(401, antError("authentication_error", "invalid x-api-key: "+fakeAPIKey)),
		status: 401, text: "authentication_error",
	},
}

func TestAnthropicFailures(t *testing.T) {
	runAPIFailures(t, routertest.Messages, anthropicFailures, "claude", checkAnthropicKey)
}

func TestAnthropicTimeout(t *testing.T) {
	// A reply slower than the timeout.
	p, _ := newTestProvider(t, routertest.Messages, 50*time.Millisecond, routertest.Script(routertest.Reply{Events: []string{antStart, antTextStart}, Hang: true}))
	checkTimeout(t, p)
}

func TestAnthropicCallerCancels(t *testing.T) {
	started := make(chan struct{})
	p, _ := newTestProvider(t, routertest.Messages, time.Minute, routertest.Script(routertest.Reply{Events: []string{antStart}, Hang: true, Flushed: started}))
	checkCancelled(t, p, started)
}

func TestAnthropicIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-0000000000")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	srv := routertest.New(t, routertest.Messages, routertest.Options{
		Answer: stream(antStart, antTextStart, antText(0, "ok"), antStop0, antDelta("end_turn", 1), antMsgStop)})
	// A base URL ending in /v1 is the root the client wants, less /v1.
	p, err := NewAnthropic(AnthropicOptions{Name: "claude", BaseURL: srv.URL() + "/v1/", Model: "claude-test", APIKey: fakeAPIKey})
	if err != nil {
		t.Fatal(err)
	}
	_, got := sayHi(t, p, srv)
	if got.Path != "/v1/messages" {
		t.Errorf("path = %q, want /v1/messages", got.Path)
	}
	if strings.Contains(got.Header.Get("Authorization")+got.Header.Get("X-Api-Key"), "from-env") {
		t.Errorf("the key from the environment was sent")
	}
	if got.Body["max_tokens"] != float64(DefaultMaxOutputTokens) {
		t.Errorf("max_tokens = %v", got.Body["max_tokens"])
	}
}
