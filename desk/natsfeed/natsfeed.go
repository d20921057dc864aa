// Package natsfeed is deskd's NATS ingress: a JetStream stream whose
// message on <prefix>.<desk> is a market trigger for that desk, consumed
// through a durable pull consumer of deskd's own.
//
// A message is acknowledged only once its trigger is durably queued (where
// POST /v1/desks/{desk}/triggers answers 202), so a message whose ack is
// lost, or that is redelivered after deskd was killed, finds its id in
// the desk's ledger and queues nothing new. A message that can never be a
// trigger (no such desk, a bad body, kind manual) is terminated and
// announced (nats.rejected); one the desk cannot take now (a full queue,
// a paused desk that refuses triggers, a failing disk, a restarting desk)
// is handed back with a delay (nats.backpressure).
//
// A sender that waits for the outcome names an inbox in Deskd-Reply-To:
// once the message is acked, deskd answers there when its trigger is final
// or the wait has passed (reply.go).
package natsfeed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/triggers"
)

// Settings of the stream and the consumer deskd creates.
const (
	// Duplicates is the dedupe window of a stream deskd creates: a
	// message published again with the same Nats-Msg-Id within it is
	// stored once. deskd does not rely on it: the desk's ledger knows
	// every id it queued, so a copy published after the window is stored
	// again but still queues nothing. It bounds the server's memory of ids.
	Duplicates = 10 * time.Minute
	// MaxAge is how long a stream deskd creates keeps a message: a
	// trigger not consumed within it (deskd down for a week) is lost. It
	// is shorter than the ledger keeps ids (desk.DefaultKeepFor, 30 days),
	// so a message delivered again always finds its id there.
	MaxAge = 7 * 24 * time.Hour
	// AckWait is how long NATS waits for deskd's ack before it delivers
	// a message again.
	AckWait = 30 * time.Second
	// DefaultNakDelay is how long a message handed back for backpressure
	// waits before NATS delivers it again.
	DefaultNakDelay = 5 * time.Second
	// Source is the source of a trigger from NATS in the ledger and the
	// events: "nats", or "nats:<source>" when the body names one.
	Source = "nats"
	// IDPrefix begins the id of a message that has neither a Nats-Msg-Id
	// nor a body id: nats-<stream>-<stream sequence>, the same on every
	// delivery of the message.
	IDPrefix = triggers.NATSIDPrefix
)

// Backpressure reasons, the reason label of deskd_nats_naks_total.
const (
	ReasonQueueFull = "queue_full"
	ReasonPaused    = "paused"
	ReasonStorage   = "storage"
	ReasonStopped   = "stopped"
	ReasonError     = "error"
)

// Desks is what the feed needs of the running desks. *desk.Set is one.
type Desks interface {
	// Get returns the desk called name.
	Get(name string) (*desk.Desk, bool)
}

var _ Desks = (*desk.Set)(nil)

// Options are a Feed's settings.
type Options struct {
	// Conn is the connection to NATS (natsconn.Conn.NATS()).
	Conn *nats.Conn
	// Triggers is the stream, subject and consumer (config nats.triggers).
	Triggers config.NATSTriggers
	// Desks are the desks triggers are for.
	Desks Desks
	// Bus receives nats.rejected and nats.backpressure.
	Bus *event.Bus
	// Clock is deskd's clock: events' times, and the retry waits while
	// the stream cannot be set up.
	Clock clock.Clock
	// Log receives what the feed could not do.
	Log zerolog.Logger
	// NakDelay is how long a message handed back waits; 0: DefaultNakDelay.
	NakDelay time.Duration
	// AckWait is the consumer's AckWait; 0: AckWait.
	AckWait time.Duration
	// Lease is the cluster's lease (cluster.lease); 0 (no cluster): one
	// consumer for every desk, Options.Triggers.Consumer. Set, the feed
	// is in cluster mode: it consumes nothing until Bind, and each desk
	// bound has a consumer of its own (DeskConsumerConfig) whose AckWait
	// is the lease (desks.go).
	Lease time.Duration
}

