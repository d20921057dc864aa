package natsevents_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/natsevents"
)

// forge publishes body on subject with Nats-Msg-Id id, as a publisher
// with the right to publish on the events' subjects may.
func forge(t *testing.T, nc *nats.Conn, subject, id, body string) {
	t.Helper()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	msg := &nats.Msg{Subject: subject, Data: []byte(body), Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, id)
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatalf("forge %s: %v", subject, err)
	}
}

// TestAPredictedIDCannotPreemptAnEvent: a rollover step's id can be read
// (rollover:<session>:<step>, the session from GET /v1/desks). A message
// published first with that id as its Nats-Msg-Id must not make the
// stream drop deskd's own event as a duplicate.
func TestAPredictedIDCannotPreemptAnEvent(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	r := newRig(t, nc, t.TempDir(), 0, clock.NewFake(t0))
	event.Publish(r.bus, turn("main", 0)) // the stream exists once it is sent
	r.waitStats("the first sent", func(s natsevents.Stats) bool { return s.Published == 1 })

	const id = "rollover:s1:reset"
	subj := "deskd.events.main.rollover.progress"
	for _, guess := range []string{id, "main:" + id, "main/" + id} {
		forge(t, nc, subj, guess, `{"topic":"rollover.progress","desk":"main","forged":true}`)
	}
	step := event.RolloverProgress{Header: event.Header{At: t0, Desk: "main", ID: id}, Phase: "reset"}
	event.Publish(r.bus, step)
	r.waitStats("the step sent", func(s natsevents.Stats) bool { return s.Published == 2 })

	var real int
	for _, m := range streamMsgs(t, nc, int(streamCount(t, nc))) {
		if string(m.Data()) == string(event.JSON(step)) {
			real++
			if got := m.Headers().Get(jetstream.MsgIDHeader); strings.Contains(got, id) {
				t.Errorf("Nats-Msg-Id %q holds the event's own id: it can be predicted", got)
			}
		}
	}
	if real != 1 {
		t.Errorf("the stream holds deskd's rollover step %d times, want once: a forged message with its predicted id took its place", real)
	}
}

// msgID is the documented Nats-Msg-Id of an event with an id: "k-" and
// the first 16 bytes, in hex, of HMAC-SHA256 over desk, a NUL byte and the
// event's id, keyed with the install's secret (the hex in KeyFile).
func msgID(t *testing.T, dir, desk, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, natsevents.KeyFile))
	if err != nil {
		t.Fatalf("the install's secret: %v", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < 16 {
		t.Fatalf("the install's secret %q: %v (want at least 16 bytes in hex)", b, err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(desk + "\x00" + id))
	return "k-" + hex.EncodeToString(m.Sum(nil)[:16])
}

// TestAForcedDuplicateIsAnnounced: when the stream drops an event sent for
// the first time as a duplicate of a message that is not deskd's copy of
// it (here forged with its id, as if the secret had leaked), deskd
// announces nats.duplicate, counts it, and says what was dropped. A
// repeat of deskd's own event (a rollover step announced again) is not
// announced.
func TestAForcedDuplicateIsAnnounced(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	dir := t.TempDir()
	r := newRig(t, nc, dir, 0, clock.NewFake(t0))
	dups := make(chan event.NATSDuplicate, 10)
	defer event.Subscribe(r.bus, func(e event.NATSDuplicate) { dups <- e })()

	own := event.RolloverProgress{Header: event.Header{At: t0, Desk: "main", ID: "rollover:s1:fold"}, Phase: "folding"}
	event.Publish(r.bus, own)
	event.Publish(r.bus, own) // announced again: the stream keeps one, nothing to say
	r.waitStats("the step sent twice", func(s natsevents.Stats) bool { return s.Published == 2 })

	const id = "rollover:s1:reset"
	forged := msgID(t, dir, "main", id)
	forge(t, nc, "deskd.events.main.rollover.progress", forged, `{"topic":"rollover.progress","desk":"main","forged":true}`)
	event.Publish(r.bus, event.RolloverProgress{Header: event.Header{At: t0, Desk: "main", ID: id}, Phase: "reset"})

	var d event.NATSDuplicate
	select {
	case d = <-dups:
	case <-time.After(wait):
		t.Fatalf("no nats.duplicate: %+v", r.pub.Stats())
	}
	if d.Desk != "main" || d.EventID != id || d.MsgID != forged || d.Subject != "deskd.events.main.rollover.progress" || d.StreamSeq == 0 {
		t.Errorf("nats.duplicate %+v, want desk main, the event's id, its Nats-Msg-Id %s, its subject and the stored copy's sequence", d, forged)
	}
	st := r.waitStats("the nats.duplicate sent too", func(s natsevents.Stats) bool { return s.Waiting == 0 && s.Published == 4 })
	if st.Duplicates != 1 {
		t.Errorf("Stats.Duplicates = %d, want 1 (the forged one, not deskd's own repeat)", st.Duplicates)
	}
	if len(dups) != 0 {
		t.Errorf("%d more nats.duplicate, want only the forged one's", len(dups))
	}
}

// TestTheSecretIsKeptAndADamagedOneSetAside: the install's secret is made
// once and read again at every start (an event with an id gets the same
// Nats-Msg-Id after a restart); a file that holds no secret (emptied by a
// crash of the host) is set aside, never deleted, and a new one made.
func TestTheSecretIsKeptAndADamagedOneSetAside(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	dir := t.TempDir()
	r := newRig(t, nc, dir, 0, clock.NewFake(t0))
	path := filepath.Join(dir, natsevents.KeyFile)
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no secret after New: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the secret's mode: %v, %v; want 0600", fi.Mode(), err)
	}
	r.close()
	r = newRig(t, nc, dir, 0, clock.NewFake(t0))
	if again, _ := os.ReadFile(path); string(again) != string(first) {
		t.Errorf("the secret changed at a restart: %q, then %q", first, again)
	}
	r.close()

	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	newRig(t, nc, dir, 0, clock.NewFake(t0))
	if b, err := os.ReadFile(path + ".damaged-1"); err != nil || len(b) != 0 {
		t.Errorf("the damaged secret was not set aside as %s.damaged-1: %q, %v", path, b, err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) == string(first) || len(strings.TrimSpace(string(b))) != 64 {
		t.Errorf("the new secret %q (%v), want 32 new bytes in hex", b, err)
	}
}
