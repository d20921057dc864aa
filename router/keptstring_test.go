package router

import (
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/router/routertest"
)

// TestStreamKeepsIDAndModelAsSent: a chunk's id and model decode as JSON
// says, whether escaped, plain or invalid UTF-8 (replaced, as Unmarshal
// does), and whether or not the chunk before had the same text; a chunk
// with another id than the first still breaks the stream.
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
	p, _ = newTestProvider(t, routertest.ChatCompletions, time.Minute, stream(
		chunk(`"c1"`, `"m"`, `{"content":"a"}`, ""),
		chunk(`"c2"`, `"m"`, `{"content":"b"}`, "stop"),
		"data: [DONE]"))
	if _, err := p.Complete(t.Context(), buyINFY); err == nil || !strings.Contains(err.Error(), "does not continue the answer") {
		t.Errorf("a chunk of another id: err = %v, want the malformed stream", err)
	}
}