// Feed consumes the triggers stream until Stop.
type Feed struct {
	o      Options
	cancel context.CancelFunc
	done   chan struct{}

	// mu is held while a message is handled; stopped, set under it by
	// Stop, makes later messages go back unhandled, so that nothing is
	// acknowledged after Stop returns.
	mu      sync.Mutex
	stopped bool
	ready   chan struct{} // closed once consuming
	once    sync.Once

	// replies are the goroutines waiting to answer a Deskd-Reply-To
	// (at most MaxReplyWaits: waiting counts them); stopping, closed by
	// Stop, ends their waits.
	replies  sync.WaitGroup
	waiting  atomic.Int64
	stopping chan struct{}
	stopOnce sync.Once

	// In cluster mode (Options.Lease), the desks bound here (desks.go).
	bindings
}

// Start sets up the stream (if it does not exist) and the consumer, and
// consumes, in the background: while NATS is away it keeps trying. Stop
// ends it.
func Start(o Options) *Feed {
	if o.NakDelay <= 0 {
		o.NakDelay = DefaultNakDelay
	}
	if o.AckWait <= 0 {
		o.AckWait = AckWait
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Feed{o: o, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{}), stopping: make(chan struct{})}
	if o.Lease > 0 {
		f.startCluster()
		return f
	}
	go f.run(ctx)
	return f
}

// Ready is closed once the feed consumes (the stream and the consumer
// exist). In cluster mode it is closed at once: Bound says when a desk's
// consumer consumes.
func (f *Feed) Ready() <-chan struct{} { return f.ready }

// Stop stops consuming and waits for the message being handled, if any:
// after it returns, the feed acknowledges nothing and submits nothing,
// so the desks may stop. A sender waiting for a reply (Deskd-Reply-To) is
// answered at once with the trigger's state then (202).
func (f *Feed) Stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	f.cancel()
	<-f.done
	f.unbindAll()
	f.stopOnce.Do(func() { close(f.stopping) })
	f.replies.Wait()
}

// Guard returns front with the feed beside it: its Refuse stops the feed
// first, so that nothing is queued or acknowledged once deskd begins to
// stop (the desks stop after Refuse), then refuses front's mutations.
func (f *Feed) Guard(front desk.Frontend) desk.Frontend { return guarded{front, f} }

type guarded struct {
	desk.Frontend
	feed *Feed
}

func (g guarded) Refuse() { g.feed.Stop(); g.Frontend.Refuse() }

// Addrs is the addresses the front end guarded serves on, nil when it
// tells none: a cluster host's leases name the first TCP one (the 421's
// addr), whatever wraps the front end.
func (g guarded) Addrs() []string {
	if a, ok := g.Frontend.(interface{ Addrs() []string }); ok {
		return a.Addrs()
	}
	return nil
}

// run sets up and consumes until ctx ends; a consumer that stops (deleted
// on the server) is set up again.
func (f *Feed) run(ctx context.Context) {
	defer close(f.done)
	f.keep(ctx, consumer{
		config: ConsumerConfig(f.o.Triggers, f.o.AckWait), handle: f.handle, maxMessages: 64,
		ready: func() { f.once.Do(func() { close(f.ready) }) },
		stop:  jetstream.ConsumeContext.Stop,
	})
}

// consumer is one durable consumer the feed keeps: its config, its
// handler, how many messages it pulls ahead, what to do once it consumes
// and how to end it.
type consumer struct {
	config      jetstream.ConsumerConfig
	handle      jetstream.MessageHandler
	maxMessages int
	ready       func()
	stop        func(jetstream.ConsumeContext)
	// pullAgain, set, ends the consumption (draining what it pulled) when
	// a pull finds no responder, so that keep sets it up again a second
	// later: a consumer just made on a cluster may not be known yet on
	// this client's node, and the pull would otherwise wait for the next
	// missed heartbeat (30s).
	pullAgain bool
}

