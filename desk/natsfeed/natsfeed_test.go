package natsfeed_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/desk/natsconn"
	"github.com/deskd/deskd/desk/natsfeed"
	"github.com/deskd/deskd/desk/natstest"
	"github.com/deskd/deskd/triggers"
)

var testTriggers = config.NATSTriggers{Stream: "MARKET", Subject: "deskd.triggers.>", Consumer: "deskd"}

// rig is a desk, a NATS server, deskd's connection to it and a feed.
type rig struct {
	t    *testing.T
	d    *desktest.Desk
	srv  *natstest.Server
	conn *natsconn.Conn
	pub  *nats.Conn          // the publisher's
	js   jetstream.JetStream // the publisher's
	feed *natsfeed.Feed
}

func newRig(t *testing.T, o desktest.Options) *rig {
	t.Helper()
	r := &rig{t: t, d: desktest.New(t, o), srv: natstest.Start(t)}
	r.conn = connect(t, r.srv.URL())
	r.pub, r.js = r.srv.Client()
	return r
}

func connect(t *testing.T, url string) *natsconn.Conn {
	t.Helper()
	c, err := natsconn.Connect(&config.NATS{URLs: []string{url}}, zerolog.New(zerolog.NewTestWriter(t)), clock.Real())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// start starts the feed and waits until it consumes.
func (r *rig) start() {
	r.t.Helper()
	r.feed = natsfeed.Start(natsfeed.Options{
		Conn: r.conn.NATS(), Triggers: testTriggers, Desks: desk.NewSet(r.d.Desk), Bus: r.d.Bus, Clock: r.d.Clock,
		Log: zerolog.New(zerolog.NewTestWriter(r.t)), NakDelay: 100 * time.Millisecond, AckWait: 2 * time.Second,
	})
	r.t.Cleanup(r.feed.Stop)
	select {
	case <-r.feed.Ready():
	case <-time.After(eventtest.Timeout):
		r.t.Fatal("the feed does not consume within the timeout")
	}
}

// publish publishes body on deskd.triggers.<deskName>, with a Nats-Msg-Id
// when id is not empty, retrying until the stream has it.
func (r *rig) publish(deskName, id, body string) *jetstream.PubAck {
	r.t.Helper()
	return natstest.Publish(r.t, r.js, "deskd.triggers."+deskName, id, body)
}

// acked waits until the consumer has every message acked: an ack lost
// while the server was away is made good when the message comes again
// (after AckWait).
func (r *rig) acked() {
	r.t.Helper()
	natstest.WaitAcked(r.t, r.pub, r.js, testTriggers.Stream, testTriggers.Consumer, 30*time.Second)
}

// settled stops the feed and returns the consumer's state: what is
// still pending delivery or ack.
func (r *rig) settled() *jetstream.ConsumerInfo {
	r.t.Helper()
	r.feed.Stop()
	return consumerInfo(r.t, r.js, testTriggers.Consumer)
}

// consumerInfo is the state now of the consumer called name on the
// triggers stream.
func consumerInfo(t *testing.T, js jetstream.JetStream, name string) *jetstream.ConsumerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, testTriggers.Stream, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func queued(w *eventtest.Watcher, id string) event.TriggerQueued {
	return eventtest.NextWhere(w, func(e event.TriggerQueued) bool { return e.Trigger == id })
}

// TestIngress: a message on deskd.triggers.main is a market trigger of
// desk main, from source nats, under its Nats-Msg-Id; it is acked once
// queued, and the desk answers it.
func TestIngress(t *testing.T) {
	r := newRig(t, desktest.Options{})
	r.start()
	r.publish("main", "nifty-0915", `{"text":"NIFTY 22,450","key":"NIFTY"}`)
	r.publish("main", "", `{"text":"BANKNIFTY 48,000","id":"bank-1","source":"ticker"}`)
	r.publish("main", "", `{"text":"no id at all"}`)
	q := queued(r.d.Events, "nifty-0915")
	if q.Source != natsfeed.Source || q.Kind != "market" || q.Key != "NIFTY" {
		t.Errorf("trigger.queued = %+v, want source nats, kind market, key NIFTY", q)
	}
	if q := queued(r.d.Events, "bank-1"); q.Source != "nats:ticker" {
		t.Errorf("a body naming its source: source %q, want nats:ticker", q.Source)
	}
	q = eventtest.NextWhere(r.d.Events, func(e event.TriggerQueued) bool { return strings.HasPrefix(e.Trigger, natsfeed.IDPrefix) })
	if q.Trigger != "nats-MARKET-3" {
		t.Errorf("a message without an id: trigger %q, want nats-MARKET-3 (the stream sequence)", q.Trigger)
	}
	eventtest.NextWhere(r.d.Events, func(e event.TurnCompleted) bool { return e.Trigger == "nifty-0915" })
	if st, ok := r.d.Desk.Trigger("nifty-0915"); !ok || st.Source != "nats" {
		t.Errorf("Trigger(nifty-0915) = %+v, %v; want it known, from nats", st, ok)
	}
	if info := r.settled(); info.NumAckPending != 0 || info.NumPending != 0 || info.AckFloor.Stream != 3 {
		t.Errorf("consumer: %d pending ack, %d pending, ack floor %d; want every message acked", info.NumAckPending, info.NumPending, info.AckFloor.Stream)
	}
}

// TestDuplicates: the same Nats-Msg-Id twice is stored once by the
// stream; the same body id twice (which the stream does not know) is
// queued once by the desk, and both messages are acked.
func TestDuplicates(t *testing.T) {
	r := newRig(t, desktest.Options{})
	r.start()
	if a := r.publish("main", "h-1", `{"text":"one"}`); a.Duplicate {
		t.Fatal("the first publish is a duplicate")
	}
	if a := r.publish("main", "h-1", `{"text":"one"}`); !a.Duplicate {
		t.Errorf("the same Nats-Msg-Id again: PubAck.Duplicate false, want the stream to drop it")
	}
	r.publish("main", "", `{"text":"two","id":"b-1"}`)
	r.publish("main", "", `{"text":"two again","id":"b-1"}`)
	r.publish("main", "", `{"text":"barrier","id":"end"}`)
	queued(r.d.Events, "end")
	info := r.settled()
	if n := countQueued(r.d.Events, "h-1") + countQueued(r.d.Events, "b-1"); n != 2 {
		t.Errorf("h-1 and b-1 queued %d times in all, want once each", n)
	}
	if info.NumAckPending != 0 || info.NumPending != 0 {
		t.Errorf("consumer: %d pending ack, %d pending; want the duplicate acked too", info.NumAckPending, info.NumPending)
	}
}

func countQueued(w *eventtest.Watcher, id string) int {
	n := 0
	for _, e := range w.Events() {
		if q, ok := e.(event.TriggerQueued); ok && q.Trigger == id {
			n++
		}
	}
	return n
}

// TestRedeliveryQueuesOnce: a message whose trigger was queued but whose
// ack never reached NATS (deskd died between the two) comes again; the
// feed finds its id in the ledger and acks it, queueing nothing new.
func TestRedeliveryQueuesOnce(t *testing.T) {
	r := newRig(t, desktest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := natsfeed.EnsureStream(ctx, r.js, testTriggers); err != nil {
		t.Fatal(err)
	}
	r.publish("main", "lost-ack", `{"text":"NIFTY 22,450"}`)
	// The deskd that died: it consumed the message and queued the
	// trigger, and its ack was lost.
	c, err := r.js.CreateOrUpdateConsumer(ctx, testTriggers.Stream, natsfeed.ConsumerConfig(testTriggers, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m := <-batch.Messages()
	if m == nil {
		t.Fatal("no message fetched")
	}
	r.d.Submit(triggers.Trigger{ID: m.Headers().Get(jetstream.MsgIDHeader), Text: string(m.Data()), Kind: triggers.Market, Source: "nats"})
	queued(r.d.Events, "lost-ack")
	_ = m.Nak() // stands for AckWait running out: NATS delivers it again

	r.start()
	r.publish("main", "after", `{"text":"barrier"}`)
	queued(r.d.Events, "after")
	info := r.settled()
	if n := countQueued(r.d.Events, "lost-ack"); n != 1 {
		t.Errorf("lost-ack queued %d times, want once", n)
	}
	if info.NumAckPending != 0 || info.NumPending != 0 || info.NumRedelivered != 0 {
		t.Errorf("consumer: %d pending ack, %d pending, %d redelivered; want the redelivery acked", info.NumAckPending, info.NumPending, info.NumRedelivered)
	}
}

// TestRefused: a message for no desk, with a bad body, of kind manual,
// or whose Nats-Msg-Id and body id differ is terminated (never delivered
// again) and announced with the reason.
func TestRefused(t *testing.T) {
	r := newRig(t, desktest.Options{})
	r.start()
	tests := []struct {
		name, desk, id, body, reason string
		withDesk                     bool
	}{
		{"unknown desk", "nope", "u-1", `{"text":"x"}`, `no desk "nope"`, false},
		{"bad body", "main", "b-1", `{"txt":"x"}`, "bad JSON", true},
		{"not JSON", "main", "b-2", `NIFTY 22,450`, "bad JSON", true},
		{"manual", "main", "m-1", `{"text":"x","kind":"manual"}`, "market triggers only", true},
		{"ids differ", "main", "i-1", `{"text":"x","id":"i-2"}`, "differ", true},
		{"reserved id", "main", "t-1", `{"text":"x"}`, "kept for deskd's own ids", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.publish(tt.desk, tt.id, tt.body)
			e := eventtest.NextWhere(r.d.Events, func(e event.NATSRejected) bool { return e.MsgID == tt.id })
			if e.Subject != "deskd.triggers."+tt.desk || !strings.Contains(e.Reason, tt.reason) {
				t.Errorf("nats.rejected = %+v, want subject deskd.triggers.%s and a reason saying %q", e, tt.desk, tt.reason)
			}
			if (e.Desk == "main") != tt.withDesk {
				t.Errorf("nats.rejected desk %q: want main only for a desk that exists", e.Desk)
			}
		})
	}
	r.publish("main", "ok", `{"text":"barrier"}`)
	queued(r.d.Events, "ok")
	info := r.settled()
	if info.NumAckPending != 0 || info.NumPending != 0 || info.NumRedelivered != 0 {
		t.Errorf("consumer: %d pending ack, %d pending, %d redelivered; want the refused terminated", info.NumAckPending, info.NumPending, info.NumRedelivered)
	}
	if _, ok := r.d.Desk.Trigger("m-1"); ok {
		t.Error("the manual trigger was queued")
	}
}

// TestBackpressure: with a queue of one and a turn held, a third trigger
// is handed back with a delay (nats.backpressure, queue_full) and is
// queued once the queue has room; each is answered once.
func TestBackpressure(t *testing.T) {
	gate := desktest.NewGate()
	r := newRig(t, desktest.Options{Model: gate, QueueLimit: 1})
	r.start()
	r.publish("main", "p-1", `{"text":"one"}`)
	gate.Expect(t, "one")
	r.publish("main", "p-2", `{"text":"two"}`)
	queued(r.d.Events, "p-2")
	r.publish("main", "p-3", `{"text":"three"}`)
	bp := eventtest.NextWhere(r.d.Events, func(e event.NATSBackpressure) bool { return e.Trigger == "p-3" })
	if bp.Reason != natsfeed.ReasonQueueFull || bp.Desk != "main" || bp.DelayMS != 100 {
		t.Errorf("nats.backpressure = %+v, want desk main, queue_full, delay 100ms", bp)
	}
	if _, ok := r.d.Desk.Trigger("p-3"); ok {
		t.Error("p-3 is known while the queue was full")
	}
	gate.Release()
	gate.Expect(t, "two")
	queued(r.d.Events, "p-3")
	gate.Release()
	gate.Expect(t, "three")
	gate.Release()
	eventtest.NextWhere(r.d.Events, func(e event.TurnCompleted) bool { return e.Trigger == "p-3" })
	for _, id := range []string{"p-1", "p-2", "p-3"} {
		if n := countQueued(r.d.Events, id); n != 1 {
			t.Errorf("%s queued %d times, want once", id, n)
		}
	}
}

// TestPausedDeskNaks: a paused desk that refuses triggers hands the
// message back (paused) until it is resumed.
func TestPausedDeskNaks(t *testing.T) {
	r := newRig(t, desktest.Options{RefusePaused: true})
	if _, _, err := r.d.Desk.Pause("test", "lunch"); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.publish("main", "z-1", `{"text":"one"}`)
	bp := eventtest.NextWhere(r.d.Events, func(e event.NATSBackpressure) bool { return e.Trigger == "z-1" })
	if bp.Reason != natsfeed.ReasonPaused || bp.DelayMS != 100 {
		t.Errorf("nats.backpressure = %+v, want paused, 100ms", bp)
	}
	// Handed back again, it waits twice as long: a desk that stays
	// paused does not make its backlog come round every few seconds.
	if bp := eventtest.NextWhere(r.d.Events, func(e event.NATSBackpressure) bool { return e.Trigger == "z-1" }); bp.DelayMS != 200 {
		t.Errorf("the second nats.backpressure of z-1 = %+v, want a delay of 200ms", bp)
	}
	if _, err := r.d.Desk.Resume("test"); err != nil {
		t.Fatal(err)
	}
	queued(r.d.Events, "z-1")
}

// TestNATSRestartedUnderLoad: the server is stopped and started again
// (the same store) while messages are published; every message is
// queued once and answered once.
func TestNATSRestartedUnderLoad(t *testing.T) {
	r := newRig(t, desktest.Options{QueueLimit: 500})
	r.start()
	const n = 60
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	half := make(chan struct{})
	wg.Go(func() {
		for i := range n {
			if i == n/3 {
				close(half)
			}
			if _, err := natstest.TryPublish(r.js, "deskd.triggers.main", fmt.Sprintf("load-%d", i), fmt.Sprintf(`{"text":"tick %d"}`, i)); err != nil {
				t.Error(err)
			}
		}
	})
	<-half
	r.srv.Down()
	r.srv.Up()
	wg.Wait()
	for i := range n {
		eventtest.NextWhere(r.d.Events, func(e event.TurnCompleted) bool { return e.Trigger == fmt.Sprintf("load-%d", i) })
	}
	r.acked()
	info := r.settled()
	for i := range n {
		id := fmt.Sprintf("load-%d", i)
		if c := countQueued(r.d.Events, id); c != 1 {
			t.Errorf("%s queued %d times, want once", id, c)
		}
		turns := 0
		for _, e := range r.d.Events.Events() {
			if tc, ok := e.(event.TurnCompleted); ok && tc.Trigger == id {
				turns++
			}
		}
		if turns != 1 {
			t.Errorf("%s answered %d times, want once", id, turns)
		}
	}
	if info.NumAckPending != 0 || info.NumPending != 0 {
		t.Errorf("consumer: %d pending ack, %d pending; want every message acked", info.NumAckPending, info.NumPending)
	}
}

// TestStartWhileNATSDown: a feed started while no server answers keeps
// trying, and consumes once the server is there.
func TestStartWhileNATSDown(t *testing.T) {
	d := desktest.New(t, desktest.Options{})
	srv := natstest.Start(t)
	srv.Down()
	conn := connect(t, srv.URL())
	feed := natsfeed.Start(natsfeed.Options{Conn: conn.NATS(), Triggers: testTriggers, Desks: desk.NewSet(d.Desk), Bus: d.Bus,
		Clock: clock.Real(), Log: zerolog.New(zerolog.NewTestWriter(t))})
	t.Cleanup(feed.Stop)
	select {
	case <-feed.Ready():
		t.Fatal("the feed says it consumes with the server down")
	default:
	}
	srv.Up()
	select {
	case <-feed.Ready():
	case <-time.After(60 * time.Second):
		t.Fatal("the feed does not consume within 60s of the server's start")
	}
	_, js := srv.Client()
	natstest.Publish(t, js, "deskd.triggers.main", "late-1", `{"text":"after the start"}`)
	queued(d.Events, "late-1")
}

// TestNothingAckedAfterStop: once Stop has returned, a message is left to
// NATS (still there for the next deskd) and its trigger is not queued.
func TestNothingAckedAfterStop(t *testing.T) {
	r := newRig(t, desktest.Options{})
	r.start()
	r.publish("main", "before", `{"text":"before the stop"}`)
	queued(r.d.Events, "before")
	r.feed.Stop()
	r.publish("main", "after-stop", `{"text":"after the stop"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := r.js.Consumer(ctx, testTriggers.Stream, testTriggers.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.Fetch(1, jetstream.FetchMaxWait(8*time.Second)) // a delivery to the stopped feed comes again after its AckWait (2s)
	if err != nil {
		t.Fatal(err)
	}
	m := <-batch.Messages()
	if m == nil || m.Headers().Get(jetstream.MsgIDHeader) != "after-stop" {
		t.Fatalf("fetched %v, want the message published after Stop, never acked", m)
	}
	if _, ok := r.d.Desk.Trigger("after-stop"); ok {
		t.Error("the message published after Stop was queued")
	}
}

// TestAClientCannotTakeTheIDOfAMessageWithoutOne: a Nats-Msg-Id (or a body
// id) in the ingress's own namespace, nats-<stream>-<sequence>, is refused,
// so that it cannot take the id a later message without one will get, and
// that message is queued.
func TestAClientCannotTakeTheIDOfAMessageWithoutOne(t *testing.T) {
	r := newRig(t, desktest.Options{})
	r.start()
	r.publish("main", "nats-MARKET-2", `{"text": "squatter"}`)
	if e := eventtest.Next[event.NATSRejected](r.d.Events); !strings.Contains(e.Reason, `prefix "nats-" is kept`) {
		t.Errorf("nats.rejected of the squatter = %+v, want the kept prefix named", e)
	}
	r.publish("main", "", `{"text": "no id of its own"}`)
	if q := queued(r.d.Events, "nats-MARKET-2"); q.Source != natsfeed.Source {
		t.Errorf("the message without an id = %+v, want it queued as nats-MARKET-2 from nats", q)
	}
}
