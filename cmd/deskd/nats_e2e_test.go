package main

// End-to-end tests of the NATS ingress against a real nats-server
// (desk/natstest): in process, a message answered, a refused one
// announced, and the state of the connection in /healthz, the metrics
// and deskd status while the server is away; through the binary, deskd
// killed with SIGKILL mid-stream, every message answered exactly once.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/natstest"
)

// natsSection is the nats section of a main file on srv's URL.
func natsSection(srv *natstest.Server) string {
	return "nats:\n  url: " + srv.URL() + "\n  triggers: {stream: MARKET}\n"
}

// healthNATS is GET /healthz's nats detail; it fails unless the answer is 200.
func healthNATS(t *testing.T, d *deskdProc) *httpapi.NATSStatus {
	t.Helper()
	code, body := d.call(t, "GET", "/healthz", "", "")
	var h httpapi.HealthResponse
	if err := json.Unmarshal([]byte(body), &h); err != nil || code != 200 || h.Status != "ok" || h.NATS == nil {
		d.fail(t, "GET /healthz = %d %s, want 200, ok, with a nats detail", code, body)
	}
	return h.NATS
}

// TestNATSE2EIngressAndStatus: a message on deskd.triggers.main is
// answered by desk main and readable through the API; one for no desk is
// announced as nats.rejected. While the server is away deskd runs on:
// /healthz stays 200 and says so, as do the metrics and deskd status, and
// once it is back a new message is answered. In process.
func TestNATSE2EIngressAndStatus(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(90 * time.Second)
	srv := natstest.Start(t)
	_, js := srv.Client()
	cfg := apiConfig(t, t.TempDir(), "{provider: scripted}", natsSection(srv), "")
	d := startInProcess(t, "deskd", cfg, apiStart)
	d.waitReady(t)

	natstest.Publish(t, js, "deskd.triggers.main", "nifty-0915", `{"text": "NIFTY 22,450", "key": "NIFTY"}`)
	d.waitFor(t, deadline, "trigger.queued of nifty-0915", isEvent("trigger.queued", "trigger", "nifty-0915"))
	if tr := d.trigger(t, "nifty-0915"); tr["state"] != "answered" || tr["source"] != "nats" || tr["kind"] != "market" {
		t.Errorf("GET trigger nifty-0915 = %v, want answered, from nats, market", tr)
	}
	natstest.Publish(t, js, "deskd.triggers.nope", "lost-1", `{"text": "for no desk"}`)
	d.waitFor(t, deadline, "nats.rejected of deskd.triggers.nope", isEvent("nats.rejected", "subject", "deskd.triggers.nope"))
	if n := healthNATS(t, d); !n.Connected || n.State != "connected" {
		t.Errorf("healthz nats = %+v, want connected", n)
	}

	srv.Down()
	d.waitFor(t, deadline, "nats: reconnecting", logMessage("nats: reconnecting"))
	if n := healthNATS(t, d); n.Connected || n.State != "reconnecting" || n.Error == "" {
		t.Errorf("healthz nats with the server away = %+v, want reconnecting, with the error", n)
	}
	if code, body := d.call(t, "GET", "/metrics", "", ""); code != 200 || !strings.Contains(body, "\ndeskd_nats_connected 0\n") {
		t.Errorf("GET /metrics with the server away = %d, want deskd_nats_connected 0", code)
	}
	addr := strings.TrimPrefix(d.URL(t), "http://")
	if code, out := deskdCLI(t, "status", "--addr", addr); code != 0 || !strings.Contains(out, "nats: reconnecting since ") {
		t.Errorf("deskd status with the server away = %d\n%s\nwant a line saying nats: reconnecting", code, out)
	}
	if code, body := d.call(t, "POST", "/v1/desks/main/triggers", "", `{"text": "through the API meanwhile", "id": "api-1"}`); code != 202 {
		t.Errorf("POST a trigger with NATS away = %d %s, want 202", code, body)
	}

	srv.Up()
	d.waitFor(t, deadline, "nats: connected", logMessage("nats: connected"))
	natstest.Publish(t, js, "deskd.triggers.main", "after-1", `{"text": "after the server came back"}`)
	d.waitFor(t, deadline, "trigger.queued of after-1", isEvent("trigger.queued", "trigger", "after-1"))
	if tr := d.trigger(t, "after-1"); tr["state"] != "answered" {
		t.Errorf("GET trigger after-1 = %v, want answered", tr)
	}
	if code, out := deskdCLI(t, "status", "--addr", addr); code != 0 || strings.Contains(out, "nats:") {
		t.Errorf("deskd status once connected = %d\n%s\nwant no nats line", code, out)
	}
	d.stopCleanly(t, syscall.SIGTERM)
}

