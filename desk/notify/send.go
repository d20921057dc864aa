package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
)

// note is one notification on its way to its target's outbox.
type note struct {
	t    *target
	id   string
	typ  string
	at   time.Time
	body []byte
	desk string
	err  error // the body could not be made
}

// take turns one event of the bus into the notifications of every target
// that wants it and queues them for the writer (the notifier's bus
// goroutine calls it). It never waits for a disk: a queue at MaxQueued
// drops the notification, counted and announced as the outbox's are.
func (n *Notifier) take(e event.Event) {
	if !n.life.Enter() {
		return
	}
	defer n.life.Leave()
	for _, t := range n.targets {
		for _, typ := range n.types(t, e) {
			nt := n.make(t, typ, e)
			n.qmu.Lock()
			full := len(n.queue) >= n.o.MaxQueued
			if !full {
				n.queue = append(n.queue, nt)
			}
			n.qmu.Unlock()
			if full {
				n.drop(nt, fmt.Sprintf("the notifier's queue holds %d notifications not yet on disk (a slow disk?)", n.o.MaxQueued))
				continue
			}
			select {
			case n.qwake <- struct{}{}:
			default:
			}
		}
	}
}

// make is the notification of type typ for e to t.
func (n *Notifier) make(t *target, typ string, e event.Event) note {
	h := e.Head()
	own := h.ID
	if tc, ok := e.(event.TurnCompleted); ok && tc.Trigger != "" {
		own = typ + ":" + tc.Trigger // the same id when a restart reconciles the turn again
	}
	if own != "" {
		own = t.Name + ":" + typ + ":" + own
	}
	body, err := n.body(t, typ, e)
	return note{t: t, id: webhookID(h.Desk, own), typ: typ, at: n.o.Clock.Now(), body: body, desk: h.Desk, err: err}
}

// write keeps the queued notifications in their outboxes, fsynced, one
// at a time, until stop is closed and the queue is empty.
func (n *Notifier) write(stop <-chan struct{}) {
	for {
		n.qmu.Lock()
		var nt note
		ok := len(n.queue) > 0
		if ok {
			nt = n.queue[0]
			n.queue[0] = note{}
			n.queue = n.queue[1:]
		}
		n.qmu.Unlock()
		if ok {
			n.keep(nt)
			continue
		}
		select {
		case <-n.qwake:
		case <-stop:
			n.qmu.Lock()
			empty := len(n.queue) == 0
			n.qmu.Unlock()
			if empty {
				return
			}
		}
	}
}

// keep adds nt to its target's outbox, or counts and announces it dropped.
func (n *Notifier) keep(nt note) {
	err := nt.err
	kept := false
	if err == nil {
		kept, err = nt.t.ob.Add(item{id: nt.id, typ: nt.typ, at: nt.at, body: nt.body})
	}
	if kept {
		n.changed.Notify()
		return
	}
	reason := "the outbox is full"
	if err != nil {
		reason = err.Error()
	}
	n.drop(nt, reason)
}

// drop counts a notification that was not kept, and logs and announces
// the first of an outage (until the target's outbox has emptied).
func (n *Notifier) drop(nt note, reason string) {
	t := nt.t
	n.mu.Lock()
	t.failed++
	first := !t.full
	t.full = true
	n.changed.Notify()
	n.mu.Unlock()
	if first {
		n.o.Log.Error().Str("target", t.Name).Str("type", nt.typ).Str("error", reason).
			Msg("notify: a notification could not be kept in its target's outbox; it is not sent (counted, announced once until the outbox empties)")
		event.Publish(n.o.Bus, event.NotifyFailed{Header: event.Header{At: n.o.Clock.Now(), Desk: nt.desk},
			Target: t.Name, Reason: "dropped", Type: nt.typ, WebhookID: nt.id, Error: reason})
	}
}

// send posts t's outbox's entries in order until ctx ends: it waits for
// an entry, and after a failure for the backoff on the clock.
func (n *Notifier) send(ctx context.Context, t *target) {
	backoff := FirstBackoff
	attempts := 0 // of the head entry
	for ctx.Err() == nil {
		e, ok := t.ob.Head()
		if !ok {
			n.drained(t)
			select {
			case <-t.ob.Wake():
			case <-ctx.Done():
			}
			continue
		}
		if age := n.o.Clock.Now().Sub(e.Item.at); age >= t.GiveUpAfter {
			n.giveUp(t, e, attempts)
			attempts, backoff = 0, FirstBackoff
			continue
		}
		err := n.post(ctx, t, e)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			n.delivered(t, e)
			attempts, backoff = 0, FirstBackoff
			continue
		}
		attempts++
		n.failedPost(t, e, err, backoff, attempts)
		wait := min(backoff, max(t.GiveUpAfter-n.o.Clock.Now().Sub(e.Item.at), 0))
		_ = clock.Sleep(ctx, n.o.Clock, wait) // an end of ctx is seen at the loop's top
		backoff = min(2*backoff, MaxBackoff)
	}
}

