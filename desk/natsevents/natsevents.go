// Package natsevents publishes every event of deskd's bus to NATS
// JetStream, through a bounded, durable outbox.
//
// A Publisher is the bus's exporter (event.Export): each event is written
// to the outbox, a file in its own folder, in the goroutine that publishes
// it, before Publish returns (and before any subscriber gets it), so that
// no full mailbox can drop it and a producer that stages an event before
// recording the state it reports (event.Stage) never has the state
// recorded and the event lost to a SIGKILL. The write is not fsynced
// there, so that a turn never waits for a disk flush: the sender fsyncs
// what was written since its last fsync (one fsync for all of it) as soon
// as it wakes, before it sends. One sender goroutine publishes the
// outbox's entries in order, one at a time, as <subject>.<desk>.<topic>
// (Subject), the body the event's JSON as on GET /v1/events (event.JSON),
// with the header Nats-Msg-Id. That id cannot be told in advance by
// anybody else, so that nobody who may publish on the stream can make it
// drop one of deskd's events as a duplicate: for an event with an id of
// its own (Header.ID, such as a rollover step's) it is keyed with the
// install's secret (KeyFile), the same on every copy; for the others it
// is random. Either way the outbox keeps it with the event. An entry
// leaves the outbox only after the stream's PubAck, so a restart sends
// what was not acknowledged again, with the same ids, and the stream's
// duplicate window stores it once. A PubAck that says duplicate for an
// event sent for the first time, whose stored copy is not deskd's, is
// announced (nats.duplicate) and counted.
//
// While NATS is away the sender waits for the connection to come back (it
// never leaves events to nats.go's reconnect buffer); after a publish error
// it backs off on the injected clock. At MaxBytes the outbox keeps no new
// event: they are counted as dropped, announced once per outage
// (nats.outbox_full) and again when the outbox has emptied
// (nats.outbox_drained).
package natsevents

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk/broadcast"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/gate"
	"github.com/deskd/deskd/memory/durable"
)

const (
	// DefaultMaxBytes is the outbox's bound when Options.MaxBytes is 0.
	DefaultMaxBytes = 64 << 20
	// DefaultDuplicates is the duplicate window of a stream the publisher
	// creates when Options.Duplicates is 0: an entry sent again (after a
	// lost PubAck, or announced again after a crash) within it is stored
	// once; one sent again later than that is stored twice.
	DefaultDuplicates = 10 * time.Minute
	// firstBackoff and maxBackoff bound the wait after a publish error.
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 30 * time.Second
)

// Options are what a Publisher needs.
type Options struct {
	// Conn is the NATS connection; its owner connects, reconnects and
	// closes it (after Close).
	Conn *nats.Conn
	// Stream is the JetStream stream of the events, created (file
	// storage, subjects <Subject>.>, Duplicates) if it does not exist.
	// An existing stream is used as it is.
	Stream string
	// Subject is the subjects' prefix, such as "deskd.events".
	Subject string
	// Dir is the outbox's folder (under state_dir); created if needed.
	Dir string
	// MaxBytes bounds the outbox's file, and its memory; 0 is
	// DefaultMaxBytes.
	MaxBytes int64
	// Duplicates is the duplicate window of a stream the publisher
	// creates; 0 is DefaultDuplicates.
	Duplicates time.Duration
	// Bus is where the events come from, and where the publisher's own
	// (file.torn, nats.outbox_full, nats.outbox_drained) go.
	Bus *event.Bus
	// Clock times the backoff and the publisher's events.
	Clock clock.Clock
	// Log receives the publisher's warnings.
	Log zerolog.Logger
}

// Stats is what the publisher has done so far.
type Stats struct {
	// Waiting is how many events wait in the outbox for their PubAck.
	Waiting int
	// Bytes is the outbox file's size.
	Bytes int64
	// Published counts the events NATS acknowledged since New.
	Published int64
	// Dropped counts the events the outbox could not keep since New.
	Dropped int64
	// Duplicates counts the events the stream dropped, since New, as
	// duplicates of a message that was not deskd's copy (nats.duplicate).
	Duplicates int64
	// Full is true from the first event dropped until the outbox empties.
	Full bool
}

// Publisher publishes the bus's events to NATS. Use New, then Start;
// Close stops it.
type Publisher struct {
	o    Options
	js   jetstream.JetStream
	ob   *outbox
	scan durable.Scan
	key  []byte // the install's secret (KeyFile)

	published  atomic.Int64
	dropped    atomic.Int64
	duplicates atomic.Int64

	// life: keep enters it while it writes to the outbox, so that Close
	// never closes the file under it.
	life gate.Gate

	mu          sync.Mutex
	full        bool
	fullSince   time.Time
	fullDropped int64
	changed     broadcast.Signal // notified at every change of Stats
	failing     bool             // publishing fails (logged once per streak)
	inflight    func()           // cancels the publish in flight, if any
	syncFailing bool             // the outbox's fsync fails (logged once per streak)

	unsubscribe func()
	stop        context.CancelFunc
	done        chan struct{}
}

