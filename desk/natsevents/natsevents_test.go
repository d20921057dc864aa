package natsevents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics"
	"github.com/deskd/deskd/desk/natsevents"
)

// The metrics read a publisher's counts at scrape.
var _ metrics.NATSEvents = (*natsevents.Publisher)(nil)

const (
	stream  = "DESKD_EVENTS"
	subject = "deskd.events"
	wait    = 20 * time.Second
)

var t0 = time.Date(2026, 3, 2, 9, 15, 0, 0, time.UTC)

// natsServer is an embedded nats-server that a test can stop and start
// again on the same port and store.
type natsServer struct {
	t     *testing.T
	port  int
	store string
	s     *server.Server
}

// startNATS starts a JetStream server on a free port.
func startNATS(t *testing.T) *natsServer {
	t.Helper()
	n := &natsServer{t: t, port: -1, store: t.TempDir()}
	n.start()
	n.port = n.s.Addr().(*net.TCPAddr).Port
	return n
}

// deadNATS is a server that is not running yet, on a port of its own.
func deadNATS(t *testing.T) *natsServer {
	n := startNATS(t)
	n.stop()
	return n
}

func (n *natsServer) start() {
	n.t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: n.port, JetStream: true, StoreDir: n.store, NoLog: true, NoSigs: true})
	if err != nil {
		n.t.Fatalf("nats-server: %v", err)
	}
	s.Start()
	if !s.ReadyForConnections(wait) {
		n.t.Fatal("nats-server is not ready")
	}
	n.s = s
	n.t.Cleanup(s.Shutdown)
}

func (n *natsServer) stop() {
	n.s.Shutdown()
	n.s.WaitForShutdown()
}

func (n *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// connect connects to n, whether it runs or not, reconnecting for ever.
func (n *natsServer) connect() *nats.Conn {
	n.t.Helper()
	nc, err := nats.Connect(n.url(), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1),
		nats.ReconnectWait(20*time.Millisecond), nats.ReconnectJitter(0, 0))
	if err != nil {
		n.t.Fatalf("connect to %s: %v", n.url(), err)
	}
	n.t.Cleanup(nc.Close)
	return nc
}

// rig is a bus and a publisher on it.
type rig struct {
	t   *testing.T
	bus *event.Bus
	pub *natsevents.Publisher
	dir string
}

func newRig(t *testing.T, nc *nats.Conn, dir string, maxBytes int64, clk clock.Clock) *rig {
	t.Helper()
	bus := event.New()
	pub, err := natsevents.New(natsevents.Options{
		Conn: nc, Stream: stream, Subject: subject, Dir: dir, MaxBytes: maxBytes,
		Bus: bus, Clock: clk, Log: zerolog.Nop(),
	})
	if err != nil {
		t.Fatalf("natsevents.New: %v", err)
	}
	pub.Start()
	r := &rig{t: t, bus: bus, pub: pub, dir: dir}
	t.Cleanup(r.close)
	return r
}

// close closes the bus (every event it holds is kept), then the publisher.
func (r *rig) close() {
	r.bus.Close()
	if err := r.pub.Close(); err != nil {
		r.t.Errorf("close the publisher: %v", err)
	}
}

func (r *rig) waitStats(what string, cond func(natsevents.Stats) bool) natsevents.Stats {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.pub.WaitStats(ctx, cond); err != nil {
		r.t.Fatalf("%s: %v", what, err)
	}
	return r.pub.Stats()
}

// turn is an event of desk numbered n.
func turn(desk string, n int) event.TurnStarted {
	return event.TurnStarted{Header: event.Header{At: t0.Add(time.Duration(n) * time.Second), Desk: desk}, Trigger: fmt.Sprintf("t%03d", n), Kind: "market"}
}

// streamMsgs reads the first n messages of the stream, in order, failing
// when they do not come.
func streamMsgs(t *testing.T, nc *nats.Conn, n int) []jetstream.Msg {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var s jetstream.Stream
	for s == nil {
		if s, err = js.Stream(ctx, stream); err != nil && ctx.Err() != nil {
			t.Fatalf("stream %s: %v", stream, err)
		}
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatalf("ordered consumer: %v", err)
	}
	var out []jetstream.Msg
	for len(out) < n {
		batch, err := c.Fetch(n-len(out), jetstream.FetchMaxWait(wait))
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		got := 0
		for m := range batch.Messages() {
			out = append(out, m)
			got++
		}
		if got == 0 {
			t.Fatalf("stream %s holds %d messages, want %d", stream, len(out), n)
		}
	}
	return out
}

