package natsfeed_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/desk/natsfeed"
	"github.com/deskd/deskd/triggers"
)

// request publishes body on deskd.triggers.<deskName> through JetStream
// with the id and the reply headers (wait: Deskd-Reply-Wait unless
// empty), and returns the subscription of the inbox it names.
func (r *rig) request(deskName, id, body, wait string) *nats.Subscription {
	r.t.Helper()
	inbox := nats.NewInbox()
	sub, err := r.pub.SubscribeSync(inbox)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = sub.Unsubscribe() })
	r.publishWith(deskName, id, body, natsfeed.ReplyToHeader, inbox, natsfeed.ReplyWaitHeader, wait)
	return sub
}

// publishWith publishes body with the id and the headers' name, value
// pairs (a pair with an empty value is left out).
func (r *rig) publishWith(deskName, id, body string, kv ...string) {
	r.t.Helper()
	m := nats.NewMsg("deskd.triggers." + deskName)
	m.Data = []byte(body)
	if id != "" {
		m.Header.Set(jetstream.MsgIDHeader, id)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			m.Header.Set(kv[i], kv[i+1])
		}
	}
	ctx, cancel := context.WithTimeout(r.t.Context(), 10*time.Second)
	defer cancel()
	if _, err := r.js.PublishMsg(ctx, m); err != nil {
		r.t.Fatalf("publish %s: %v", id, err)
	}
}

// answerOf waits (up to 10s) for deskd's answer on sub and returns its
// status and body.
func answerOf(t *testing.T, sub *nats.Subscription) (string, string) {
	t.Helper()
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no answer on %s within 10s: %v", sub.Subject, err)
	}
	return m.Header.Get(natsfeed.StatusHeader), string(m.Data)
}

// decode decodes a JSON answer.
func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

// TestRequestReply: a message with Deskd-Reply-To is queued and acked as
// any other, and once its turn ends deskd answers on the inbox: status
// 200 and the trigger's final status as GET answers a feed (no reply
// text). The same id again (in the body) answers the same, and queues
// nothing.
func TestRequestReply(t *testing.T) {
	r := newRig(t, desktest.Options{})
	r.start()
	sub := r.request("main", "rr-1", `{"text":"NIFTY 22,450"}`, "")
	status, body := answerOf(t, sub)
	st := decode[desk.TriggerStatus](t, body)
	if status != "200" || st.ID != "rr-1" || st.State != triggers.StateAnswered || st.Turn != 1 || st.Session == "" || st.Source != natsfeed.Source ||
		st.Reply != "" || strings.Contains(body, "scripted") {
		t.Errorf("answer = %s %s, want 200 with the answered trigger and no reply text", status, body)
	}
	if s, _ := r.d.Desk.Trigger("rr-1"); s.Reply == "" {
		t.Error("the desk's own record has no reply: the test shows nothing")
	}
	r.acked()
	// The id in the body: a Nats-Msg-Id the stream has seen within its
	// dedupe window is not stored again, so never reaches deskd.
	again := r.request("main", "", `{"text":"NIFTY 22,450","id":"rr-1"}`, "")
	if status, body := answerOf(t, again); status != "200" || decode[desk.TriggerStatus](t, body).Turn != 1 {
		t.Errorf("answer to the same id again = %s %s, want 200 and the first turn", status, body)
	}
	r.acked()
	if n := countQueued(r.d.Events, "rr-1"); n != 1 {
		t.Errorf("rr-1 queued %d times, want once", n)
	}
}

