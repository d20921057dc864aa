package natstest_test

import (
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk/natstest"
)

// streamS is a server with stream S (subjects s.>) and its durable
// consumer C, acked explicitly and never redelivered within a test; nc
// and js are a client of the server.
func streamS(t *testing.T) (*natstest.Server, *nats.Conn, jetstream.JetStream, jetstream.Consumer) {
	t.Helper()
	srv := natstest.Start(t)
	nc, js := srv.Client()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	c, err := js.CreateOrUpdateConsumer(ctx, "S", jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return srv, nc, js, c
}

// TestWaitAckedSeesTheLastAckHoweverLateItIsApplied: the consumer's
// last pending message is acked once the server's consumer has a long
// queue of acks to apply before it, acks WaitAcked does not hear (in the
// version 2 format of ack subjects: naks of the other message, and at
// last its ack). So WaitAcked hears the last ack long before the server
// has applied it. It returns once the server has: it used to read the
// consumer's info at once, still find the message pending, and wait to its
// deadline for another ack that would never come (the flaky
// TestNATSE2EKillStorm of cmd/deskd: "still has messages pending",
// NumAckPending:1, NumWaiting:2, with deskd alive and done).
func TestWaitAckedSeesTheLastAckHoweverLateItIsApplied(t *testing.T) {
	srv, nc, js, c := streamS(t)
	natstest.Publish(t, js, "s.x", "one", "the first message")
	natstest.Publish(t, js, "s.x", "two", "the second message")
	batch, err := c.Fetch(2, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	if len(msgs) != 2 {
		t.Fatalf("fetched %d messages, want 2: %v", len(msgs), batch.Error())
	}
	other, _ := srv.Client() // the consumer's connection
	// Advisories are made (and so the naks take time to apply) only for a
	// subscriber.
	if _, err := other.Subscribe("$JS.EVENT.ADVISORY.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	// WaitAcked reads the consumer's info first; the acks come after it.
	infos, err := other.SubscribeSync("$JS.API.CONSUMER.INFO.S.C")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Flush(); err != nil {
		t.Fatal(err)
	}
	v2 := "$JS.ACK._." + accountHash("$G") + ".S.C.1.1.1.0.0" // the first message's
	var acker sync.WaitGroup
	defer acker.Wait()
	acker.Go(func() {
		if _, err := infos.NextMsg(20 * time.Second); err != nil {
			t.Errorf("WaitAcked never read the consumer's info: %v", err)
			return
		}
		for range 100000 {
			if err := other.Publish(v2, []byte(`-NAK {"delay": 3600000000000}`)); err != nil {
				t.Errorf("nak: %v", err)
				return
			}
		}
		if err := other.Publish(v2, []byte("+ACK")); err != nil {
			t.Errorf("ack: %v", err)
		}
		// The one ack WaitAcked hears, on the same connection, so last.
		if err := other.Publish(msgs[1].Reply(), []byte("+ACK")); err != nil {
			t.Errorf("ack: %v", err)
		}
		if err := other.Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
	})
	start := time.Now()
	info := natstest.WaitAcked(t, nc, js, "S", "C", 15*time.Second)
	if info.NumAckPending != 0 || info.AckFloor.Stream != 2 {
		t.Errorf("WaitAcked returned %+v, want both messages acked", info)
	}
	t.Logf("WaitAcked returned after %v", time.Since(start))
}

// accountHash is the hash of an account's name in the version 2 format
// of ack subjects (nats-server's getHash: the first 8 bytes of its
// SHA-256, each a base-62 digit).
func accountHash(name string) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := sha256.Sum256([]byte(name))
	h := make([]byte, 8)
	for i := range h {
		h[i] = digits[int(b[i]%62)]
	}
	return string(h)
}

// TestWaitAckedSeesEveryAck: messages acked one by one while WaitAcked
// waits; it returns once the last is, with nothing pending.
func TestWaitAckedSeesEveryAck(t *testing.T) {
	_, nc, js, c := streamS(t)
	const n = 50
	for i := range n {
		natstest.Publish(t, js, "s.x", "", string(rune('a'+i%26)))
	}
	var acker sync.WaitGroup
	defer acker.Wait()
	acker.Go(func() {
		batch, err := c.Fetch(n, jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			t.Errorf("fetch: %v", err)
			return
		}
		for m := range batch.Messages() {
			if err := m.Ack(); err != nil {
				t.Errorf("ack: %v", err)
			}
		}
	})
	info := natstest.WaitAcked(t, nc, js, "S", "C", 15*time.Second)
	if info.NumAckPending != 0 || info.NumPending != 0 || info.AckFloor.Stream != n {
		t.Errorf("WaitAcked returned %+v, want all %d messages acked", info, n)
	}
}