// keep sets c up and consumes until ctx ends; a consumer that stops
// (deleted on the server) is set up again.
func (f *Feed) keep(ctx context.Context, c consumer) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			if clock.Sleep(ctx, f.o.Clock, retryDelay(attempt)) != nil {
				return
			}
		}
		cc, err := f.consume(ctx, c)
		if err != nil {
			f.o.Log.Warn().Err(err).Str("stream", f.o.Triggers.Stream).Msg("nats triggers: cannot consume; trying again")
			continue
		}
		attempt = 0
		c.ready()
		select {
		case <-ctx.Done():
			c.stop(cc)
			f.closed(cc, c.config.Durable)
			return
		case <-cc.Closed():
			f.o.Log.Warn().Str("stream", f.o.Triggers.Stream).Str("consumer", c.config.Durable).
				Msg("nats triggers: the consumer stopped; setting it up again")
		}
	}
}

// closed waits, for up to 5s, until cc's subscription is gone; a message
// that still arrives meanwhile is handed back unhandled (Stop set stopped).
func (f *Feed) closed(cc jetstream.ConsumeContext, name string) {
	t := f.o.Clock.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-cc.Closed():
	case <-t.C():
		f.o.Log.Warn().Str("consumer", name).Msg("nats triggers: the subscription did not close within 5s; stopping without it")
	}
}

// retryDelay is the wait before set-up attempt n: 1s doubling to 30s.
func retryDelay(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// consume ensures the stream and the consumer c and starts consuming.
func (f *Feed) consume(ctx context.Context, c consumer) (jetstream.ConsumeContext, error) {
	js, err := jetstream.New(f.o.Conn)
	if err != nil {
		return nil, fmt.Errorf("nats triggers: jetstream: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := EnsureStream(cctx, js, f.o.Triggers); err != nil {
		return nil, err
	}
	name := c.config.Durable
	jc, err := js.CreateOrUpdateConsumer(cctx, f.o.Triggers.Stream, c.config)
	if err != nil {
		return nil, fmt.Errorf("nats triggers: create consumer %s on stream %s: %w", name, f.o.Triggers.Stream, err)
	}
	cc, err := jc.Consume(c.handle, jetstream.PullMaxMessages(c.maxMessages), jetstream.ConsumeErrHandler(func(cc jetstream.ConsumeContext, err error) {
		f.o.Log.Debug().Err(err).Str("consumer", name).Msg("nats triggers: consume")
		if c.pullAgain && errors.Is(err, nats.ErrNoResponders) {
			cc.Drain()
		}
	}))
	if err != nil {
		return nil, fmt.Errorf("nats triggers: consume %s on stream %s: %w", name, f.o.Triggers.Stream, err)
	}
	return cc, nil
}

// EnsureStream creates the triggers stream (file storage, the subject,
// Duplicates, MaxAge) if it does not exist. A stream that exists is left
// as it is (the operator's settings win), but it must hold the subject.
func EnsureStream(ctx context.Context, js jetstream.JetStream, t config.NATSTriggers) error {
	s, err := js.Stream(ctx, t.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name: t.Stream, Subjects: []string{t.Subject}, Storage: jetstream.FileStorage,
			Duplicates: Duplicates, MaxAge: MaxAge,
			Description: "deskd triggers: a message on " + t.Prefix() + ".<desk> is a trigger for that desk",
		})
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("nats triggers: create stream %s: %w", t.Stream, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("nats triggers: look up stream %s: %w", t.Stream, err)
	}
	for _, sub := range s.CachedInfo().Config.Subjects {
		if covers(sub, t.Subject) {
			return nil
		}
	}
	return fmt.Errorf("nats triggers: stream %s exists without the subject %s (it has %s): add it, or name another stream",
		t.Stream, t.Subject, strings.Join(s.CachedInfo().Config.Subjects, ", "))
}

// covers reports whether the stream subject pattern holds every subject
// of the pattern sub: token by token, "*" holds any one token and ">"
// any rest.
func covers(pattern, sub string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(sub, ".")
	for i, tok := range p {
		switch {
		case tok == ">":
			return i < len(s)
		case i >= len(s):
			return false
		case tok == "*" && s[i] != ">":
		case tok != s[i]:
			return false
		}
	}
	return len(p) == len(s)
}

// ConsumerConfig is deskd's durable consumer: explicit acks, ackWait, no
// limit to redeliveries (a trigger is never given up because deskd was
// busy), the triggers' subject only.
func ConsumerConfig(t config.NATSTriggers, ackWait time.Duration) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable: t.Consumer, Description: "deskd's trigger ingress",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: -1,
		DeliverPolicy: jetstream.DeliverAllPolicy, FilterSubject: t.Subject, MaxAckPending: 1000,
	}
}

