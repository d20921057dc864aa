package natsevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk/event"
)

// take keeps one event of the bus in the outbox, or counts it as
// dropped. The bus calls it (Export) in the goroutine that publishes e;
// it publishes nats.outbox_full itself, so it holds no lock meanwhile.
func (p *Publisher) take(e event.Event) {
	kept, err := p.keep(e)
	if !kept {
		p.drop(err)
	}
	p.changed.Notify()
}

// keep writes e to the outbox; it reports false when the outbox could
// not keep it (err says why when its file refused it), and true after
// Close, when there is nothing to keep it in.
func (p *Publisher) keep(e event.Event) (bool, error) {
	if !p.life.Enter() {
		return true, nil
	}
	defer p.life.Leave()
	h := e.Head()
	subject := Subject(p.o.Subject, h.Desk, e.Topic())
	id := randomID()
	if h.ID != "" {
		id = keyedID(p.key, h.Desk, h.ID)
	}
	kept, err := p.ob.Add(item{id: id, subject: subject, data: event.JSON(e)})
	if err != nil {
		return false, fmt.Errorf("keep event %s: %w", subject, err)
	}
	return kept, nil
}

// drop counts an event the outbox could not keep (err says why when its
// file refused it; nil when the outbox is full), and announces and logs
// the first of an outage.
func (p *Publisher) drop(err error) {
	p.dropped.Add(1)
	p.mu.Lock()
	first := !p.full
	if first {
		p.full, p.fullSince, p.fullDropped = true, p.o.Clock.Now(), 0
	}
	p.fullDropped++
	since := p.fullSince
	p.mu.Unlock()
	if !first {
		return
	}
	waiting, _ := p.ob.Counts()
	ev := event.NATSOutboxFull{Header: event.Header{At: since}, MaxBytes: p.o.MaxBytes, Waiting: waiting, Dropped: 1}
	if err != nil {
		ev.Error = err.Error()
	}
	event.Publish(p.o.Bus, ev) // deskd's log has it from the bus
}

// drained announces the end of an outage that filled the outbox, once it
// has emptied.
func (p *Publisher) drained() {
	p.mu.Lock()
	was := p.full
	ev := event.NATSOutboxDrained{Header: event.Header{At: p.o.Clock.Now()}, Since: p.fullSince, Dropped: p.fullDropped}
	p.full = false
	p.mu.Unlock()
	if was {
		event.Publish(p.o.Bus, ev)
	}
}

// send publishes the outbox's entries in order until ctx ends: it waits
// for an entry, for the connection (status reports its changes), and
// after a failure for a backoff on the clock or the connection's return.
// Whenever it wakes it first fsyncs what was written meanwhile (flush).
func (p *Publisher) send(ctx context.Context, status <-chan nats.Status) {
	ready := false // the stream is known to exist
	backoff := firstBackoff
	var failed uint64 // the entry whose last attempt failed: its PubAck may have been lost
	for ctx.Err() == nil {
		p.flush()
		e, ok := p.ob.Head()
		switch {
		case !ok:
			select {
			case <-p.ob.Wake():
			case <-ctx.Done():
			}
			continue
		case !p.o.Conn.IsConnected():
			select {
			case <-status:
			case <-p.ob.Wake(): // flushed at the top
			case <-ctx.Done():
			}
			continue
		}
		err := p.publish(ctx, e, &ready, e.Seq == failed || p.ob.WasResumed(e.Seq))
		if err == nil {
			backoff = firstBackoff
			continue
		}
		failed = e.Seq
		if ctx.Err() != nil {
			return
		}
		p.failed(err, backoff)
		p.wait(ctx, backoff, status)
		backoff = min(2*backoff, maxBackoff)
	}
}

// failed logs the first failure of a streak.
func (p *Publisher) failed(err error, backoff time.Duration) {
	p.mu.Lock()
	first := !p.failing
	p.failing = true
	p.mu.Unlock()
	if first {
		p.o.Log.Warn().Err(err).Str("retry_in", backoff.String()).Msg("NATS events: publish failed; retrying with backoff")
	}
}

// wait waits d on the clock, or until the connection's status changes
// (a failure because the connection dropped is retried as soon as it is
// back), or until ctx ends; it flushes the entries added meanwhile.
func (p *Publisher) wait(ctx context.Context, d time.Duration, status <-chan nats.Status) {
	t := p.o.Clock.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C():
			return
		case <-status:
			return
		case <-ctx.Done():
			return
		case <-p.ob.Wake():
			p.flush()
		}
	}
}

// flush fsyncs the outbox's new entries, logging the first failure of a
// streak (the entries stay in the file, and are sent; a later flush tries
// again).
func (p *Publisher) flush() {
	err := p.ob.Flush()
	p.mu.Lock()
	first := err != nil && !p.syncFailing
	again := err == nil && p.syncFailing
	p.syncFailing = err != nil
	p.mu.Unlock()
	switch {
	case first:
		p.o.Log.Warn().Err(err).Msg("NATS events: the outbox cannot be fsynced; its events are sent, but a power loss may lose those not sent yet")
	case again:
		p.o.Log.Info().Msg("NATS events: the outbox is fsynced again")
	}
}