// TestNATSE2EKillStorm: messages published throughout while deskd is
// killed with SIGKILL three times and started again; in the end every
// message's trigger is answered (or, cut off with its model call made,
// interrupted) and no text reached the model twice: a message delivered
// to a deskd that died before its ack comes again and finds its trigger
// queued. The binary: SIGKILL.
func TestNATSE2EKillStorm(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	srv := natstest.Start(t)
	nc, js := srv.Client()
	dir := t.TempDir()
	cfg := apiConfig(t, dir, "{provider: scripted}", natsSection(srv), "queue_limit: 1000\n")
	const n, kills = 60, 3
	published := make(chan int, n)
	var pub sync.WaitGroup
	t.Cleanup(pub.Wait) // before the server goes (cleanups run last first)
	pub.Go(func() {
		for i := range n {
			if _, err := natstest.TryPublish(js, "deskd.triggers.main", fmt.Sprintf("s%02d", i), fmt.Sprintf(`{"text": "storm event %02d"}`, i)); err != nil {
				t.Error(err)
			}
			published <- i
		}
		close(published)
	})
	d := startAPIBinary(t, "deskd 1", cfg)
	got := 0
	for k := 1; k <= kills; k++ {
		for got < k*n/(kills+1) {
			got = <-published + 1
		}
		killNow(t, d)
		d = startAPIBinary(t, fmt.Sprintf("deskd %d", k+1), cfg)
	}
	for range published {
	}
	// A message delivered to a killed deskd comes again after AckWait (30s).
	natstest.WaitAcked(t, nc, js, "MARKET", "deskd", 120*time.Second)
	states := map[string]int{}
	stateOf := map[string]string{}
	for i := range n {
		tr := d.trigger(t, fmt.Sprintf("s%02d", i))
		states[fmt.Sprint(tr["state"])]++
		stateOf[fmt.Sprintf("storm event %02d", i)] = fmt.Sprint(tr["state"])
		if tr["source"] != "nats" {
			t.Errorf("s%02d: source %v, want nats", i, tr["source"])
		}
	}
	d.stopCleanly(t, syscall.SIGTERM)
	if states["answered"]+states["interrupted"] != n || states["interrupted"] > kills {
		t.Errorf("states after the kills: %v; want all answered, but for at most one interrupted per kill", states)
	}
	sent := sessionUserTexts(t, filepath.Join(dir, "state", "desks", "main", "sessions"))
	for text, state := range stateOf {
		c := sent[text]
		if state == "answered" && c != 1 || state == "interrupted" && c > 1 {
			t.Errorf("%q (%s) was sent to the model %d times", text, state, c)
		}
	}
	t.Logf("after %d kills: %v", kills, states)
}

// TestNATSE2EEventsOut: with nats.events set, the daemon's events reach
// JetStream through the wiring of deskd run: a turn's turn.completed is
// published on deskd.events.main.turn.completed, its body the JSON of
// /v1/events and a Nats-Msg-Id set, and desk.started, sent before it in
// order, is stored in the stream. In process.
func TestNATSE2EEventsOut(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	nc, js := srv.Client()
	cfg := apiConfig(t, t.TempDir(), "{provider: scripted}", natsSection(srv)+"  events: {stream: DESKD_EVENTS}\n", "")
	sub, err := nc.SubscribeSync("deskd.events.main.turn.completed")
	if err != nil {
		t.Fatal(err)
	}
	d := startInProcess(t, "deskd", cfg, apiStart)
	d.waitReady(t)
	natstest.Publish(t, js, "deskd.triggers.main", "ev-1", `{"text": "NIFTY 22,450"}`)
	msg, err := sub.NextMsg(90 * time.Second)
	if err != nil {
		t.Fatalf("no turn.completed on NATS: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(msg.Data, &body); err != nil || body["desk"] != "main" || body["topic"] != "turn.completed" || body["trigger"] != "ev-1" ||
		msg.Header.Get(jetstream.MsgIDHeader) == "" {
		t.Errorf("turn.completed on NATS: body %s (%v), Nats-Msg-Id %q; want the event's JSON for trigger ev-1 and an id", msg.Data, err, msg.Header.Get(jetstream.MsgIDHeader))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, "DESKD_EVENTS")
	if err != nil {
		t.Fatalf("the events stream: %v", err)
	}
	started, err := stream.GetLastMsgForSubject(ctx, "deskd.events.main.desk.started")
	if err != nil || !strings.Contains(string(started.Data), `"topic":"desk.started"`) {
		t.Errorf("desk.started in the stream = %v (%v), want it stored before the turn's event was sent", started, err)
	}
}

// outcomesOnStream reads every turn.completed and turn.interrupted of desk
// main that the DESKD_EVENTS stream holds: per topic, how many times each
// trigger's.
func outcomesOnStream(t *testing.T, js jetstream.JetStream) map[string]map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "DESKD_EVENTS")
	if err != nil {
		t.Fatalf("the events stream: %v", err)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"deskd.events.main.turn.completed", "deskd.events.main.turn.interrupted"},
	})
	if err != nil {
		t.Fatalf("ordered consumer: %v", err)
	}
	out := map[string]map[string]int{"turn.completed": {}, "turn.interrupted": {}}
	for {
		batch, err := c.Fetch(500, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			var body struct{ Topic, Trigger string }
			if err := json.Unmarshal(m.Data(), &body); err != nil {
				t.Fatalf("event body %s: %v", m.Data(), err)
			}
			out[body.Topic][body.Trigger]++
		}
		if got == 0 {
			return out
		}
	}
}