// streamCount is how many messages the stream stores.
func streamCount(t *testing.T, nc *nats.Conn) uint64 {
	t.Helper()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("stream %s info: %v", stream, err)
	}
	return info.State.Msgs
}

// trigger returns the trigger of a turn.started body.
func trigger(t *testing.T, m jetstream.Msg) string {
	var v struct{ Trigger string }
	if err := json.Unmarshal(m.Data(), &v); err != nil {
		t.Fatalf("body %s: %v", m.Data(), err)
	}
	return v.Trigger
}

func TestEventsArePublishedWithSubjectBodyAndMsgID(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	r := newRig(t, nc, t.TempDir(), 0, clock.NewFake(t0))

	started := event.DeskStarted{Header: event.Header{At: t0, Desk: "main"}, Model: "m", Provider: "p"}
	reloaded := event.ConfigReloaded{Header: event.Header{At: t0}}
	step := event.RolloverProgress{Header: event.Header{At: t0, Desk: "main", ID: "rollover:s1:summary"}}
	odd := turn("a.b *>", 1)
	event.Publish(r.bus, started)
	event.Publish(r.bus, reloaded)
	event.Publish(r.bus, step)
	event.Publish(r.bus, odd)

	msgs := streamMsgs(t, nc, 4)
	want := []struct {
		subject string
		e       event.Event
	}{
		{"deskd.events.main.desk.started", started},
		{"deskd.events._.config.reloaded", reloaded},
		{"deskd.events.main.rollover.progress", step},
		{"deskd.events.a%2Eb%20%2A%3E.turn.started", odd},
	}
	ids := map[string]bool{}
	for i, m := range msgs {
		if m.Subject() != want[i].subject {
			t.Errorf("message %d: subject %q, want %q", i, m.Subject(), want[i].subject)
		}
		if string(m.Data()) != string(event.JSON(want[i].e)) {
			t.Errorf("message %d: body %s, want %s", i, m.Data(), event.JSON(want[i].e))
		}
		id := m.Headers().Get(jetstream.MsgIDHeader)
		if id == "" || ids[id] {
			t.Errorf("message %d: Nats-Msg-Id %q is empty or not unique", i, id)
		}
		ids[id] = true
	}
	if id, want := msgs[2].Headers().Get(jetstream.MsgIDHeader), msgID(t, r.dir, "main", "rollover:s1:summary"); id != want {
		t.Errorf("an event with an id is published with Nats-Msg-Id %q, want %q (keyed with the install's secret)", id, want)
	}
	for _, i := range []int{0, 1, 3} {
		if id := msgs[i].Headers().Get(jetstream.MsgIDHeader); !strings.HasPrefix(id, "r-") || len(id) != 34 {
			t.Errorf("message %d: Nats-Msg-Id %q, want r- and 16 random bytes in hex", i, id)
		}
	}
	if !strings.HasPrefix(string(msgs[0].Data()), `{"topic":"desk.started",`) {
		t.Errorf("body %s does not start with its topic", msgs[0].Data())
	}

	js, _ := jetstream.New(nc)
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Storage != jetstream.FileStorage || cfg.Duplicates != natsevents.DefaultDuplicates || len(cfg.Subjects) != 1 || cfg.Subjects[0] != "deskd.events.>" {
		t.Errorf("stream config: storage %v, duplicates %s, subjects %v", cfg.Storage, cfg.Duplicates, cfg.Subjects)
	}
	st := r.waitStats("all acknowledged", func(s natsevents.Stats) bool { return s.Published == 4 && s.Waiting == 0 })
	if st.Dropped != 0 {
		t.Errorf("dropped %d", st.Dropped)
	}
}

func TestSubjectEscapesWhatASubjectCannotHold(t *testing.T) {
	for _, c := range []struct{ desk, topic, want string }{
		{"main", "turn.started", "p.main.turn.started"},
		{"", "config.reloaded", "p._.config.reloaded"},
		{"_", "turn.started", "p.%5F.turn.started"},
		{"a.b", "x", "p.a%2Eb.x"},
		{"é", "x..y", "p.%C3%A9.x.%.y"},
		{"100%", "x", "p.100%25.x"},
	} {
		if got := natsevents.Subject("p", c.desk, c.topic); got != c.want {
			t.Errorf("Subject(p, %q, %q) = %q, want %q", c.desk, c.topic, got, c.want)
		}
	}
}

