package httpapi_test

// Tests of the client against the real server (httpapitest).

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/triggers"
)

// TestDial: the addresses a client takes, and the base URL each reaches.
func TestDial(t *testing.T) {
	for _, tt := range []struct {
		addr, url, err string
	}{
		{"127.0.0.1:7317", "http://127.0.0.1:7317", ""},
		{"0.0.0.0:7317", "http://127.0.0.1:7317", ""},
		{"[::]:7317", "http://127.0.0.1:7317", ""},
		{":7317", "http://127.0.0.1:7317", ""},
		{"deskd.internal:80", "http://deskd.internal:80", ""},
		{"[::1]:7317", "http://[::1]:7317", ""},
		{"http://deskd.internal:7317/", "http://deskd.internal:7317", ""},
		{"https://deskd.internal", "https://deskd.internal", ""},
		{"unix:/run/deskd/api.sock", "http://deskd", ""},
		{"127.0.0.1:0", "", "has port 0"},
		{"deskd", "", "want host:port, unix:PATH or a URL"},
	} {
		c, err := httpapi.Dial(tt.addr)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Dial(%q) = %v, want an error saying %q", tt.addr, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("Dial(%q): %v", tt.addr, err)
		case tt.err == "" && c.URL() != tt.url:
			t.Errorf("Dial(%q).URL() = %q, want %q", tt.addr, c.URL(), tt.url)
		}
	}
}

// TestClientEndpoints: each method of the client against the server:
// a trigger posted and waited for, a duplicate, the desks, a rollover and a
// fork, a pause and a resume, the config diff.
func TestClientEndpoints(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "tok"})
	c := h.Client("tok")
	ctx := t.Context()
	acc, err := c.PostTrigger(ctx, "main", triggers.Request{Text: "plan?", ID: "c1", Source: "cli"})
	if err != nil || acc.ID != "c1" || acc.State != triggers.StateQueued || acc.Duplicate {
		t.Fatalf("PostTrigger = %+v, %v", acc, err)
	}
	s, err := c.WaitTrigger(ctx, "main", "c1", 10*time.Second)
	if err != nil || !s.Final() || s.State != triggers.StateAnswered || s.Source != "cli" || s.Reply == "" {
		t.Errorf("WaitTrigger = %+v, %v", s, err)
	}
	if again, err := c.PostTrigger(ctx, "main", triggers.Request{Text: "plan?", ID: "c1"}); err != nil || !again.Duplicate || again.State != triggers.StateAnswered {
		t.Errorf("PostTrigger of a known id = %+v, %v; want a duplicate, answered", again, err)
	}
	list, err := c.Desks(ctx)
	if err != nil || len(list.Desks) != 1 || list.Desks[0].Name != "main" || list.Desks[0].Exchanges != 1 {
		t.Errorf("Desks = %+v, %v", list, err)
	}
	roll, err := c.RollOver(ctx, "main")
	if err != nil || roll.Desk != "main" || roll.Previous != s.Session || roll.Session == s.Session {
		t.Errorf("RollOver = %+v, %v (the session was %s)", roll, err, s.Session)
	}
	fork, err := c.Fork(ctx, "main")
	if err != nil || fork.Previous != roll.Session || fork.Session == roll.Session {
		t.Errorf("Fork = %+v, %v (the session was %s)", fork, err, roll.Session)
	}
	p, err := c.Pause(ctx, "main", httpapi.PauseRequest{Reason: "risk check", By: "asha"})
	if err != nil || p.Paused.By != "asha" || p.Paused.Reason != "risk check" || p.Already {
		t.Errorf("Pause = %+v, %v", p, err)
	}
	r, err := c.Resume(ctx, "main", httpapi.PauseRequest{By: "ravi"})
	if err != nil || !r.Resumed || r.Was == nil || r.Was.By != "asha" {
		t.Errorf("Resume = %+v, %v", r, err)
	}
	// The harness's API has no config check: 501, as an *httpapi.Error.
	_, err = c.ConfigDiff(ctx)
	var ae *httpapi.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotImplemented || ae.Message != "this deskd cannot check its config" {
		t.Errorf("ConfigDiff without a check = %v, want *httpapi.Error 501", err)
	}
}

