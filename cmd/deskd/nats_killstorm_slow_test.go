//go:build slow

// The NATS kill storms: slow (about 30 s and 90 s) because a message
// delivered to a deskd that was SIGKILLed comes again only after the
// consumer's AckWait (30 s of the NATS server's real time), and each kill
// restarts the binary. CI runs them: go test -race -tags slow ./...

package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk/natsfeed"
	"github.com/deskd/deskd/desk/natstest"
)

// afterTheKills bounds the wait, once the last deskd is up and every
// message published, until the consumer has nothing pending: a message
// delivered to a killed deskd comes again an AckWait after that delivery;
// one the live deskd took before it (up to 64 pulled at once, handled one
// by one on a loaded machine) may time out once more; a minute for the
// rest.
const afterTheKills = 2*natsfeed.AckWait + time.Minute

// natsStormRig starts a NATS server (natstest.Start) and writes a config
// (apiConfig, the scripted model) whose desk main takes its triggers from
// the server's MARKET stream (natsSection, then natsExtra in the nats
// section) and queues up to 1,000 of them. It returns a client of the
// server, the config's folder and its main file.
func natsStormRig(t *testing.T, natsExtra string) (nc *nats.Conn, js jetstream.JetStream, dir, cfg string) {
	t.Helper()
	srv := natstest.Start(t)
	nc, js = srv.Client()
	dir = t.TempDir()
	cfg = apiConfig(t, dir, "{provider: scripted}", natsSection(srv)+natsExtra, "queue_limit: 1000\n")
	return nc, js, dir, cfg
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
	nc, js, dir, cfg := natsStormRig(t, "")
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
	natstest.WaitAcked(t, nc, js, "MARKET", "deskd", afterTheKills)
	states, stateOf, trs := stormOutcomes(t, d, n)
	for i, tr := range trs {
		if tr["source"] != "nats" {
			t.Errorf("s%02d: source %v, want nats", i, tr["source"])
		}
	}
	d.terminate(t)
	if states["answered"]+states["interrupted"] != n || states["interrupted"] > kills {
		t.Errorf("states after the kills: %v; want all answered, but for at most one interrupted per kill", states)
	}
	sentOnce(t, dir, stateOf)
	t.Logf("after %d kills: %v", kills, states)
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
	nc, js, _, cfg := natsStormRig(t, "  events: {stream: DESKD_EVENTS}\n")
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
	natstest.WaitAcked(t, nc, js, "MARKET", "deskd", afterTheKills)
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
	d.terminate(t) // its outbox is sent before it stops, or by the next start
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
	d.terminate(t)
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