// waitCount waits until n lines of d's satisfy match (warnings, such as a
// turn interrupted by the previous kill, may come between).
func waitCount(t *testing.T, d *deskdProc, n int, match func(stderrLine) bool) {
	t.Helper()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for {
		lines, changed := d.stderr.snapshot()
		c := 0
		for _, l := range lines {
			if match(l) {
				c++
			}
		}
		if c >= n {
			return
		}
		select {
		case <-changed:
		case <-d.exited:
			d.fail(t, "deskd exited (%s) before %d matching lines", d.state(), n)
		case <-deadline.C:
			d.fail(t, "%d of %d matching lines within 60s", c, n)
		}
	}
}

// TestNATSE2EEventsSurviveAKillStorm: deskd, publishing its events to
// NATS, is killed with SIGKILL again and again while NATS triggers come
// in. Afterwards every trigger the ledger says answered has its
// turn.completed on the stream, and every interrupted one its
// turn.interrupted, each once (a copy announced again after a kill has
// the same id, and the stream keeps one). The outbox used to lag the bus
// by a mailbox, and what it held at a kill was lost for good. The binary:
// SIGKILL.
func TestNATSE2EEventsSurviveAKillStorm(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	srv := natstest.Start(t)
	nc, js := srv.Client()
	dir := t.TempDir()
	cfg := apiConfig(t, dir, "{provider: scripted}", natsSection(srv)+"  events: {stream: DESKD_EVENTS}\n", "queue_limit: 1000\n")
	const n, kills, turnsEach = 200, 8, 6
	var pub sync.WaitGroup
	t.Cleanup(pub.Wait)
	d := startAPIBinary(t, "deskd 1", cfg)
	pub.Go(func() { // a backlog: the desk answers turn after turn, as fast as it can
		for i := range n {
			if _, err := natstest.TryPublish(js, "deskd.triggers.main", fmt.Sprintf("k%03d", i), fmt.Sprintf(`{"text": "kill storm %03d"}`, i)); err != nil {
				t.Error(err)
			}
		}
	})
	for k := 1; k <= kills; k++ {
		// Killed at once after a turn.completed is logged: the ledger
		// says answered; the event must be on its way to NATS.
		waitCount(t, d, turnsEach, isEvent("turn.completed"))
		killNow(t, d)
		d = startAPIBinary(t, fmt.Sprintf("deskd %d", k+1), cfg)
	}
	pub.Wait()
	natstest.WaitAcked(t, nc, js, "MARKET", "deskd", 120*time.Second)
	want := map[string]string{} // trigger: the topic of its outcome
	for i := range n {
		id := fmt.Sprintf("k%03d", i)
		deadline := time.Now().Add(30 * time.Second)
		for {
			tr := d.trigger(t, id)
			state := fmt.Sprint(tr["state"])
			if state == "answered" || state == "interrupted" {
				want[id] = map[string]string{"answered": "turn.completed", "interrupted": "turn.interrupted"}[state]
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is %s after the storm, want answered or interrupted", id, state)
			}
			<-time.After(50 * time.Millisecond) // the desk works through its queue
		}
	}
	d.stopCleanly(t, syscall.SIGTERM) // its outbox is sent before it stops, or by the next start
	d = startAPIBinary(t, "deskd after", cfg)
	var on map[string]map[string]int
	deadline := time.Now().Add(60 * time.Second)
	for {
		on = outcomesOnStream(t, js)
		missing := 0
		for id, topic := range want {
			if on[topic][id] == 0 {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		<-time.After(200 * time.Millisecond) // the outbox drains
	}
	d.stopCleanly(t, syscall.SIGTERM)
	lost := 0
	for id, topic := range want {
		switch c := on[topic][id]; {
		case c == 0:
			lost++
			t.Errorf("%s: the ledger says %s, but the stream has no %s for it", id, map[string]string{"turn.completed": "answered", "turn.interrupted": "interrupted"}[topic], topic)
		case c > 1:
			t.Errorf("%s: the stream holds its %s %d times, want once", id, topic, c)
		}
	}
	t.Logf("after %d kills: %d triggers, %d outcomes lost", kills, len(want), lost)
}
