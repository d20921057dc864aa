package main

// End-to-end tests of the NATS ingress against a real nats-server
// (desk/natstest): in process, a message answered, a refused one
// announced, and the state of the connection in /healthz, the metrics
// and deskd status while the server is away; the daemon's events out.
// The kill storms (the binary SIGKILLed mid-stream, every message answered
// exactly once, every outcome on the events stream) are in
// nats_killstorm_slow_test.go, behind the slow build tag; the helpers they
// share stay here.

import (
	"context"
	"encoding/json"
	"strings"
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
	d.terminate(t)
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