// TestClientErrors: an answer that is not a success is an *httpapi.Error
// with the status and the message of its body; a deskd that does not
// answer is not one.
func TestClientErrors(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "tok"})
	var ae *httpapi.Error
	_, err := h.Client("").Desks(t.Context())
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || !strings.Contains(ae.Message, "needs a credential") ||
		!strings.HasSuffix(err.Error(), "(HTTP 401)") {
		t.Errorf("Desks without the token = %v, want a 401 *httpapi.Error", err)
	}
	_, err = h.Client("tok").PostTrigger(t.Context(), "nope", triggers.Request{Text: "x"})
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || !strings.HasPrefix(ae.Message, `unknown desk "nope" (desks: `) {
		t.Errorf("PostTrigger to an unknown desk = %v, want a 404 *httpapi.Error", err)
	}
	_, err = h.Client("tok").WaitTrigger(t.Context(), "main", "nope", time.Second)
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("WaitTrigger of an unknown trigger = %v, want a 404 *httpapi.Error", err)
	}
	gone, err := httpapi.Dial("unix:" + t.TempDir() + "/none.sock")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Desks(t.Context()); err == nil || errors.As(err, &ae) || !strings.Contains(err.Error(), "reach deskd at http://deskd") {
		t.Errorf("Desks of no deskd = %v, want a failure to reach it, not an *httpapi.Error", err)
	}
}

// TestClientWaitTriggerTimeout: WaitTrigger returns the trigger, not
// final, once its timeout passes on the client's clock.
func TestClientWaitTriggerTimeout(t *testing.T) {
	g := httpapitest.NewGate()
	h := httpapitest.Start(t, httpapitest.Options{Model: g})
	c := h.Client("")
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	calls := 0
	c.Now = func() time.Time { calls++; return start.Add(time.Duration(calls) * time.Hour) } // each look is an hour later
	if _, err := c.PostTrigger(t.Context(), "main", triggers.Request{Text: "slow", ID: "slow"}); err != nil {
		t.Fatal(err)
	}
	g.Expect(t, "slow")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a WaitTrigger that ignores its timeout fails here
	defer cancel()
	s, err := c.WaitTrigger(ctx, "main", "slow", time.Minute)
	if err != nil || s.Final() || s.State != triggers.StateRunning {
		t.Errorf("WaitTrigger past its timeout = %+v, %v; want it running, not final", s, err)
	}
	g.Release <- struct{}{}
}

// TestClientEvents: Events reads the backlog with ids and topics, ends
// with io.EOF when not following, resumes after LastID, keeps one desk's
// events, and reports deskd's notes as comments.
func TestClientEvents(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	c := h.Client("")
	ctx := t.Context()
	for _, id := range []string{"e1", "e2"} {
		if _, err := c.PostTrigger(ctx, "main", triggers.Request{Text: id, ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.WaitTrigger(ctx, "main", id, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// The ledger answers before the events reach the ring: follow until
	// the second turn.completed is there.
	var all []httpapi.Event
	read := func(q httpapi.EventQuery) ([]httpapi.Event, []string, error) {
		var evs []httpapi.Event
		var notes []string
		err := c.Events(ctx, q, func(e httpapi.Event) { evs = append(evs, e) }, func(s string) { notes = append(notes, s) })
		return evs, notes, err
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		evs, _, err := read(httpapi.EventQuery{Backlog: true})
		if !errors.Is(err, io.EOF) {
			t.Fatalf("Events without follow = %v, want io.EOF", err)
		}
		n := 0
		for _, e := range evs {
			if e.Topic == "turn.completed" {
				n++
			}
		}
		if n == 2 {
			all = evs
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ring holds %d turn.completed after 10s, want 2", n)
		}
		select { // an event, or a quiet moment
		case <-h.Events:
		case <-time.After(5 * time.Millisecond):
		}
	}
	for _, e := range all {
		if e.ID == "" || e.Topic == "" || !strings.Contains(e.Data, `"topic":"`+e.Topic+`"`) {
			t.Errorf("event %+v: want an id, a topic and its JSON", e)
		}
	}
	after, _, _ := read(httpapi.EventQuery{LastID: all[0].ID})
	if len(after) != len(all)-1 || after[0].ID != all[1].ID {
		t.Errorf("after %s: %d events from %v, want %d from %s", all[0].ID, len(after), after, len(all)-1, all[1].ID)
	}
	if _, notes, _ := read(httpapi.EventQuery{LastID: "otherepoch-1"}); len(notes) != 1 || !strings.Contains(notes[0], "deskd restarted since event otherepoch-1") {
		t.Errorf("a stale LastID: comments %q, want the restart note", notes)
	}
	var ae *httpapi.Error
	if _, _, err := read(httpapi.EventQuery{Desk: "nope"}); !errors.As(err, &ae) || ae.Status != http.StatusNotFound ||
		!strings.HasPrefix(ae.Message, `unknown desk "nope" (desks: `) || !httpapi.UnknownDesk(err) {
		t.Errorf("events of an unknown desk = %v, want a 404 *httpapi.Error with the message of its JSON body", err)
	}
}
