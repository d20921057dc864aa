package router_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/deskd/deskd/router"
)

// keeper is a provider that keeps every request it is given, as it got
// it, and fails the calls whose last message's text is fail.
type keeper struct {
	reqs []router.Request
	sent []string // each request's conversation as it was sent
	fail string
}

func (k *keeper) Complete(_ context.Context, req router.Request) (router.Response, error) {
	k.reqs = append(k.reqs, req)
	k.sent = append(k.sent, texts(req))
	if last := req.Messages[len(req.Messages)-1]; last.Text == k.fail {
		return router.Response{}, &router.APIError{Model: "m", Err: errors.New("refused")}
	}
	return router.Response{Text: "noted"}, nil
}

// texts is the conversation of req, one string.
func texts(req router.Request) string {
	s := ""
	for _, m := range req.Messages {
		s += m.Role + ":" + m.Text + "|"
	}
	return s
}

// TestKeptRequestsDoNotChange: a request's Messages is a slice of the
// session's history, not a copy, yet a provider that keeps requests sees
// each as it was sent after later turns, a failed turn (whose message is
// never part of the history) and an Ask: nothing a request carried is
// written again, and an append to its Messages writes into no other
// request.
func TestKeptRequestsDoNotChange(t *testing.T) {
	g := newRig(t, "2026-03-01T04:30:00Z")
	k := &keeper{fail: "bad"}
	r, _, _ := g.open(router.Model{Name: "m", Provider: "openai", Client: k})
	send := func(text string) {
		t.Helper()
		_, _ = r.Send(t.Context(), trigger(fmt.Sprintf("t%d", len(k.reqs)), text))
	}
	for i, text := range []string{"one", "two", "bad", "three", "bad", "four"} {
		send(text)
		if i == 3 {
			if _, err := r.Ask(t.Context(), "review"); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := k.sent
	// Writes into one kept request's spare room must not reach another.
	for i := range k.reqs {
		_ = append(k.reqs[i].Messages, router.Message{Role: "user", Text: "scribble"})
	}
	send("five")
	send("six")
	for i, w := range want {
		if got := texts(k.reqs[i]); got != w {
			t.Errorf("request %d changed after later calls:\n got %s\nwant %s", i, got, w)
		}
	}
	last := texts(k.reqs[len(k.reqs)-1])
	if wantLast := "user:one|assistant:noted|user:two|assistant:noted|user:three|assistant:noted|user:four|assistant:noted|user:five|assistant:noted|user:six|"; last != wantLast {
		t.Errorf("the last request = %s\nwant %s", last, wantLast)
	}
}