// post sends e to t once, signed when t is a standard target, within
// Options.Timeout on the clock. Any answer but 2xx is an error.
func (n *Notifier) post(ctx context.Context, t *target, e entry) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := n.o.Clock.NewTimer(n.o.Timeout)
	defer timer.Stop()
	go func() {
		select {
		case <-timer.C():
			cancel(fmt.Errorf("no answer within %s", n.o.Timeout))
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(e.Item.body))
	if err != nil {
		return fmt.Errorf("post to %s: %w", t.host, errors.Unwrap(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "deskd")
	if t.Format == Standard {
		ts := n.o.Clock.Now().Unix()
		req.Header.Set("webhook-id", e.Item.id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		req.Header.Set("webhook-signature", signature(t.Key, e.Item.id, ts, e.Item.body))
	}
	resp, err := n.o.Client.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil && !errors.Is(cause, context.Canceled) {
			return fmt.Errorf("post to %s: %w", t.host, cause)
		}
		return fmt.Errorf("post to %s: %w", t.host, scrubURL(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("post to %s: answered %s", t.host, resp.Status)
	}
	return nil
}

// scrubURL drops the URL from a *url.Error (its path may hold a Slack
// secret): what is left says how the request failed.
func scrubURL(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// delivered records that t took e.
func (n *Notifier) delivered(t *target, e entry) {
	_, err := t.ob.Finish(e.Seq)
	n.mu.Lock()
	t.delivered++
	was := t.failing
	t.failing, t.lastError, t.since = false, "", time.Time{}
	n.changed.Notify()
	n.mu.Unlock()
	if err != nil {
		n.o.Log.Warn().Err(err).Str("target", t.Name).Msg("notify: the outbox could not record a delivery; the notification may be posted again, with the same webhook-id")
	}
	if was {
		n.o.Log.Info().Str("target", t.Name).Msg("notify: posting again")
	}
}

// failedPost counts a failed post of e, and logs and announces the first
// failure of a streak.
func (n *Notifier) failedPost(t *target, e entry, err error, backoff time.Duration, attempts int) {
	n.mu.Lock()
	first := !t.failing
	t.attempts++
	t.failing, t.lastError = true, err.Error()
	if first {
		t.since = n.o.Clock.Now()
	}
	n.changed.Notify()
	n.mu.Unlock()
	if !first {
		return
	}
	n.o.Log.Warn().Err(err).Str("target", t.Name).Str("type", e.Item.typ).Str("webhook_id", e.Item.id).Str("retry_in", backoff.String()).
		Msg("notify: post failed; retrying with backoff")
	event.Publish(n.o.Bus, event.NotifyFailed{Header: event.Header{At: n.o.Clock.Now()},
		Target: t.Name, Reason: "failing", Type: e.Item.typ, WebhookID: e.Item.id, Error: err.Error(), Attempts: attempts})
}

// giveUp drops e, retried for t's give_up_after, and announces it.
func (n *Notifier) giveUp(t *target, e entry, attempts int) {
	_, err := t.ob.Finish(e.Seq)
	n.mu.Lock()
	t.failed++
	last := t.lastError
	n.changed.Notify()
	n.mu.Unlock()
	if err != nil {
		n.o.Log.Warn().Err(err).Str("target", t.Name).Msg("notify: the outbox could not record a give-up")
	}
	n.o.Log.Error().Str("target", t.Name).Str("type", e.Item.typ).Str("webhook_id", e.Item.id).Str("error", last).
		Str("give_up_after", t.GiveUpAfter.String()).Msg("notify: notification given up")
	event.Publish(n.o.Bus, event.NotifyFailed{Header: event.Header{At: n.o.Clock.Now()},
		Target: t.Name, Reason: "gave_up", Type: e.Item.typ, WebhookID: e.Item.id, Error: last, Attempts: attempts})
}

// drained ends a full outbox's outage once it is empty.
func (n *Notifier) drained(t *target) {
	n.mu.Lock()
	t.full = false
	n.mu.Unlock()
}