func TestBadOptionsAreRefusedWithTheReason(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	for _, c := range []struct {
		stream, subject, want string
	}{
		{"", subject, "stream name is empty"},
		{"A.B", subject, "stream name \"A.B\""},
		{stream, "", "subject is empty"},
		{stream, "deskd.>", "events subject \"deskd.>\" holds"},
		{stream, "deskd..x", "empty token"},
	} {
		_, err := natsevents.New(natsevents.Options{Conn: nc, Stream: c.stream, Subject: c.subject, Dir: t.TempDir(), Bus: event.New()})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("stream %q subject %q: error %v, want one saying %q", c.stream, c.subject, err, c.want)
		}
	}
}

func TestAnEventWithAnIDPublishedTwiceIsStoredOnce(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	dir := t.TempDir()
	r := newRig(t, nc, dir, 0, clock.NewFake(t0))
	step := event.RolloverProgress{Header: event.Header{At: t0, Desk: "main", ID: "rollover:s1:fold"}}
	event.Publish(r.bus, step)
	event.Publish(r.bus, step)
	r.waitStats("both sent", func(s natsevents.Stats) bool { return s.Published == 2 })
	r.close()

	// Announced again after a restart (the keeper's rollover resumed).
	r2 := newRig(t, nc, dir, 0, clock.NewFake(t0))
	event.Publish(r2.bus, step)
	event.Publish(r2.bus, turn("main", 1))
	if st := r2.waitStats("sent after the restart", func(s natsevents.Stats) bool { return s.Published == 2 }); st.Duplicates != 0 {
		t.Errorf("Stats.Duplicates = %d: a repeat of deskd's own event counted as a duplicate", st.Duplicates)
	}
	if n := streamCount(t, nc); n != 2 {
		t.Errorf("stream holds %d messages, want 2 (the step once, the turn)", n)
	}
	msgs := streamMsgs(t, nc, 2)
	if msgs[0].Headers().Get(jetstream.MsgIDHeader) != msgID(t, dir, "main", "rollover:s1:fold") || trigger(t, msgs[1]) != "t001" {
		t.Errorf("stream holds %s then %s", msgs[0].Data(), msgs[1].Data())
	}
}

func TestEventsWaitWhileNATSIsAwayThenArriveInOrder(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	r := newRig(t, nc, t.TempDir(), 0, clock.NewFake(t0))
	event.Publish(r.bus, turn("main", 0))
	r.waitStats("the first sent", func(s natsevents.Stats) bool { return s.Published == 1 })

	ns.stop()
	const n = 60
	for i := 1; i <= n; i++ {
		event.Publish(r.bus, turn("main", i))
	}
	st := r.waitStats("kept while NATS is away", func(s natsevents.Stats) bool { return s.Waiting+int(s.Published) == n+1 })
	if st.Waiting == 0 {
		t.Fatalf("nothing waits while NATS is away: %+v", st)
	}

	ns.start()
	r.waitStats("all sent when NATS is back", func(s natsevents.Stats) bool { return s.Waiting == 0 })
	msgs := streamMsgs(t, nc, n+1)
	for i, m := range msgs {
		if want := fmt.Sprintf("t%03d", i); trigger(t, m) != want {
			t.Fatalf("message %d is %s, want trigger %s (in order)", i, m.Data(), want)
		}
	}
	if c := streamCount(t, nc); c != n+1 {
		t.Errorf("stream holds %d messages, want %d", c, n+1)
	}
}

func TestTheOutboxSurvivesARestartOfThePublisher(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	dir := t.TempDir()
	r := newRig(t, nc, dir, 0, clock.NewFake(t0))
	event.Publish(r.bus, turn("main", 0))
	event.Publish(r.bus, turn("main", 1))
	r.waitStats("two acknowledged", func(s natsevents.Stats) bool { return s.Published == 2 })
	ns.stop()
	event.Publish(r.bus, turn("main", 2))
	event.Publish(r.bus, turn("main", 3))
	r.waitStats("two waiting", func(s natsevents.Stats) bool { return s.Waiting == 2 })
	r.close()

	ns.start()
	r2 := newRig(t, nc, dir, 0, clock.NewFake(t0))
	st := r2.waitStats("the waiting two sent", func(s natsevents.Stats) bool { return s.Waiting == 0 })
	if st.Published != 2 {
		t.Errorf("the reopened publisher sent %d entries, want the 2 unacknowledged", st.Published)
	}
	msgs := streamMsgs(t, nc, 4)
	for i, m := range msgs {
		if want := fmt.Sprintf("t%03d", i); trigger(t, m) != want {
			t.Errorf("message %d is %s, want trigger %s", i, m.Data(), want)
		}
	}
	if c := streamCount(t, nc); c != 4 {
		t.Errorf("stream holds %d messages, want 4", c)
	}
}