// handle is one message's fate: a trigger queued (ack), refused for good
// (term), or handed back (nak with a delay).
func (f *Feed) handle(m jetstream.Msg) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		_ = m.Nak() // delivered again once deskd consumes again
		return
	}
	f.process(m, nil)
}

// process decides m's fate and acts on it. With a binding b (cluster
// mode), the fate is acted on only while b holds (b.hold): a message of
// a desk unbound meanwhile is handed back at once, unhandled, and one
// whose desk is not on this host is handed back with a delay.
func (f *Feed) process(m jetstream.Msg, b *binding) {
	subject := m.Subject()
	msgID := m.Headers().Get(jetstream.MsgIDHeader)
	rp, rerr := replyOf(m.Headers())
	d, t, err := f.trigger(m)
	if err == nil {
		err = rerr
	}
	if b != nil {
		if !b.hold() {
			_ = m.Nak() // its new owner takes it at once
			return
		}
		defer b.release()
		if errors.Is(err, errNoDesk) {
			f.backpressure(m, b.desk, msgID, err)
			return
		}
	}
	if err != nil {
		f.reject(m, subject, d, msgID, err.Error())
		f.answer(rp, http.StatusBadRequest, errorBody{Error: err.Error()})
		return
	}
	acc, err := d.Submit(t)
	if err != nil {
		f.backpressure(m, d.Name(), acc.ID, err)
		return // no answer: the message comes again
	}
	defer f.replyOnceFinal(rp, d, acc) // after the ack: the answer never comes before it
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.DoubleAck(ctx); err != nil {
		// Delivered again after AckWait: a duplicate, acknowledged then.
		f.o.Log.Warn().Err(err).Str("desk", d.Name()).Str("trigger", acc.ID).Msg("nats triggers: ack not confirmed; the message will come again and find its trigger queued")
	}
}

// trigger reads the desk and the trigger of m. The desk is nil when the
// subject names none.
func (f *Feed) trigger(m jetstream.Msg) (*desk.Desk, triggers.Trigger, error) {
	name, err := deskOf(m.Subject(), f.o.Triggers.Prefix())
	if err != nil {
		return nil, triggers.Trigger{}, err
	}
	d, ok := f.o.Desks.Get(name)
	if !ok {
		return nil, triggers.Trigger{}, fmt.Errorf("%w %q", errNoDesk, name)
	}
	req, err := triggers.DecodeFeedRequest(m.Data())
	if err != nil {
		return d, triggers.Trigger{}, err
	}
	id, err := idOf(m, req.ID, f.o.Triggers.Stream)
	if err != nil {
		return d, triggers.Trigger{}, err
	}
	req.ID = id
	source := Source
	if req.Source != "" {
		source = Source + ":" + req.Source
		req.Source = ""
	}
	return d, req.Trigger(d.Name(), source), nil
}

// errNoDesk is the error of a message for a desk Desks does not have.
var errNoDesk = errors.New("no desk")

