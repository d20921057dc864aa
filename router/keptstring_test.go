package router

import (
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/router/routertest"
)

// TestStreamKeepsIDAndModelAsSent: a chunk's id and model, and the texts
// of its deltas and tool calls, decode as JSON says, whether escaped,
// plain, invalid UTF-8 (replaced, as Unmarshal does) or null, and whether
// or not the chunk before had the same id; a chunk with another id than
// the first still breaks the stream.
func TestStreamKeepsIDAndModelAsSent(t *testing.T) {
	chunk := func(id, model, delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"id":` + id + `,"model":` + model + `,"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
	}
	p, _ := newTestProvider(t, routertest.ChatCompletions, time.Minute, stream(
		chunk(`"c1"`, `"gpt-\u00e9"`, `{"content":"a"}`, ""),
		chunk(`"c1"`, `"gpt-é"`, `{"content":"b"}`, ""),
		chunk(`"c\u0031"`, "\"gpt-\xff\"", `{"content":"c"}`, "stop"),
		"data: [DONE]"))
	resp, err := p.Complete(t.Context(), buyINFY)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Text != "abc" || resp.ModelID != "gpt-\uFFFD" {
		t.Errorf("Text, ModelID = %q, %q; want abc, gpt-\\uFFFD (the last chunk's model, its bad byte replaced)", resp.Text, resp.ModelID)
	}
	// The texts of deltas: plain, escaped, not UTF-8 (replaced), null.
	p, _ = newTestProvider(t, routertest.ChatCompletions, time.Minute, stream(
		chunk(`"c1"`, `"m"`, `{"content":"plain "}`, ""),
		chunk(`"c1"`, `"m"`, `{"content":"line\nnext \"q\" \u00e9 "}`, ""),
		chunk(`"c1"`, `"m"`, "{\"content\":\"bad \xff \"}", ""),
		chunk(`"c1"`, `"m"`, `{"content":null,"tool_calls":[{"index":0,"id":"call_a","function":{"name":"no\u0074e","arguments":"{\"text\":\"x\\ny\"}"}}]}`, "tool_calls"),
		"data: [DONE]"))
	resp, err = p.Complete(t.Context(), buyINFY)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if want := "plain line\nnext \"q\" é bad \uFFFD "; resp.Text != want {
		t.Errorf("Text = %q, want %q", resp.Text, want)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "note" || string(resp.ToolCalls[0].Arguments) != `{"text":"x\ny"}` {
		t.Errorf("ToolCalls = %+v, want note with {\"text\":\"x\\ny\"}", resp.ToolCalls)
	}
	p, _ = newTestProvider(t, routertest.ChatCompletions, time.Minute, stream(
		chunk(`"c1"`, `"m"`, `{"content":"a"}`, ""),
		chunk(`"c2"`, `"m"`, `{"content":"b"}`, "stop"),
		"data: [DONE]"))
	if _, err := p.Complete(t.Context(), buyINFY); err == nil || !strings.Contains(err.Error(), "does not continue the answer") {
		t.Errorf("a chunk of another id: err = %v, want the malformed stream", err)
	}
}
