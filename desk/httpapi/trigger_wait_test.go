package httpapi_test

// Tests of POST /v1/desks/{desk}/triggers?wait=: one exchange per turn for
// a client that waits for the answer.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/triggers"
)

// call is a POST or GET whose answer a test reads later (the request
// waits on deskd's clock, which the test moves meanwhile).
type call struct {
	code int
	hdr  http.Header
	body string
}

// callAsync sends h.Call in the background; the channel gets its answer.
func callAsync(h *httpapitest.Harness, method, path, body string, header ...string) <-chan call {
	ch := make(chan call, 1)
	go func() {
		code, hdr, b := h.Call(method, path, body, header...)
		ch <- call{code, hdr, b}
	}()
	return ch
}

// receive returns what ch delivers, failing the test with failure when
// nothing comes within 10 s of real time.
func receive[T any](t *testing.T, ch <-chan T, failure string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal(failure)
		var zero T
		return zero
	}
}

// answerOf waits (up to 10s of real time) for an answer.
func answerOf(t *testing.T, ch <-chan call) call {
	t.Helper()
	return receive(t, ch, "no answer within 10s")
}

// armed waits until a request's wait (a timer at now+d on deskd's clock)
// is armed, so that moving the clock past it ends it.
func armed(t *testing.T, h *httpapitest.Harness, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.Clock.WaitTimerAt(ctx, h.Clock.Now().Add(d)); err != nil {
		t.Fatalf("no wait of %s armed on deskd's clock: %v", d, err)
	}
}