func TestAFullOutboxDropsCountsAndAnnounces(t *testing.T) {
	ns := deadNATS(t) // away from the start
	nc := ns.connect()
	const maxBytes = 4 << 10
	dir := t.TempDir()
	r := newRig(t, nc, dir, maxBytes, clock.NewFake(t0))
	full := make(chan event.NATSOutboxFull, 10)
	drained := make(chan event.NATSOutboxDrained, 10)
	defer event.Subscribe(r.bus, func(e event.NATSOutboxFull) { full <- e })()
	defer event.Subscribe(r.bus, func(e event.NATSOutboxDrained) { drained <- e })()

	const n = 500
	for i := 0; i < n; i++ {
		event.Publish(r.bus, turn("main", i))
	}
	var f event.NATSOutboxFull
	select {
	case f = <-full:
	case <-time.After(wait):
		t.Fatal("no nats.outbox_full")
	}
	if f.MaxBytes != maxBytes || f.Dropped != 1 || f.Waiting == 0 {
		t.Errorf("nats.outbox_full %+v", f)
	}
	// The n events and nats.outbox_full itself, kept or dropped.
	st := r.waitStats("every event kept or dropped", func(s natsevents.Stats) bool { return s.Waiting+int(s.Dropped) == n+1 })
	if !st.Full || st.Dropped == 0 || st.Bytes > maxBytes {
		t.Errorf("stats %+v: want full, drops, at most %d bytes", st, maxBytes)
	}
	if fi, err := os.Stat(filepath.Join(dir, natsevents.OutboxFile)); err != nil || fi.Size() > maxBytes {
		t.Errorf("outbox file: %v, %d bytes (bound %d)", err, fi.Size(), maxBytes)
	}
	if len(full) != 0 {
		t.Errorf("nats.outbox_full announced %d more times in one outage", len(full))
	}

	ns.start()
	var d event.NATSOutboxDrained
	select {
	case d = <-drained:
	case <-time.After(wait):
		t.Fatalf("no nats.outbox_drained: %+v", r.pub.Stats())
	}
	if d.Dropped != st.Dropped || !d.Since.Equal(t0) {
		t.Errorf("nats.outbox_drained %+v, want dropped %d since %s", d, st.Dropped, t0)
	}
	// The kept turns, in order (nats.outbox_full among them if it fitted).
	next := 0
	for _, m := range streamMsgs(t, nc, st.Waiting) {
		if !strings.HasSuffix(m.Subject(), ".turn.started") {
			continue
		}
		if want := fmt.Sprintf("t%03d", next); trigger(t, m) != want {
			t.Fatalf("message %s, want trigger %s: the kept events in order", m.Data(), want)
		}
		next++
	}
	if next == 0 {
		t.Error("no turn was kept")
	}
	if s := r.pub.Stats(); s.Full {
		t.Errorf("still full after draining: %+v", s)
	}
}