// TestRequestReplyWaitRunsOut: a turn that has not ended when
// Deskd-Reply-Wait passes on the desk's clock is answered 202 with its
// state then; the message was acked before, and the turn goes on.
func TestRequestReplyWaitRunsOut(t *testing.T) {
	gate := httpapitest.NewGate()
	r := newRig(t, desktest.Options{Model: gate})
	r.start()
	sub := r.request("main", "rr-slow", `{"text":"slow one"}`, "10s")
	gate.Expect(t, "slow one")
	r.acked() // acked once queued: the answer does not hold the ack
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := r.d.Clock.WaitTimerAt(ctx, r.d.Clock.Now().Add(10*time.Second)); err != nil {
		t.Fatalf("no wait of 10s armed on the desk's clock: %v", err)
	}
	if m, err := sub.NextMsg(50 * time.Millisecond); err == nil {
		t.Fatalf("answered before the wait passed: %s %s", m.Header.Get(natsfeed.StatusHeader), m.Data)
	}
	r.d.Clock.Advance(10 * time.Second)
	status, body := answerOf(t, sub)
	if p := decode[struct {
		ID    string         `json:"id"`
		State triggers.State `json:"state"`
	}](t, body); status != "202" || p.ID != "rr-slow" || p.State != triggers.StateRunning {
		t.Errorf("answer once the wait passed = %s %s, want 202 running", status, body)
	}
	gate.Release <- struct{}{}
	st, _ := r.d.Desk.WaitTrigger(t.Context(), "rr-slow", time.Hour)
	if st.State != triggers.StateAnswered {
		t.Errorf("rr-slow after the 202: %s, want answered", st.State)
	}
}

// TestRequestReplyRefused: a message refused for good is answered 400
// with the reason; a Deskd-Reply-To that is not an inbox (deskd would
// publish on a subject of the sender's choosing: the JetStream API, its
// own events) or a bad Deskd-Reply-Wait refuses the message, and nothing
// is queued or published there.
func TestRequestReplyRefused(t *testing.T) {
	r := newRig(t, desktest.Options{})
	r.start()
	sub := r.request("main", "rf-1", `{"text":"x","kind":"manual"}`, "")
	if status, body := answerOf(t, sub); status != "400" || !strings.Contains(decode[struct{ Error string }](t, body).Error, "market triggers only") {
		t.Errorf("answer to a manual trigger = %s %s, want 400 with the reason", status, body)
	}
	bad := nats.NewInbox()
	badWait, err := r.pub.SubscribeSync(bad)
	if err != nil {
		t.Fatal(err)
	}
	events, err := r.pub.SubscribeSync("deskd.events.>")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ id, to, wait, reason string }{
		{"rf-2", "deskd.events.main.x", "", "want a subject beginning with _INBOX."},
		{"rf-3", "$JS.API.STREAM.DELETE.MARKET", "", "want a subject beginning with _INBOX."},
		{"rf-4", "_INBOX.>", "", "without wildcards"},
		{"rf-5", bad, "soon", "want a duration"},
		{"rf-6", "", "30s", "without " + natsfeed.ReplyToHeader},
	} {
		r.publishWith("main", c.id, `{"text":"x"}`, natsfeed.ReplyToHeader, c.to, natsfeed.ReplyWaitHeader, c.wait)
		e := eventtest.NextWhere(r.d.Events, func(e event.NATSRejected) bool { return e.MsgID == c.id })
		if !strings.Contains(e.Reason, c.reason) {
			t.Errorf("%s: nats.rejected reason %q, want it to say %q", c.id, e.Reason, c.reason)
		}
		if _, ok := r.d.Desk.Trigger(c.id); ok {
			t.Errorf("%s was queued", c.id)
		}
	}
	if status, body := answerOf(t, badWait); status != "400" || !strings.Contains(body, natsfeed.ReplyWaitHeader) {
		t.Errorf("answer to a bad wait = %s %s, want 400 naming the header", status, body)
	}
	if m, err := events.NextMsg(50 * time.Millisecond); err == nil {
		t.Errorf("deskd published on %s: %s", m.Subject, m.Data)
	}
	if _, err := r.js.Stream(t.Context(), testTriggers.Stream); err != nil {
		t.Errorf("the stream is gone: %v", err)
	}
}

// TestRequestReplyForeignID: a message whose id is a trigger the HTTP
// API queued is answered 403, without its outcome: NATS reads only the
// triggers it sent.
func TestRequestReplyForeignID(t *testing.T) {
	r := newRig(t, desktest.Options{})
	r.start()
	if _, err := r.d.Desk.Submit(triggers.Trigger{ID: "op-1", Kind: triggers.Market, Text: "the operator's", Source: "api"}); err != nil {
		t.Fatal(err)
	}
	sub := r.request("main", "op-1", `{"text":"x"}`, "")
	if status, body := answerOf(t, sub); status != "403" || strings.Contains(body, "scripted") {
		t.Errorf("answer to a foreign id = %s %s, want 403", status, body)
	}
}
