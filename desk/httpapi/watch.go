package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/deskd/deskd/desk"
)

// WatchPoll is how often WatchTrigger looks at a trigger when no event
// came meanwhile: the event stream wakes it sooner, and when the stream is
// unavailable the polls alone follow the trigger.
const WatchPoll = time.Second

// WatchTrigger follows trigger id of a desk until it is final or timeout
// passes, calling fn with each change of its progress (queued and where,
// the desk's pause, running and its phase, the final state), never twice
// with the same. It looks at the trigger (GET .../triggers/{id}) and the
// desk (GET /v1/desks/{desk}) whenever the desk's event stream
// (GET /v1/events?desk=) has news, and every WatchPoll. The status
// returned is not Final when the timeout passed first.
func (c *Client) WatchTrigger(ctx context.Context, deskName, id string, timeout time.Duration,
	fn func(desk.TriggerProgress)) (desk.TriggerStatus, error) {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	deadline := now().Add(timeout)
	wake, stop := c.wakeOnEvents(ctx, deskName)
	defer stop()
	var last *desk.TriggerProgress
	readDesk := true
	for {
		p, err := c.progress(ctx, deskName, id, &readDesk)
		if err != nil {
			return p.Trigger, err
		}
		if last == nil || !last.Same(p) {
			fn(p)
			last = &p
		}
		left := deadline.Sub(now())
		if p.Trigger.Final() || left <= 0 {
			return p.Trigger, nil
		}
		t := time.NewTimer(min(left, WatchPoll))
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return p.Trigger, ctx.Err()
		}
		t.Stop()
	}
}

// progress reads a trigger's status and, while *readDesk, its desk's, and
// returns what they say of the trigger's progress. A credential that may
// not read the desk (a feed's token) clears *readDesk: the trigger's own
// state is reported then, without its queue, pause and phase.
func (c *Client) progress(ctx context.Context, deskName, id string, readDesk *bool) (desk.TriggerProgress, error) {
	var s desk.TriggerStatus
	if err := c.do(ctx, http.MethodGet, deskPath(deskName, "triggers")+"/"+url.PathEscape(id), nil, &s); err != nil {
		return desk.TriggerProgress{Trigger: s}, err
	}
	var st desk.Status
	if s.Final() || !*readDesk {
		return desk.ProgressOf(s, st), nil
	}
	err := c.do(ctx, http.MethodGet, "/v1/desks/"+url.PathEscape(deskName), nil, &st)
	var e *Error
	if errors.As(err, &e) && (e.Status == http.StatusForbidden || e.Status == http.StatusUnauthorized) {
		*readDesk, err = false, nil
	}
	if err != nil {
		return desk.TriggerProgress{Trigger: s}, err
	}
	return desk.ProgressOf(s, st), nil
}

// wakeOnEvents follows the desk's event stream and signals wake at each
// event; a stream that fails or ends is given up (the polls go on), so a
// deskd without it, or a credential it refuses, slows the watch but does
// not stop it.
func (c *Client) wakeOnEvents(ctx context.Context, deskName string) (wake <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		signal := func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		err := c.Events(ctx, EventQuery{Desk: deskName, Follow: true}, func(Event) { signal() }, func(string) {})
		if !errors.Is(err, context.Canceled) {
			signal() // look once more now: the stream's end may be news
		}
	})
	return ch, func() { cancel(); wg.Wait() }
}
