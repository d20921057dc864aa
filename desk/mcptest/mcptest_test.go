package mcptest_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deskd/deskd/desk/mcptest"
	"github.com/deskd/deskd/desk/testtmp"
)

func TestMain(m *testing.M) {
	if mcptest.ServeStdioIfAsked() {
		return
	}
	os.Exit(testtmp.Run(m)) // the scratch folders on a tmpfs
}

func connect(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func callText(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError
}

func TestStdio(t *testing.T) {
	srv := mcptest.Stdio(t)
	cmd := exec.Command(srv.Command[0])
	cmd.Env = append(os.Environ(), mcptest.EnvMode+"=stdio", mcptest.EnvOrders+"="+srv.Env[mcptest.EnvOrders])
	s := connect(t, &mcp.CommandTransport{Command: cmd})
	if got, _ := callText(t, s, "quote", map[string]any{"symbol": "INFY"}); got != "QUOTE INFY 101.25" {
		t.Errorf("quote = %q", got)
	}
	if got, isErr := callText(t, s, "fail", nil); got != mcptest.FailText || !isErr {
		t.Errorf("fail = %q, error %v", got, isErr)
	}
	callText(t, s, "place_order", map[string]any{"symbol": "TCS", "qty": 3, "side": "buy"})
	if got := mcptest.StdioOrders(t, srv); len(got) != 1 || got[0] != "ORDER 1 buy 3 TCS accepted" {
		t.Errorf("orders %q", got)
	}
	if got, _ := callText(t, s, "big", map[string]any{"bytes": 5000}); len(got) != 5000 {
		t.Errorf("big answered %d bytes", len(got))
	}
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func TestHTTP(t *testing.T) {
	_, h := mcptest.HTTP(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: h.URL, MaxRetries: -1}, nil); err == nil {
		t.Error("connected without the token")
	}
	tr := func() mcp.Transport {
		return &mcp.StreamableClientTransport{Endpoint: h.URL, HTTPClient: &http.Client{Transport: bearer(mcptest.Token)}, MaxRetries: -1}
	}
	s := connect(t, tr())
	callText(t, s, "place_order", map[string]any{"symbol": "TCS", "qty": 3, "side": "buy"})
	h.Stop()
	if err := h.Start(); err != nil {
		t.Fatalf("start again: %v", err)
	}
	s2 := connect(t, tr())
	if got, _ := callText(t, s2, "place_order", map[string]any{"symbol": "TCS", "qty": 1, "side": "sell"}); got != "ORDER 1 sell 1 TCS accepted" {
		t.Errorf("the first order after a restart: %q", got)
	}
	if h.Orders() != 2 {
		t.Errorf("orders %d, want 2 across the restart", h.Orders())
	}
}