// publish sends e and, once NATS acknowledged it, removes it from the
// outbox. ready says whether the stream is known to exist; publish
// ensures it first when not, and forgets it when the stream did not
// answer. It is given up on when the connection drops (cancelInflight).
// again says e may have been stored already (sent before a
// restart, or its last PubAck lost), so that a duplicate is expected.
func (p *Publisher) publish(ctx context.Context, e entry, ready *bool, again bool) error {
	ctx, cancel := context.WithCancel(ctx)
	p.setInflight(cancel)
	defer func() {
		p.setInflight(nil)
		cancel()
	}()
	if !*ready {
		if err := p.ensureStream(ctx); err != nil {
			return err
		}
		*ready = true
	}
	msg := &nats.Msg{Subject: e.Item.subject, Data: e.Item.data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, e.Item.id)
	ack, err := p.js.PublishMsg(ctx, msg)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) {
			*ready = false
		}
		return fmt.Errorf("publish event %s (id %s) to NATS: %w", e.Item.subject, e.Item.id, err)
	}
	if ack.Duplicate && !again {
		p.duplicate(ctx, e, ack.Sequence)
	}
	waiting, err := p.ob.Finish(e.Seq)
	p.published.Add(1)
	p.recovered()
	if err != nil {
		p.o.Log.Warn().Err(err).Msg("NATS events: the outbox could not record a PubAck; the event may be sent again (the stream's dedupe drops it)")
	}
	if waiting == 0 {
		p.drained()
	}
	p.changed.Notify()
	return nil
}

// setInflight records the cancel of the publish in flight (nil: none).
func (p *Publisher) setInflight(cancel func()) {
	p.mu.Lock()
	p.inflight = cancel
	p.mu.Unlock()
}

// cancelInflight gives up on the publish in flight, if any: the
// connection dropped, so its PubAck will not come; the entry is sent
// again once the connection is back (a duplicate is expected then).
func (p *Publisher) cancelInflight() {
	p.mu.Lock()
	cancel := p.inflight
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// head is what a duplicate is checked against: an event body's topic,
// desk and id.
type head struct {
	Topic string `json:"topic"`
	Desk  string `json:"desk"`
	ID    string `json:"id"`
}

// duplicate handles a PubAck that says the stream already held a message
// with e's Nats-Msg-Id (at seq) when e was sent for the first time. That
// message is deskd's own copy when e has an id of its own and the stored
// message is the same event (a rollover step announced again): nothing to
// say. Otherwise e is not on the stream: it is counted and announced
// (nats.duplicate).
func (p *Publisher) duplicate(ctx context.Context, e entry, seq uint64) {
	var ours head
	_ = json.Unmarshal(e.Item.data, &ours) // event.JSON: cannot fail
	if ours.ID != "" {
		if stored, err := p.stored(ctx, seq); err == nil && stored == ours {
			return
		}
	}
	p.duplicates.Add(1)
	event.Publish(p.o.Bus, event.NATSDuplicate{
		Header: event.Header{At: p.o.Clock.Now(), Desk: ours.Desk}, Subject: e.Item.subject, EventID: ours.ID, MsgID: e.Item.id, StreamSeq: seq,
	}) // deskd's log has it from the bus
}

// stored returns the head of the stream's message at seq.
func (p *Publisher) stored(ctx context.Context, seq uint64) (head, error) {
	s, err := p.js.Stream(ctx, p.o.Stream)
	if err != nil {
		return head{}, fmt.Errorf("the NATS events stream %s: %w", p.o.Stream, err)
	}
	m, err := s.GetMsg(ctx, seq)
	if err != nil {
		return head{}, fmt.Errorf("message %d of the NATS events stream %s: %w", seq, p.o.Stream, err)
	}
	var h head
	if err := json.Unmarshal(m.Data, &h); err != nil {
		return head{}, fmt.Errorf("message %d of the NATS events stream %s: %w", seq, p.o.Stream, err)
	}
	return h, nil
}

// recovered logs the end of a streak of failures.
func (p *Publisher) recovered() {
	p.mu.Lock()
	was := p.failing
	p.failing = false
	p.mu.Unlock()
	if was {
		p.o.Log.Info().Msg("NATS events: publishing again")
	}
}

// ensureStream creates the events stream if it does not exist.
func (p *Publisher) ensureStream(ctx context.Context) error {
	_, err := p.js.Stream(ctx, p.o.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = p.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:       p.o.Stream,
			Subjects:   []string{p.o.Subject + ".>"},
			Storage:    jetstream.FileStorage,
			Duplicates: p.o.Duplicates,
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			err = nil // created meanwhile by another
		}
	}
	if err != nil {
		return fmt.Errorf("ensure the NATS events stream %s: %w", p.o.Stream, err)
	}
	return nil
}
