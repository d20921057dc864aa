package router

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router/routertest"
)

const oaiChunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-test-2026-01-15","system_fingerprint":"fp_1","choices":[%s],"usage":null}`

func oaiDelta(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return fmt.Sprintf(oaiChunk, fmt.Sprintf(`{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}`, delta, f))
}

const oaiUsage = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-test-2026-01-15","system_fingerprint":"fp_1","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":7,"total_tokens":1207,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`

// checkBearerKey fails t unless r carries the key as a bearer token.
func checkBearerKey(t *testing.T, r routertest.Request) {
	t.Helper()
	if a := r.Header.Get("Authorization"); a != "Bearer "+fakeAPIKey {
		t.Errorf("Authorization = %q, want the bearer key", a)
	}
}

func TestOpenAIStreamsReply(t *testing.T) {
	p, srv := newTestProvider(t, routertest.ChatCompletions, time.Minute, stream(
		oaiDelta(`{"role":"assistant","content":"","refusal":null}`, ""),
		oaiDelta(`{"content":"Bought 10"}`, ""),
		oaiDelta(`{"content":" INFY."}`, ""),
		oaiDelta(`{}`, "stop"),
		oaiUsage,
		"data: [DONE]"))

	resp := mustComplete(t, p, Request{
		Task: TaskTurn, System: "You are a desk.", MaxOutputTokens: 500,
		Messages: []Message{{Role: RoleUser, Text: "buy INFY"}},
	})
	checkTextReply(t, resp, Response{
		Text:       "Bought 10 INFY.",
		Usage:      memory.Usage{InputTokens: 1200, OutputTokens: 7, CachedTokens: 1024},
		ModelID:    "gpt-test-2026-01-15",
		StopReason: "stop",
	})

	got := onlyRequest(t, srv)
	if got.Path != "/v1/chat/completions" {
		t.Errorf("path = %q, want /v1/chat/completions", got.Path)
	}
	checkBearerKey(t, got)
	checkWire(t, got.Body, []wire{
		{[]any{"model"}, "gpt-test"},
		{[]any{"stream"}, true},
		{[]any{"stream_options", "include_usage"}, true},
		{[]any{"max_completion_tokens"}, 500.0},
		{[]any{"messages", 0, "role"}, "system"},
		{[]any{"messages", 0, "content"}, "You are a desk."},
		{[]any{"messages", 1, "role"}, "user"},
		{[]any{"messages", 1, "content"}, "buy INFY"},
	})
	if got.Body["tools"] != nil {
		t.Errorf("request has tools %v, want none", got.Body["tools"])
	}
}

