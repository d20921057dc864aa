package mcphost_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// script is a model that asks for the tool calls given, then answers.
type script struct {
	mu    sync.Mutex
	calls []router.ToolCall
	reqs  []router.Request
}

func (s *script) Complete(_ context.Context, req router.Request) (router.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	if req.Task != router.TaskTurn || len(s.calls) == 0 {
		return router.Response{Text: "done", Usage: memory.Usage{InputTokens: 10, OutputTokens: 2}}, nil
	}
	calls := s.calls
	s.calls = nil
	return router.Response{ToolCalls: calls, Usage: memory.Usage{InputTokens: 10, OutputTokens: 2}}, nil
}

// TestThroughTheRouter runs a turn whose model calls MCP tools through a
// desk's toolset: a big result is cut at the server's max_result, a tool
// error and a result reach the session, and tool.called names the server.
func TestThroughTheRouter(t *testing.T) {
	r := newRig(t)
	srv := transports[0].cfg(t)
	srv.MaxResult = 1000
	r.serve(srv)
	called := make(chan event.ToolCalled, 16)
	t.Cleanup(event.Subscribe(r.bus, func(e event.ToolCalled) { called <- e }))
	folder, err := memory.OpenFolder(filepath.Join(t.TempDir(), "desks", "d"), "d", r.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	model := &script{calls: []router.ToolCall{
		{ID: "c1", Name: "mcp__stdio__big", Arguments: json.RawMessage(`{"bytes":100000}`)},
		{ID: "c2", Name: "mcp__stdio__fail", Arguments: json.RawMessage(`{}`)},
		{ID: "c3", Name: "mcp__stdio__quote", Arguments: json.RawMessage(`{"symbol":"INFY"}`)},
	}}
	ts := r.toolset("stdio", "big", "fail", "quote")
	rt, err := router.New(router.Options{Desk: "d", Folder: folder, Clock: r.clock, Day: memory.TradingDay{Location: time.UTC}, Bus: r.bus,
		Settings: router.Settings{Route: []router.Model{{Name: "m", Provider: "openai", Client: model}}, Toolsets: []router.Toolset{ts}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	if _, err := rt.RestoreSession(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "look it up"}); err != nil {
		t.Fatal(err)
	}
	recs, err := folder.ReadSession(rt.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"c1": "truncated: 1000 of 100000 bytes kept", "c2": "broker refused: market closed", "c3": "QUOTE INFY 101.25"}
	for _, rec := range recs {
		if rec.Type != memory.RecordTool {
			continue
		}
		if !strings.Contains(rec.Text, want[rec.ToolCallID]) || len(rec.Text) > 1200 {
			t.Errorf("result of %s: %d bytes ending %q, want it to say %q", rec.ToolCallID, len(rec.Text),
				rec.Text[max(0, len(rec.Text)-80):], want[rec.ToolCallID])
		}
		delete(want, rec.ToolCallID)
	}
	if len(want) > 0 {
		t.Errorf("no session record of %v", want)
	}
	outcomes := map[string]string{}
	for range 3 {
		select {
		case e := <-called:
			if e.Server != "stdio" {
				t.Errorf("tool.called %+v: server %q, want stdio", e, e.Server)
			}
			outcomes[e.Tool] = e.Outcome
		case <-time.After(wait):
			t.Fatalf("tool.called events %v, want 3", outcomes)
		}
	}
	if outcomes["mcp__stdio__fail"] != router.OutcomeError || outcomes["mcp__stdio__quote"] != router.OutcomeOK {
		t.Errorf("outcomes %v", outcomes)
	}
}
