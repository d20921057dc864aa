package router

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchRequest is a turn's request at a 1,000-message session: user
// turns, assistant answers with tool calls, tool results, and ten tools.
func benchRequest() Request {
	req := Request{Task: TaskTurn, System: strings.Repeat("Standing instructions of the desk. ", 60), CacheKey: "deskd-bench"}
	for i := range 10 {
		req.Tools = append(req.Tools, ToolSpec{Name: fmt.Sprintf("tool_%d", i), Description: "A tool of the desk that does one thing.",
			Schema: json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string","description":"the symbol"},"qty":{"type":"integer"}},"required":["symbol"]}`)})
	}
	for len(req.Messages) < 999 {
		n := len(req.Messages)
		req.Messages = append(req.Messages,
			Message{Role: RoleUser, Text: fmt.Sprintf("[trigger %d] The market moved: INFY 1520.5, TCS 4100.25. What now? ", n) + strings.Repeat("context ", 10)},
			Message{Role: RoleAssistant, Text: "Checking the quote.", ToolCalls: []ToolCall{{ID: fmt.Sprintf("call_%d", n), Name: "tool_1", Arguments: json.RawMessage(`{"symbol":"INFY","qty":10}`)}}},
			Message{Role: RoleTool, ToolCallID: fmt.Sprintf("call_%d", n), ToolName: "tool_1", Text: `{"symbol":"INFY","price":1520.5,"at":"2026-03-02T10:00:00+05:30"}`},
			Message{Role: RoleAssistant, Text: "Holding: the position is within its limits. " + strings.Repeat("reasoning ", 12)},
		)
	}
	req.Messages = req.Messages[:999]
	req.Prefix = len(req.Messages)
	req.Messages = append(req.Messages, Message{Role: RoleUser, Text: "the new turn"})
	return req
}

// BenchmarkWireRequest encodes a 1,000-message request: "cached" is the written
// body at a later call, with every message of the history encoded by an
// earlier one and only the new turn's message to encode, and "cold" the
// written body with no message cached.
func BenchmarkWireRequest(b *testing.B) {
	oai, err := NewOpenAI(OpenAIOptions{Name: "fast", BaseURL: "http://127.0.0.1:1/v1", Model: "gpt-test", MaxOutputTokens: 2000})
	if err != nil {
		b.Fatal(err)
	}
	ant, err := NewAnthropic(AnthropicOptions{Name: "claude", BaseURL: "http://127.0.0.1:1", Model: "claude-test", MaxOutputTokens: 2000})
	if err != nil {
		b.Fatal(err)
	}
	type provider struct {
		name   string
		body   func(*wireBody, Request) ([]byte, error)
		bodies *bodies
	}
	// encode writes req's body as p does at a call, in a buffer of its
	// pool, and returns the body's size. (No b.Helper: it would be timed.)
	encode := func(b *testing.B, p provider, req Request) int64 {
		buf := p.bodies.get()
		defer p.bodies.put(buf)
		body, err := p.body(buf, req)
		if err != nil {
			b.Fatal(err)
		}
		return int64(len(body))
	}
	for _, p := range []provider{
		{"openai", oai.body, oai.bodies},
		{"anthropic", ant.body, ant.bodies},
	} {
		b.Run(p.name+"/cached", func(b *testing.B) {
			req := benchRequest()
			history := req.Messages[:len(req.Messages)-1]
			withWireCaches(history)
			encode(b, p, req) // the earlier calls
			b.ReportAllocs()
			for b.Loop() {
				req.Messages[len(req.Messages)-1] = Message{Role: RoleUser, Text: "the new turn", wire: newWireCache()}
				b.SetBytes(encode(b, p, req))
			}
		})
		b.Run(p.name+"/cold", func(b *testing.B) {
			req := benchRequest()
			b.ReportAllocs()
			for b.Loop() {
				b.SetBytes(encode(b, p, req))
			}
		})
	}
}