func TestATornOutboxLineIsSetAsideAndAnnounced(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	dir := t.TempDir()
	good := `{"seq":7,"id":"x7","subject":"deskd.events.main.turn.started","data":{"topic":"turn.started","trigger":"t007"}}`
	if err := os.WriteFile(filepath.Join(dir, natsevents.OutboxFile), []byte(good+"\n"+`{"seq":8,"id":"x8","subj`), 0o600); err != nil {
		t.Fatal(err)
	}
	bus := event.New()
	torn := make(chan event.FileTorn, 1)
	defer event.Subscribe(bus, func(e event.FileTorn) { torn <- e })()
	pub, err := natsevents.New(natsevents.Options{Conn: nc, Stream: stream, Subject: subject, Dir: dir, Bus: bus, Clock: clock.NewFake(t0), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	pub.Start()
	defer pub.Close()
	defer bus.Close()
	var e event.FileTorn
	select {
	case e = <-torn:
	case <-time.After(wait):
		t.Fatal("no file.torn")
	}
	if e.Path != filepath.Join(dir, natsevents.OutboxFile) || e.Offset != int64(len(good)+1) || e.Bytes == 0 {
		t.Errorf("file.torn %+v", e)
	}
	if b, err := os.ReadFile(e.SavedTo); err != nil || string(b) != `{"seq":8,"id":"x8","subj` {
		t.Errorf("torn tail kept in %q: %q, %v", e.SavedTo, b, err)
	}
	msgs := streamMsgs(t, nc, 2)
	if msgs[0].Headers().Get(jetstream.MsgIDHeader) != "x7" || trigger(t, msgs[0]) != "t007" {
		t.Errorf("first message %s (%v), want the good entry", msgs[0].Data(), msgs[0].Headers())
	}
	if !strings.Contains(msgs[1].Subject(), ".file.torn") {
		t.Errorf("second message %s on %s, want the file.torn", msgs[1].Data(), msgs[1].Subject())
	}
}

func TestAPublishErrorBacksOffOnTheClock(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	// The stream exists but does not take the events' subjects yet.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"other.>"}}); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	r := newRig(t, nc, t.TempDir(), 0, clk)
	event.Publish(r.bus, turn("main", 0))
	if err := clk.WaitTimerAt(ctx, t0.Add(250*time.Millisecond)); err != nil {
		t.Fatalf("no backoff after the failed publish: %v", err)
	}
	if st := r.pub.Stats(); st.Published != 0 || st.Waiting != 1 {
		t.Fatalf("stats %+v, want the event waiting", st)
	}
	if _, err := js.UpdateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"other.>", "deskd.events.>"}}); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(250 * time.Millisecond))
	r.waitStats("sent after the backoff", func(s natsevents.Stats) bool { return s.Published == 1 })
}

func TestTheOutboxIsCompactedAsItIsAcknowledged(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	const maxBytes = 4 << 10
	dir := t.TempDir()
	path := filepath.Join(dir, natsevents.OutboxFile)
	r := newRig(t, nc, dir, maxBytes, clock.NewFake(t0))
	const n = 100 // about 15 KiB of entries through a 4 KiB outbox
	for i := 0; i < n; i++ {
		event.Publish(r.bus, turn("main", i))
		r.waitStats("sent", func(s natsevents.Stats) bool { return s.Published == int64(i+1) })
		if fi, err := os.Stat(path); err != nil || fi.Size() > maxBytes {
			t.Fatalf("after %d events the outbox file is %d bytes (bound %d): %v", i+1, fi.Size(), maxBytes, err)
		}
	}
	if st := r.pub.Stats(); st.Dropped != 0 || st.Waiting != 0 {
		t.Errorf("stats %+v, want nothing dropped or waiting", st)
	}
	r.close()

	r2 := newRig(t, nc, dir, maxBytes, clock.NewFake(t0))
	event.Publish(r2.bus, turn("main", n))
	st := r2.waitStats("the next sent", func(s natsevents.Stats) bool { return s.Waiting == 0 && s.Published > 0 })
	if st.Published != 1 {
		t.Errorf("the reopened publisher sent %d, want only the new event", st.Published)
	}
	if c := streamCount(t, nc); c != n+1 {
		t.Errorf("stream holds %d, want %d", c, n+1)
	}
}

func TestAnIDAHeaderCannotHoldMakesAHeaderSafeMsgID(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	r := newRig(t, nc, t.TempDir(), 0, clock.NewFake(t0))
	const id = "step\r\n1 100%"
	event.Publish(r.bus, event.RolloverProgress{Header: event.Header{At: t0, Desk: "main", ID: id}})
	msgs := streamMsgs(t, nc, 1)
	if got, want := msgs[0].Headers().Get(jetstream.MsgIDHeader), msgID(t, r.dir, "main", id); got != want {
		t.Errorf("Nats-Msg-Id %q, want %q", got, want)
	}
}

func TestNATSRestartedUnderLoadLosesAndRepeatsNothing(t *testing.T) {
	ns := startNATS(t)
	nc := ns.connect()
	r := newRig(t, nc, t.TempDir(), 0, clock.NewFake(t0))
	const n = 300
	for i := 0; i < n; i++ {
		if i == n/3 {
			ns.stop() // while the first third is being sent
		}
		if i == 2*n/3 {
			ns.start()
		}
		event.Publish(r.bus, turn("main", i))
	}
	r.waitStats("all sent", func(s natsevents.Stats) bool { return s.Published == n })
	for i, m := range streamMsgs(t, nc, n) {
		if want := fmt.Sprintf("t%03d", i); trigger(t, m) != want {
			t.Fatalf("message %d is %s, want trigger %s (in order)", i, m.Data(), want)
		}
	}
	if c := streamCount(t, nc); c != n {
		t.Errorf("stream holds %d messages, want %d (each once)", c, n)
	}
}
