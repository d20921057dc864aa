package router_test

import (
	"context"
	"errors"
	"testing"

	"github.com/deskd/deskd/router"
)

// down is a model whose every call fails.
type down struct{}

func (down) Complete(context.Context, router.Request) (router.Response, error) {
	return router.Response{}, errors.New("connection refused")
}

// TestFallbackAnswerIsReported: when the primary fails and a fallback
// answers, the reply says so (the primary's name and error), and
// LastAnswer names the fallback, scripted, as a fallback; a restart
// restores it from the session (with its mark, and from the records after
// an older mark); a turn the primary answers is no fallback.
func TestFallbackAnswerIsReported(t *testing.T) {
	g := newRig(t, "2026-03-01T04:30:00Z")
	gpt := router.Model{Name: "gpt", Provider: router.OpenAIProvider, Client: down{}}
	r, _, _ := g.open(gpt, offline)
	if _, _, ok := r.LastAnswer(); ok {
		t.Error("LastAnswer before any turn reports one")
	}
	reply := send(t, r, "t1", "Buy NIFTY?")
	if !reply.Fallback || reply.Primary != "gpt" || reply.PrimaryError == "" || reply.Model != "offline" || !reply.Scripted {
		t.Errorf("reply = %+v, want a scripted fallback offline, primary gpt with its error", reply)
	}
	want := func(r *router.Router, when string) {
		t.Helper()
		a, fallback, ok := r.LastAnswer()
		if !ok || !fallback || a.Model != "offline" || a.Provider != router.ScriptedProvider || !a.Scripted || !a.At.Equal(g.clock.Now()) {
			t.Errorf("%s: LastAnswer = %+v, fallback %v, ok %v; want the scripted fallback offline at %v", when, a, fallback, ok, g.clock.Now())
		}
	}
	want(r, "after the turn")

	// A second process over the same folder, before the first closed
	// (a crash): the answer is after the mark, in the records.
	r2, _, _ := g.open(gpt, offline)
	want(r2, "after a crash")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r3, _, _ := g.open(gpt, offline)
	want(r3, "after a clean restart")

	// The primary answers: no fallback.
	r4, _, _ := g.open(offline)
	if reply := send(t, r4, "t2", "Sell?"); reply.Fallback || reply.Primary != "" {
		t.Errorf("reply of the primary = %+v, want no fallback", reply)
	}
	if a, fallback, ok := r4.LastAnswer(); !ok || fallback || a.Model != "offline" {
		t.Errorf("LastAnswer after the primary answered = %+v, fallback %v, ok %v", a, fallback, ok)
	}
}

// TestLastAnswerOutlivesARollover: a new session (Reset, as a rollover
// starts one) keeps the last answer until its own first one, across a
// restart too.
func TestLastAnswerOutlivesARollover(t *testing.T) {
	g := newRig(t, "2026-03-01T04:30:00Z")
	gpt := router.Model{Name: "gpt", Provider: router.OpenAIProvider, Client: down{}}
	r, _, _ := g.open(gpt, offline)
	send(t, r, "t1", "Buy NIFTY?")
	at := g.clock.Now()
	if err := r.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r2, _, _ := g.open(gpt, offline)
	if a, fallback, ok := r2.LastAnswer(); !ok || !fallback || a.Model != "offline" || !a.At.Equal(at) {
		t.Errorf("LastAnswer after a new session and a restart = %+v, fallback %v, ok %v; want offline at %v", a, fallback, ok, at)
	}
}