func TestOpenAIToolCall(t *testing.T) {
	p, srv := newTestProvider(t, routertest.ChatCompletions, time.Minute, stream(
		oaiDelta(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_q1","type":"function","function":{"name":"get_quote","arguments":""}}]}`, ""),
		oaiDelta(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"sym"}}]}`, ""),
		oaiDelta(`{"tool_calls":[{"index":0,"function":{"arguments":"bol\":\"INFY\"}"}}]}`, ""),
		oaiDelta(`{"tool_calls":[{"index":1,"id":"call_n2","type":"function","function":{"name":"note","arguments":"{}"}}]}`, ""),
		oaiUsage, // some servers send the usage before the finish
		oaiDelta(`{}`, "tool_calls"),
		"data: [DONE]"))

	resp := completeToolCalls(t, p, []Message{
		{Role: RoleUser, Text: "price?"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_0", Name: "get_quote", Arguments: json.RawMessage(`{"symbol":"TCS"}`)}}},
		{Role: RoleTool, ToolCallID: "call_0", ToolName: "get_quote", Text: "TCS 4100"},
		{Role: RoleTool, ToolCallID: "call_x", ToolName: "note", Text: "disk full", IsError: true},
	}, []ToolCall{
		{ID: "call_q1", Name: "get_quote", Arguments: json.RawMessage(`{"symbol":"INFY"}`)},
		{ID: "call_n2", Name: "note", Arguments: json.RawMessage(`{}`)},
	})
	if resp.StopReason != "tool_calls" || resp.Text != "" {
		t.Errorf("StopReason, Text = %q, %q; want tool_calls and no text", resp.StopReason, resp.Text)
	}
	if want := (memory.Usage{InputTokens: 1200, OutputTokens: 7, CachedTokens: 1024}); resp.Usage != want {
		t.Errorf("Usage = %+v, want %+v", resp.Usage, want)
	}

	got := onlyRequest(t, srv)
	checkWire(t, got.Body, []wire{
		{[]any{"tools", 0, "type"}, "function"},
		{[]any{"tools", 0, "function", "name"}, "get_quote"},
		{[]any{"tools", 0, "function", "description"}, "Last price of a symbol."},
		{[]any{"tools", 0, "function", "parameters", "properties", "symbol", "type"}, "string"},
		{[]any{"tools", 0, "function", "parameters", "required", 0}, "symbol"},
		{[]any{"messages", 1, "role"}, "assistant"},
		{[]any{"messages", 1, "tool_calls", 0, "id"}, "call_0"},
		{[]any{"messages", 1, "tool_calls", 0, "type"}, "function"},
		{[]any{"messages", 1, "tool_calls", 0, "function", "name"}, "get_quote"},
		{[]any{"messages", 1, "tool_calls", 0, "function", "arguments"}, `{"symbol":"TCS"}`},
		{[]any{"messages", 2, "role"}, "tool"},
		{[]any{"messages", 2, "tool_call_id"}, "call_0"},
		{[]any{"messages", 2, "content"}, "TCS 4100"},
		{[]any{"messages", 3, "content"}, "Error: disk full"},
	})
}

var openAIFailures = []apiFailureCase{
	{
		name: "429 with Retry-After seconds",
		reply: jsonError(429, `{"error":{"message":"Rate limit reached for gpt-test on tokens per min (TPM): Limit 30000, Used 30000.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			"Retry-After", "7"),
		status: 429, retryable: true, retryAfter: 7 * time.Second, text: "Rate limit reached",
	},
	{
		name: "429 with retry-after-ms",
		reply: jsonError(429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`,
			"Retry-After-Ms", "1500", "Retry-After", "2"),
		status: 429, retryable: true, retryAfter: 1500 * time.Millisecond, text: "Rate limit reached",
	},
	{
		name:   "500",
		reply:  jsonError(500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`),
		status: 500, retryable: true, text: "server had an error",
	},
	{
		name:   "502 from a proxy, not JSON",
		reply:  jsonError(502, "<html><head><title>502 Bad Gateway</title></head>\n<body>nginx</body></html>", "Content-Type", "text/html"),
		status: 502, retryable: true, text: "502 Bad Gateway",
	},
	{
		name:   "400 context overflow",
		reply:  jsonError(400, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`),
		status: 400, overflow: true, text: "maximum context length",
	},
	{
		name:   "400 context overflow from llama.cpp",
		reply:  jsonError(400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`),
		status: 400, overflow: true, text: "context size",
	},
	{
		name:   "400 other",
		reply:  jsonError(400, `{"error":{"message":"Invalid schema for function 'get_quote'.","type":"invalid_request_error","param":"tools[0]","code":"invalid_function_parameters"}}`),
		status: 400, text: "Invalid schema",
	},
	{
		name:   "404 unknown model (Ollama)",
		reply:  jsonError(404, `{"error":{"message":"model \"gpt-test\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`),
		status: 404, text: "not found",
	},
	{
		name:   "503 overloaded",
		reply:  jsonError(503, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}`),
		status: 503, retryable: true, text: "overloaded",
	},
	{
		name:      "stream ends before finish_reason",
		reply:     routertest.Reply{Events: []string{oaiDelta(`{"role":"assistant","content":"Bought"}`, ""), oaiDelta(`{"content":" 10"}`, "")}},
		retryable: true, text: "before its finish_reason",
	},
	{
		name:      "connection cut mid-stream",
		reply:     routertest.Reply{Events: []string{oaiDelta(`{"role":"assistant","content":"Bought"}`, "")}, Cut: true},
		retryable: true, text: "connection dropped",
	},
	{
		name:  "malformed JSON in the stream",
		reply: routertest.Reply{Events: []string{oaiDelta(`{"role":"assistant","content":"Bought"}`, ""), `data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"x"}`, "data: [DONE]"}},
		text:  "malformed JSON",
	},
	{
		name: "error object in the stream",
		reply: routertest.Reply{Events: []string{oaiDelta(`{"role":"assistant","content":"Bought"}`, ""),
			`data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`}},
		retryable: true, text: "server had an error",
	},
	{
		name:      "200 that is not a stream",
		reply:     jsonError(200, `{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`),
		retryable: true, text: "no stream chunk",
	},
	{
		name:   "401 echoing the key",
		reply:  jsonError(401, `{"error":{"message":"Incorrect API key provided: `+fakeAPIKey+`. You can find your API key at https://platform.openai.com/account/api-keys. (request had Authorization: Bearer `+fakeAPIKey+`)","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
		status: 401, text: "Incorrect API key provided",
	},
}

func TestOpenAIFailures(t *testing.T) {
	runAPIFailures(t, routertest.ChatCompletions, openAIFailures, "fast", checkBearerKey)
}

func TestOpenAITimeout(t *testing.T) {
	// A reply slower than the timeout.
	p, _ := newTestProvider(t, routertest.ChatCompletions, 50*time.Millisecond, routertest.Script(routertest.Reply{
		Events: []string{oaiDelta(`{"role":"assistant","content":"Thinking"}`, "")}, Hang: true}))
	checkTimeout(t, p)
}

func TestOpenAICallerCancels(t *testing.T) {
	started := make(chan struct{})
	never := make(chan struct{})
	p, _ := newTestProvider(t, routertest.ChatCompletions, time.Minute, func(routertest.Request) routertest.Reply {
		close(started)
		return routertest.Reply{Hold: never} // until the caller goes
	})
	checkCancelled(t, p, started)
}

func TestOpenAIConnectionRefused(t *testing.T) {
	srv := routertest.New(t, routertest.ChatCompletions, routertest.Options{})
	url := srv.BaseURL()
	srv.Close()
	p, err := NewOpenAI(OpenAIOptions{Name: "local", BaseURL: url, Model: "llama", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(t.Context(), Request{Messages: []Message{{Role: RoleUser, Text: "hi"}}})
	var ae *APIError
	if !errors.As(err, &ae) || !ae.Retryable || ae.Status != 0 {
		t.Fatalf("Complete = %v, want a retryable *APIError with no status", err)
	}
	if !strings.HasPrefix(err.Error(), "model local: connection failed") {
		t.Errorf("error = %q", err)
	}
}

func TestOpenAINoKeyNoAuthorization(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", fakeAPIKey) // must not be picked up
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	// No usage chunk in this stream.
	srv := routertest.New(t, routertest.ChatCompletions, routertest.Options{
		Answer: stream(oaiDelta(`{"role":"assistant","content":"ok"}`, "stop"), "data: [DONE]")})
	p, err := NewOpenAI(OpenAIOptions{Name: "ollama", BaseURL: srv.BaseURL(), Model: "qwen3"})
	if err != nil {
		t.Fatal(err)
	}
	resp, got := sayHi(t, p, srv)
	if a := got.Header.Get("Authorization"); a != "" {
		t.Errorf("Authorization = %q, want none", a)
	}
	if _, ok := got.Body["max_completion_tokens"]; ok {
		t.Errorf("max_completion_tokens sent without a cap: %v", got.Body["max_completion_tokens"])
	}
	if resp.Usage != (memory.Usage{}) {
		t.Errorf("Usage = %+v without a usage chunk, want zero", resp.Usage)
	}
}

func TestNewOpenAIRejects(t *testing.T) {
	for _, o := range []OpenAIOptions{
		{Name: "a", BaseURL: "http://localhost:8000/v1"},   // no model
		{Name: "a", BaseURL: "localhost:8000", Model: "m"}, // no scheme
		{Name: "a", BaseURL: "ftp://h/v1", Model: "m"},     // not http
		{Name: "a", BaseURL: "http://h/v1", Model: "m", MaxOutputTokens: -1},
	} {
		if _, err := NewOpenAI(o); err == nil {
			t.Errorf("NewOpenAI(%+v) = nil error", o)
		}
	}
}