// TestPostTriggerWaitAnswersTheTurn: with ?wait=, the POST is answered
// 200 with the trigger's final status (session, turn, reply), the body GET
// .../triggers/{id} answers, once the turn ends within the wait: one
// exchange, no GET.
func TestPostTriggerWaitAnswersTheTurn(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	code, hdr, body := h.Call("POST", "/v1/desks/main/triggers?wait=30s", `{"text": "NIFTY crossed 22000", "id": "w-1"}`)
	s := httpapitest.Decode[desk.TriggerStatus](t, body)
	if code != http.StatusOK || s.ID != "w-1" || s.Desk != "main" || s.State != triggers.StateAnswered || s.Session == "" || s.Turn != 1 ||
		!strings.Contains(s.Reply, "[scripted]") {
		t.Fatalf("POST ?wait=30s = %d %s, want 200 with the answered trigger and its reply", code, body)
	}
	if hdr.Get("Location") != "/v1/desks/main/triggers/w-1" {
		t.Errorf("Location = %q", hdr.Get("Location"))
	}
	_, _, got := h.Call("GET", "/v1/desks/main/triggers/w-1", "")
	if got != body {
		t.Errorf("GET answers %s, the POST %s: want the same", got, body)
	}
	code, _, body = h.Call("POST", "/v1/desks/main/triggers?wait=soon", `{"text": "x", "id": "w-2"}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "wait=") {
		t.Errorf("POST ?wait=soon = %d %s, want 400 naming wait", code, body)
	}
	if _, found := h.Desk.Trigger("w-2"); found {
		t.Error("a POST with a bad wait queued its trigger")
	}
}

// TestPostTriggerWaitRunsOut: a turn that has not ended when the wait
// passes on deskd's clock is answered 202 with the trigger's id and its
// state then; the turn goes on and is answered.
func TestPostTriggerWaitRunsOut(t *testing.T) {
	gate := httpapitest.NewGate()
	h := httpapitest.Start(t, httpapitest.Options{Model: gate})
	ch := callAsync(h, "POST", "/v1/desks/main/triggers?wait=30s", `{"text": "slow one", "id": "w-slow"}`)
	gate.Expect(t, "slow one")
	armed(t, h, 30*time.Second)
	select {
	case c := <-ch:
		t.Fatalf("POST answered %d %s before its wait passed", c.code, c.body)
	default:
	}
	h.Clock.Advance(30 * time.Second)
	c := answerOf(t, ch)
	acc := httpapitest.Decode[httpapi.TriggerResponse](t, c.body)
	if c.code != http.StatusAccepted || acc.ID != "w-slow" || acc.State != triggers.StateRunning || acc.Duplicate {
		t.Fatalf("POST once the wait passed = %d %s, want 202 with the trigger running", c.code, c.body)
	}
	gate.Release <- struct{}{}
	_, _, body := h.Call("GET", "/v1/desks/main/triggers/w-slow?wait=10s", "")
	if s := httpapitest.Decode[desk.TriggerStatus](t, body); s.State != triggers.StateAnswered {
		t.Errorf("the trigger after the 202: %s, want answered", body)
	}
}

// TestPostTriggerWaitDuplicate: the same id again with ?wait= queues
// nothing and waits too: 200 with the final status once the first turn
// ends, 202 with duplicate set when the wait passes first.
func TestPostTriggerWaitDuplicate(t *testing.T) {
	gate := httpapitest.NewGate()
	h := httpapitest.Start(t, httpapitest.Options{Model: gate})
	if code, _, body := h.Call("POST", "/v1/desks/main/triggers", `{"text": "once", "id": "w-dup"}`); code != http.StatusAccepted {
		t.Fatalf("first POST = %d %s", code, body)
	}
	gate.Expect(t, "once")

	ch := callAsync(h, "POST", "/v1/desks/main/triggers?wait=10s", `{"text": "once", "id": "w-dup"}`)
	armed(t, h, 10*time.Second)
	h.Clock.Advance(10 * time.Second)
	c := answerOf(t, ch)
	if acc := httpapitest.Decode[httpapi.TriggerResponse](t, c.body); c.code != http.StatusAccepted || acc.ID != "w-dup" || !acc.Duplicate || acc.State != triggers.StateRunning {
		t.Errorf("duplicate POST once the wait passed = %d %s, want 202, duplicate, running", c.code, c.body)
	}

	ch = callAsync(h, "POST", "/v1/desks/main/triggers?wait=30s", `{"text": "once", "id": "w-dup"}`)
	armed(t, h, 30*time.Second)
	gate.Release <- struct{}{}
	c = answerOf(t, ch)
	if s := httpapitest.Decode[desk.TriggerStatus](t, c.body); c.code != http.StatusOK || s.ID != "w-dup" || s.State != triggers.StateAnswered || s.Reply != "answered" {
		t.Errorf("duplicate POST ?wait=30s = %d %s, want 200 with the first turn's answer", c.code, c.body)
	}
	select {
	case got := <-gate.Calls:
		t.Errorf("a duplicate reached the model: %q", got)
	default:
	}
}

// TestPostTriggerWaitFeed: a feed's token that waits reads the outcome
// without the reply, as GET answers it, and may not wait on a trigger it
// did not post (403, as GET).
func TestPostTriggerWaitFeed(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "op-token", FeedToken: "feed-token"})
	feed := []string{"Authorization", "Bearer feed-token"}
	op := []string{"Authorization", "Bearer op-token"}
	code, _, body := h.Call("POST", "/v1/desks/main/triggers?wait=30s", `{"text": "tick", "id": "w-feed"}`, feed...)
	s := httpapitest.Decode[desk.TriggerStatus](t, body)
	if code != http.StatusOK || s.State != triggers.StateAnswered || s.Reply != "" || s.Turn != 1 || strings.Contains(body, "scripted") {
		t.Errorf("feed POST ?wait=30s = %d %s, want 200 answered with no reply", code, body)
	}
	if code, _, body := h.Call("POST", "/v1/desks/main/triggers", `{"text": "operator's", "id": "w-op"}`, op...); code != http.StatusAccepted {
		t.Fatalf("operator's POST = %d %s", code, body)
	}
	code, _, body = h.Call("POST", "/v1/desks/main/triggers?wait=30s", `{"text": "operator's", "id": "w-op"}`, feed...)
	if code != http.StatusForbidden || strings.Contains(body, "scripted") {
		t.Errorf("feed POST ?wait= of the operator's id = %d %s, want 403", code, body)
	}
	code, _, body = h.Call("POST", "/v1/desks/main/triggers?wait=30s", `{"text": "operator's", "id": "w-op"}`, op...)
	if s := httpapitest.Decode[desk.TriggerStatus](t, body); code != http.StatusOK || !strings.Contains(s.Reply, "[scripted]") {
		t.Errorf("operator's duplicate POST ?wait= = %d %s, want 200 with the reply", code, body)
	}
}

// TestPostTriggerWaitHangUp: a client that goes away while it waits does
// not cancel its trigger: the turn runs and is answered.
func TestPostTriggerWaitHangUp(t *testing.T) {
	gate := httpapitest.NewGate()
	h := httpapitest.Start(t, httpapitest.Options{Model: gate})
	c := h.Client("")
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, _, _, err := c.PostTriggerWait(ctx, "main", triggers.Request{Text: "hang up", ID: "w-gone"}, time.Minute)
		errc <- err
	}()
	gate.Expect(t, "hang up")
	armed(t, h, time.Minute)
	cancel()
	if err := receive(t, errc, "PostTriggerWait did not return within 10s of its context's end"); err == nil {
		t.Error("PostTriggerWait returned no error after its context ended")
	}
	gate.Release <- struct{}{}
	_, _, body := h.Call("GET", "/v1/desks/main/triggers/w-gone?wait=10s", "")
	if s := httpapitest.Decode[desk.TriggerStatus](t, body); s.State != triggers.StateAnswered || s.Reply != "answered" {
		t.Errorf("the trigger of a client that hung up: %s, want answered", body)
	}
}

// TestPostTriggerWaitClient: Client.PostTriggerWait reports the final
// status when the turn ends within the wait, and the accepted trigger
// (not final) when the wait passes first.
func TestPostTriggerWaitClient(t *testing.T) {
	gate := httpapitest.NewGate()
	h := httpapitest.Start(t, httpapitest.Options{Model: gate})
	c := h.Client("")
	type result struct {
		acc   httpapi.TriggerResponse
		st    desk.TriggerStatus
		final bool
		err   error
	}
	post := func(id string, wait time.Duration) <-chan result {
		ch := make(chan result, 1)
		go func() {
			acc, st, final, err := c.PostTriggerWait(t.Context(), "main", triggers.Request{Text: id, ID: id}, wait)
			ch <- result{acc, st, final, err}
		}()
		return ch
	}
	wait := func(ch <-chan result) result {
		t.Helper()
		return receive(t, ch, "PostTriggerWait did not return within 10s")
	}
	ch := post("c-1", 20*time.Second)
	gate.Expect(t, "c-1")
	gate.Release <- struct{}{}
	if r := wait(ch); r.err != nil || !r.final || r.st.State != triggers.StateAnswered || r.st.Reply != "answered" || r.acc.ID != "c-1" {
		t.Errorf("PostTriggerWait = %+v, want final, answered", r)
	}
	ch = post("c-2", 20*time.Second)
	gate.Expect(t, "c-2")
	armed(t, h, 20*time.Second)
	h.Clock.Advance(20 * time.Second)
	if r := wait(ch); r.err != nil || r.final || r.acc.ID != "c-2" || r.acc.State != triggers.StateRunning {
		t.Errorf("PostTriggerWait past its wait = %+v, want not final, running", r)
	}
	gate.Release <- struct{}{}
}

// TestPostTriggerWaitStorage: a trigger the desk cannot write is refused
// as without a wait (503, nothing waited on), and nothing answers before
// the write.
func TestPostTriggerWaitStorage(t *testing.T) {
	ffs := &faultfs.FS{}
	h := httpapitest.Start(t, httpapitest.Options{FS: ffs})
	ffs.Fill(faultfs.ErrNoSpace)
	code, hdr, body := h.Call("POST", "/v1/desks/main/triggers?wait=30s", `{"id":"w-full","text":"refused"}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "disk is full") || hdr.Get("Retry-After") == "" {
		t.Errorf("POST ?wait= on a full disk = %d %s, want 503 saying the disk is full", code, body)
	}
	if _, found := h.Desk.Trigger("w-full"); found {
		t.Error("a trigger refused for the disk is in the ledger")
	}
}
