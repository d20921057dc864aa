package router_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
	"github.com/deskd/deskd/triggers"
)

// TestTurnSentWhileTheModelWorks: TurnOptions.Sent is called once a
// turn, while the model service still holds its first request (the
// service answers only once Sent has run), not once per request of the
// turn (a tool round makes a second), and on a goroutine other than
// the turn's: Turn does not wait for it.
func TestTurnSentWhileTheModelWorks(t *testing.T) {
	var sent atomic.Pointer[chan struct{}] // the current turn's: closed by its Sent
	var calls, requests atomic.Int32
	srv := routertest.New(t, routertest.ChatCompletions, routertest.Options{Answer: func(routertest.Request) routertest.Reply {
		if requests.Add(1) == 1 {
			return routertest.Reply{Hold: *sent.Load(), ToolCalls: []routertest.ToolCall{{Name: "memory_search", Args: `{"query":"NIFTY"}`}}}
		}
		return routertest.Reply{Text: "noted"}
	}})
	client, err := router.NewOpenAI(router.OpenAIOptions{Name: "openai", BaseURL: srv.BaseURL(), Model: "gpt-test",
		APIKey: "test-key", Timeout: time.Minute, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	g := newLoopRig(t)
	r := g.router(router.Settings{Route: []router.Model{{Name: "openai", Provider: router.OpenAIProvider, Client: client}}, MaxToolRounds: 4})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a deadline, should Sent never come
	defer cancel()
	for i, accepted := range []bool{true, false} {
		requests.Store(0)
		ch := make(chan struct{})
		sent.Store(&ch)
		calls.Store(0)
		reply, err := r.Turn(ctx, triggers.Trigger{ID: fmt.Sprintf("t%d", i), Kind: triggers.Market, Text: "NIFTY 24,512"}, router.TurnOptions{
			Accepted: accepted,
			Sent: func() {
				if calls.Add(1) == 1 {
					close(ch)
				}
			},
		})
		if err != nil {
			t.Fatalf("Turn (accepted %v): %v", accepted, err)
		}
		if reply.Text != "noted" || requests.Load() != 2 {
			t.Fatalf("Turn (accepted %v): reply %q after %d requests, want \"noted\" after 2", accepted, reply.Text, requests.Load())
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("Turn (accepted %v): Sent called %d times, want once", accepted, n)
		}
	}
}

// TestTurnSentNotCalledWithoutHTTP: the scripted model makes no request,
// so Sent is never called (the caller records the turn's going out
// itself once Turn returns).
func TestTurnSentNotCalledWithoutHTTP(t *testing.T) {
	g := newLoopRig(t)
	r := g.router(router.Settings{Route: []router.Model{{Name: "offline", Provider: router.ScriptedProvider, Client: router.Scripted{}}}})
	var calls atomic.Int32
	if _, err := r.Turn(context.Background(), triggers.Trigger{ID: "t1", Kind: triggers.Manual, Text: "hello"},
		router.TurnOptions{Sent: func() { calls.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("Sent called %d times for the scripted model, want none", n)
	}
}
