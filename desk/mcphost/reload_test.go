package mcphost_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/mcphost"
)

// TestAReloadedTimeoutAppliesToTheNextCall: a reload that raises an HTTP
// server's timeout from 5s to 30s lets the next call take 20s (of the
// host's clock): nothing of the old timeout, captured when deskd
// connected, cuts it (review: the client's backstop kept 2 x 5s, and the
// call was cut at 10s, reading "refused").
func TestAReloadedTimeoutAppliesToTheNextCall(t *testing.T) {
	asked, answer := make(chan struct{}, 1), make(chan struct{})
	srv := rawHTTP(t, func(w http.ResponseWriter, id json.RawMessage) {
		asked <- struct{}{}
		select {
		case <-answer:
		case <-rawRequest(w).Done():
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"filled"}]}}`, id)
	})
	srv.Timeout = 5 * time.Second
	r := newRig(t)
	r.serve(srv)
	raised := *srv
	raised.Timeout = 30 * time.Second
	r.host.Configure(map[string]*config.MCPServer{srv.Name: &raised})

	ts := r.toolset("raw")
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := call(t, tool(t, ts, "mcp__raw__echo"), map[string]any{})
		done <- result{out, err}
	}()
	await(t, asked, "the call did not reach the server") // the call and its request are then under way, with their timers
	ctx, cancel := contextWithWait(t)
	defer cancel()
	if err := r.clock.WaitTimerAt(ctx, start.Add(30*time.Second)); err != nil { // the call's own timer: the new timeout's
		t.Fatalf("the call armed no timer of the new timeout: %v", err)
	}
	r.clock.Set(start.Add(20 * time.Second))
	select {
	case res := <-done:
		t.Fatalf("the call ended at 20s of a 30s timeout: %q, %v", res.out, res.err)
	default:
	}
	close(answer)
	if res := await(t, done, "the call did not end once the server answered"); res.err != nil || res.out != "filled" {
		t.Errorf("the call after 20s = %q, %v; want filled", res.out, res.err)
	}
}

// TestAReloadedTimeoutAppliesToReconnections: a reload that changes a
// server's timeout (raised, then lowered) applies to its reconnections:
// the connection after a crash waits the new timeout for the server's
// answer, not the one the server was first started with.
func TestAReloadedTimeoutAppliesToReconnections(t *testing.T) {
	r := newRig(t)
	srv := hostile(t, "silentlater") // answers once; every later start is silent
	srv.Timeout = 5 * time.Second
	r.serve(srv)
	raised := *srv
	raised.Timeout = 30 * time.Second
	r.host.Configure(map[string]*config.MCPServer{srv.Name: &raised})
	ts := r.host.Toolset("d", all)
	if _, err := call(t, tool(t, ts, "mcp__hostile__echo"), map[string]any{}); err == nil {
		t.Fatal("the call that makes the server exit answered")
	}
	down := r.waitDown("hostile")
	r.retry(down)
	r.expire(down.RetryAt.Add(30 * time.Second))
	down = r.waitDown("hostile")
	contains(t, "the down error after the raise", down.Error, "no answer within 30s")

	lowered := *srv
	lowered.Timeout = 2 * time.Second
	r.host.Configure(map[string]*config.MCPServer{srv.Name: &lowered})
	r.retry(down)
	r.expire(down.RetryAt.Add(2 * time.Second))
	contains(t, "the down error after the lowering", r.waitDown("hostile").Error, "no answer within 2s")
}

// TestTimedOutCallsSayTheOutcomeIsUnknown: a call deskd gave up on (its
// timeout passed) says that deskd timed out and that the call may have
// run, never that the server refused it; a call the server really refused
// (a JSON-RPC error) says so; one whose request broke on the way says its
// outcome is unknown.
func TestTimedOutCallsSayTheOutcomeIsUnknown(t *testing.T) {
	srv := rawHTTP(t, func(w http.ResponseWriter, id json.RawMessage) {
		switch {
		case strings.Contains(rawName(w), "fail"):
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown instrument"}}`, id)
		default: // the connection is dropped before any answer
			c, _, err := w.(ctxWriter).ResponseWriter.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		}
	})
	r := newRig(t)
	r.serve(srv)
	ts := r.toolset("raw")

	_, err := call(t, tool(t, ts, "mcp__raw__fail"), map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "MCP server raw refused the call of fail") || !strings.Contains(err.Error(), "unknown instrument") {
		t.Errorf("a JSON-RPC error: %v, want the server's refusal", err)
	}
	if errors.Is(err, mcphost.ErrOutcomeUnknown) {
		t.Errorf("a refusal reads as of unknown outcome: %v", err)
	}
	_, err = call(t, tool(t, ts, "mcp__raw__echo"), map[string]any{})
	if err == nil || strings.Contains(err.Error(), "refused") || !errors.Is(err, mcphost.ErrOutcomeUnknown) ||
		!strings.Contains(err.Error(), "the call's outcome is unknown") {
		t.Errorf("a dropped request: %v, want an outcome unknown, not a refusal", err)
	}
}