// deskOf is the desk named by subject: its one token after prefix.
func deskOf(subject, prefix string) (string, error) {
	name, ok := strings.CutPrefix(subject, prefix+".")
	switch {
	case !ok || name == "":
		return "", fmt.Errorf("subject %q: want %s.<desk>", subject, prefix)
	case strings.Contains(name, "."):
		return "", fmt.Errorf("subject %q: want %s.<desk>, one token after the prefix", subject, prefix)
	}
	return name, nil
}

// idOf is the idempotency key of m: its Nats-Msg-Id header, else the
// body's id, else nats-<stream>-<stream sequence>. A header and a body id
// that differ are refused: the one the sender reads back by would not be
// the trigger's.
func idOf(m jetstream.Msg, bodyID, stream string) (string, error) {
	hdr := m.Headers().Get(jetstream.MsgIDHeader)
	switch {
	case hdr != "" && bodyID != "" && hdr != bodyID:
		return "", fmt.Errorf("the Nats-Msg-Id header %q and the body's id %q differ: set one of them, or the same in both", hdr, bodyID)
	case hdr != "":
		if err := triggers.CheckClientID(hdr); err != nil {
			return "", fmt.Errorf("Nats-Msg-Id: %w", err)
		}
		return hdr, nil
	case bodyID != "":
		return bodyID, nil // checked by DecodeFeedRequest
	}
	md, err := m.Metadata()
	if err != nil {
		return "", fmt.Errorf("the message has no id and no JetStream metadata: %w", err)
	}
	return IDPrefix + stream + "-" + strconv.FormatUint(md.Sequence.Stream, 10), nil
}

// reject terminates m and announces why.
func (f *Feed) reject(m jetstream.Msg, subject string, d *desk.Desk, msgID, reason string) {
	h := event.Header{At: f.o.Clock.Now()}
	if d != nil {
		h.Desk = d.Name()
	}
	if err := m.TermWithReason(reason); err != nil {
		f.o.Log.Warn().Err(err).Str("subject", subject).Msg("nats triggers: terminate a refused message")
	}
	event.Publish(f.o.Bus, event.NATSRejected{Header: h, Subject: subject, MsgID: msgID, Reason: reason})
}

// backpressure hands m back with a delay and announces why.
func (f *Feed) backpressure(m jetstream.Msg, deskName, id string, err error) {
	reason := ReasonError
	switch {
	case errors.Is(err, triggers.ErrQueueFull):
		reason = ReasonQueueFull
	case errors.Is(err, desk.ErrPaused):
		reason = ReasonPaused
	case errors.Is(err, desk.ErrStorage):
		reason = ReasonStorage
	case errors.Is(err, desk.ErrStopped), errors.Is(err, errNoDesk): // errNoDesk: cluster mode's desk bound here, not running
		reason = ReasonStopped
	}
	delay := f.nakDelay(m)
	if nerr := m.NakWithDelay(delay); nerr != nil {
		f.o.Log.Warn().Err(nerr).Str("desk", deskName).Msg("nats triggers: hand back a message (it will come again after AckWait)")
	}
	event.Publish(f.o.Bus, event.NATSBackpressure{
		Header: event.Header{At: f.o.Clock.Now(), Desk: deskName}, Trigger: id, Reason: reason, Error: err.Error(),
		DelayMS: delay.Milliseconds(),
	})
}

// MaxNakDelay bounds the delay of a message handed back again and again.
const MaxNakDelay = 5 * time.Minute

// nakDelay is how long m waits before it comes again: NakDelay at its
// first delivery, doubled at each one after, up to MaxNakDelay, so that a
// desk that stays paused or full does not make its backlog come round
// every few seconds.
func (f *Feed) nakDelay(m jetstream.Msg) time.Duration {
	d := f.o.NakDelay
	if md, err := m.Metadata(); err == nil {
		for n := uint64(1); n < md.NumDelivered && d < MaxNakDelay; n++ {
			d *= 2
		}
	}
	return min(d, MaxNakDelay)
}
