package router

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router/routertest"
)

// routerModules are the modules the router's build needs besides the
// standard library and deskd: none of them is a model provider's SDK.
// A module added here adds its compile to every first build (issue 23:
// the two provider SDKs were two thirds of it): measure it first
// (BENCHMARKS.md).
var routerModules = []string{
	"github.com/asaskevich/EventBus",
	"github.com/deskd/deskd",
	"github.com/fsnotify/fsnotify",
	"github.com/gofrs/flock",
	"github.com/mattn/go-colorable",
	"github.com/mattn/go-isatty",
	"github.com/robfig/cron/v3",
	"github.com/rs/zerolog",
	"golang.org/x/sys",
}

// TestRouterBuildsWithoutAProviderSDK lists the modules of the router's
// build (go list -deps): only routerModules, so that no provider SDK (or
// other module) comes back into deskd's first build unmeasured.
func TestRouterBuildsWithoutAProviderSDK(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the build's modules")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	seen := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		if !seen[m] && !slices.Contains(routerModules, m) {
			t.Errorf("the router's build needs module %s, which is not one of routerModules", m)
		}
		seen[m] = true
	}
}

// TestStreamsAreReadAsServicesFrameThem streams answers framed in every
// way Server-Sent Events allow and the services use: comment lines
// (keep-alives), CRLF line ends, an event split over data lines, a line
// longer than the reader's buffer, pings, and tool calls whose deltas
// interleave; the answer is the same as with plain framing.
func TestStreamsAreReadAsServicesFrameThem(t *testing.T) {
	long := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB, past the reader's buffer
	crlf := func(ev string) string { return strings.ReplaceAll(ev, "\n", "\r\n") + "\r" }
	// completeFramed returns p's answer to buyINFY, failing t unless it
	// is the one both services stream: the text "Buying <long> now." and
	// the calls get_quote (id quote) and note (id note).
	completeFramed := func(t *testing.T, p Provider, quote, note string) Response {
		t.Helper()
		resp := mustComplete(t, p, buyINFY)
		if want := "Buying " + long + " now."; resp.Text != want {
			t.Errorf("Text is %d bytes (%.40q...), want %d", len(resp.Text), resp.Text, len(want))
		}
		checkToolCalls(t, resp.ToolCalls, []ToolCall{
			{ID: quote, Name: "get_quote", Arguments: json.RawMessage(`{"symbol":"INFY"}`)},
			{ID: note, Name: "note", Arguments: json.RawMessage(`{"text":"x"}`)},
		})
		return resp
	}
	oaiCall := func(index int, id, name, args string) string {
		c := map[string]any{"index": index, "function": map[string]string{"name": name, "arguments": args}}
		if id != "" {
			c["id"], c["type"] = id, "function"
		}
		b, _ := json.Marshal(map[string]any{"tool_calls": []any{c}})
		return oaiDelta(string(b), "")
	}
	t.Run("openai", func(t *testing.T) {
		p, _ := newTestProvider(t, routertest.ChatCompletions, time.Minute, stream(
			": keep-alive",
			crlf(oaiDelta(`{"role":"assistant","content":"Buying "}`, "")),
			oaiDelta(`{"content":`+jsonText(long)+`}`, ""),
			// One event whose data is split over two lines.
			strings.Replace(oaiDelta(`{"content":" now."}`, ""), `"choices"`, "\ndata: \"choices\"", 1),
			oaiCall(0, "call_a", "get_quote", `{"sym`),
			oaiCall(1, "call_b", "note", `{"te`),
			oaiCall(0, "", "", `bol":"INFY"}`),
			oaiCall(1, "", "", `xt":"x"}`),
			oaiDelta(`{}`, "tool_calls"),
			": another comment\n"+oaiUsage,
			"data: [DONE]"))
		resp := completeFramed(t, p, "call_a", "call_b")
		if want := (memory.Usage{InputTokens: 1200, OutputTokens: 7, CachedTokens: 1024}); resp.Usage != want || resp.StopReason != "tool_calls" {
			t.Errorf("Usage, StopReason = %+v, %q; want %+v, tool_calls", resp.Usage, resp.StopReason, want)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		toolStart := func(i int, id, name string) string {
			return "event: content_block_start\n" + `data: {"type":"content_block_start","index":` + antInt(i) + `,"content_block":{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":{}}}`
		}
		toolDelta := func(i int, part string) string {
			return "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":` + antInt(i) + `,"delta":{"type":"input_json_delta","partial_json":` + jsonText(part) + `}}`
		}
		p, _ := newTestProvider(t, routertest.Messages, time.Minute, stream(
			": keep-alive",
			crlf(antStart),
			antPing,
			crlf(antTextStart),
			antText(0, "Buying "),
			antText(0, long),
			strings.Replace(antText(0, " now."), `"delta"`, "\ndata: \"delta\"", 1),
			antStop0,
			toolStart(1, "toolu_a", "get_quote"),
			toolStart(2, "toolu_b", "note"),
			toolDelta(1, `{"sym`),
			toolDelta(2, `{"te`),
			toolDelta(1, `bol":"INFY"}`),
			toolDelta(2, `xt":"x"}`),
			"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":1}`,
			"event: content_block_stop\n"+`data: {"type":"content_block_stop","index":2}`,
			antPing,
			// The final usage: message_delta's counts replace message_start's.
			"event: message_delta\n"+`data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":70,"cache_read_input_tokens":1200}}`,
			crlf(antMsgStop)))
		resp := completeFramed(t, p, "toolu_a", "toolu_b")
		want := memory.Usage{InputTokens: 40 + 8 + 1200, OutputTokens: 70, CachedTokens: 1200, CacheWriteTokens: 8}
		if resp.Usage != want || resp.StopReason != "tool_use" || resp.ModelID != "claude-test-20260101" {
			t.Errorf("Usage, StopReason, ModelID = %+v, %q, %q; want %+v, tool_use, claude-test-20260101", resp.Usage, resp.StopReason, resp.ModelID, want)
		}
	})
}

// jsonText is s as a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAnthropicToolEncodingIsStable encodes a tool whose schema has many
// keywords besides type, properties and required, in many clients: every
// body is the same, byte for byte, so that the service's prompt cache
// finds the tools' prefix after a restart too.
func TestAnthropicToolEncodingIsStable(t *testing.T) {
	tool := ToolSpec{Name: "order", Description: "Place an order.", Schema: json.RawMessage(
		`{"type":"object","properties":{"qty":{"type":"integer"}},"required":["qty"],"additionalProperties":false,"$schema":"https://json-schema.org/draft/2020-12/schema","title":"Order","description":"An order.","minProperties":1,"$defs":{"side":{"enum":["buy","sell"]}}}`)}
	var first []byte
	for i := range 40 {
		p, srv := newTestProvider(t, routertest.Messages, time.Minute, routertest.Always(routertest.Reply{Text: "ok"}))
		if _, err := p.Complete(t.Context(), Request{Task: TaskTurn, Tools: []ToolSpec{tool}, Messages: []Message{{Role: RoleUser, Text: "hi"}}}); err != nil {
			t.Fatal(err)
		}
		body := onlyRequest(t, srv).Raw
		if i == 0 {
			first = body
			continue
		}
		if !bytes.Equal(body, first) {
			t.Fatalf("client %d sent\n%s\nclient 0 sent\n%s", i, body, first)
		}
	}
}