// New opens (creating it) the outbox in o.Dir and returns a publisher of
// the events it will hold; nothing is sent before Start.
func New(o Options) (*Publisher, error) {
	if err := check(&o); err != nil {
		return nil, err
	}
	js, err := jetstream.New(o.Conn)
	if err != nil {
		return nil, fmt.Errorf("NATS events: JetStream on the connection: %w", err)
	}
	ob, sc, err := openOutbox(o.Dir, o.MaxBytes)
	if err != nil {
		return nil, err
	}
	key, damaged, err := loadKey(o.Dir)
	if err != nil {
		_ = ob.Close()
		return nil, err
	}
	if damaged != "" {
		o.Log.Warn().Str("path", filepath.Join(o.Dir, KeyFile)).Str("saved_to", damaged).
			Msg("NATS events: the secret of the events' ids was damaged; set aside and made again (an event announced again may be stored twice)")
	}
	return &Publisher{o: o, js: js, ob: ob, scan: sc, key: key}, nil
}

// check validates o and applies the defaults.
func check(o *Options) error {
	switch {
	case o.Conn == nil:
		return errors.New("NATS events: no connection")
	case o.Bus == nil:
		return errors.New("NATS events: no bus")
	case o.Dir == "":
		return errors.New("NATS events: no outbox folder")
	case o.MaxBytes < 0:
		return fmt.Errorf("NATS events: outbox max bytes %d is negative", o.MaxBytes)
	case o.Duplicates < 0:
		return fmt.Errorf("NATS events: duplicate window %s is negative", o.Duplicates)
	}
	if err := checkStream(o.Stream); err != nil {
		return fmt.Errorf("NATS events: %w", err)
	}
	if err := checkPrefix(o.Subject); err != nil {
		return fmt.Errorf("NATS events: %w", err)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Duplicates == 0 {
		o.Duplicates = DefaultDuplicates
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	return nil
}

// Start makes the publisher the bus's exporter, announces the damage New
// found in the outbox's file (file.torn), and starts sending what waits in
// it. Call it once, before the desks start, so that their first events
// are kept.
func (p *Publisher) Start() {
	ctx, stop := context.WithCancel(context.Background())
	p.stop, p.done = stop, make(chan struct{})
	status := p.o.Conn.StatusChanged(nats.CONNECTED, nats.CLOSED)
	lost := p.o.Conn.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	p.unsubscribe = event.Export(p.o.Bus, p.take)
	p.announceDamage()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer p.o.Conn.RemoveStatusListener(status)
		p.send(ctx, status)
	})
	wg.Go(func() { // a publish in flight when the connection drops is given up on at once, not at its timeout
		defer p.o.Conn.RemoveStatusListener(lost)
		for {
			select {
			case <-lost:
				p.cancelInflight()
			case <-ctx.Done():
				return
			}
		}
	})
	go func() {
		defer close(p.done)
		wg.Wait()
	}()
}

// Close stops taking events and sending them, and fsyncs and closes the
// outbox; what waits in it is sent by the next publisher on the same
// folder. Call it after the bus is closed (the daemon's shutdown closes
// it), so that every event published is kept. The connection stays open.
func (p *Publisher) Close() error {
	if !p.life.Shut() {
		return nil
	}
	if p.unsubscribe != nil {
		p.unsubscribe()
		p.stop()
		<-p.done
	}
	err := p.ob.Flush()
	if cerr := p.ob.Close(); err == nil {
		err = cerr
	}
	return err
}

// Stats returns what the publisher has done so far.
func (p *Publisher) Stats() Stats {
	waiting, size := p.ob.Counts()
	p.mu.Lock()
	full := p.full
	p.mu.Unlock()
	return Stats{Waiting: waiting, Bytes: size, Published: p.published.Load(), Dropped: p.dropped.Load(),
		Duplicates: p.duplicates.Load(), Full: full}
}

// DuplicateCount returns Stats's Duplicates, for the metrics read at scrape.
func (p *Publisher) DuplicateCount() int64 { return p.duplicates.Load() }

// OutboxCounts returns Stats's numbers, for the metrics read at scrape.
func (p *Publisher) OutboxCounts() (waiting int, bytes, published, dropped int64) {
	s := p.Stats()
	return s.Waiting, s.Bytes, s.Published, s.Dropped
}

// WaitStats returns once cond holds of the publisher's Stats, or ctx's
// error when it ends first.
func (p *Publisher) WaitStats(ctx context.Context, cond func(Stats) bool) error {
	if err := p.changed.Wait(ctx, func() bool { return cond(p.Stats()) }); err != nil {
		return fmt.Errorf("wait for the NATS event publisher (%+v): %w", p.Stats(), err)
	}
	return nil
}

// announceDamage announces (file.torn) what OpenLog set aside or skipped
// in the outbox's file.
func (p *Publisher) announceDamage() {
	sc := p.scan
	if sc.Torn == nil && len(sc.Skipped) == 0 {
		return
	}
	ev := event.FileTorn{Header: event.Header{At: p.o.Clock.Now()}, Path: p.ob.Path(), Skipped: len(sc.Skipped)}
	if t := sc.Torn; t != nil {
		ev.Offset, ev.Bytes, ev.SavedTo = t.Offset, t.Bytes, t.SavedTo
	}
	event.Publish(p.o.Bus, ev) // deskd's log has it from the bus
}
