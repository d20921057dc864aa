package mcphost_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/desk/mcptest"
)

func TestResultText(t *testing.T) {
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"texts joined", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, "a\nb"},
		{"image described", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "chart:"},
			&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)}}}, "chart:\n[image image/png, 1234 bytes]"},
		{"audio described", &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 7)}}},
			"[audio audio/wav, 7 bytes]"},
		{"resource link", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///r.csv", Name: "r"}}}, "[resource link file:///r.csv]"},
		{"embedded text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "x:a", Text: "inside"}}}}, "inside"},
		{"structured without text", &mcp.CallToolResult{StructuredContent: map[string]any{"price": 101.25}}, `{"price":101.25}`},
		{"structured with text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "t"}}, StructuredContent: map[string]any{"p": 1}}, "t"},
	}
	for _, tt := range tests {
		if got := mcphost.ResultText(tt.res); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestBadToolNamesAreLeftOut: a tool whose full name is not a valid tool
// name (here: too long, for a long server name) is not offered, and the
// notes say why.
func TestBadToolNamesAreLeftOut(t *testing.T) {
	r := newRig(t)
	srv := mcptest.Stdio(t)
	srv.Name = strings.Repeat("s", 50)
	r.serve(srv)
	ts := r.toolset(srv.Name, "echo", "place_order")
	if got := names(ts.Tools()); len(got) != 1 || got[0] != mcphost.ToolName(srv.Name, "echo") {
		t.Errorf("tools %v, want only echo (place_order's name is too long)", got)
	}
	notes := ts.Notes()
	if len(notes) != 1 || !strings.Contains(notes[0], `the tool "place_order" of MCP server `+srv.Name+" is left out") {
		t.Errorf("notes %q", notes)
	}
}

// TestSecretsAreNeverLogged: a server's secret env and headers appear in
// no log line and no event, up or down.
func TestSecretsAreNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	r := newRig(t)
	r.host = mcphost.New(mcphost.Options{Clock: r.clock, Bus: r.bus, Log: zerolog.New(&logs).Level(zerolog.DebugLevel), Grace: grace})
	t.Cleanup(func() { r.host.Close() })
	var mu sync.Mutex
	var seen []string
	t.Cleanup(event.SubscribeAll(r.bus, func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, e.Topic()+" "+toJSON(e))
	}))
	stdio := mcptest.Stdio(t)
	stdio.Secrets.Env = map[string]string{"BROKER_KEY": "env-secret-1"}
	httpSrv, h := mcptest.HTTP(t)
	r.host.Configure(map[string]*config.MCPServer{"stdio": stdio, "http": httpSrv})
	r.host.Use("d", []string{"stdio", "http"})
	r.waitUp("stdio")
	r.waitUp("http")
	ts := r.toolset("stdio", "crash")
	call(t, tool(t, ts, "mcp__stdio__crash"), map[string]any{})
	r.waitDown("stdio")
	h.Stop()
	r.waitDown("http")
	r.host.Close()
	r.bus.Close() // delivers every event
	mu.Lock()
	events := strings.Join(seen, "\n")
	mu.Unlock()
	for _, secret := range []string{"env-secret-1", mcptest.Token} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log shows the secret %q:\n%s", secret, logs.String())
		}
		if strings.Contains(events, secret) {
			t.Errorf("an event shows the secret %q:\n%s", secret, events)
		}
	}
	if !strings.Contains(events, "mcp.server.down") {
		t.Errorf("no down event in\n%s", events)
	}
	if !strings.Contains(logs.String(), "MCP server down") {
		t.Errorf("the log has no down line:\n%s", logs.String())
	}
}
