// Package desk runs desks: one loop per desk takes triggers from the desk's
// queue one at a time, lets the keeper prepare each (rolling the session
// over on a new trading day), sends it through the router, and announces
// what happened. Desks are independent of one another.
package desk

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// DefaultQueueLimit is how many triggers a desk's queue holds by default.
const DefaultQueueLimit = 256

// Options configures a Desk. Every field is required but QueueLimit and
// ShutdownTimeout.
type Options struct {
	Name      string
	Keeper    *keeper.Keeper
	Router    *router.Router
	Schedules []triggers.Entry
	Clock     clock.Clock
	Bus       *event.Bus
	// QueueLimit bounds the queue (default DefaultQueueLimit).
	QueueLimit int
	// ShutdownTimeout is how long a running turn may go on once the desk is
	// told to stop, before it is cancelled (default 30s).
	ShutdownTimeout time.Duration
}

// Desk is one desk's runtime.
type Desk struct {
	o     Options
	queue *triggers.Queue
	sched *triggers.Scheduler
	seq   atomic.Int64

	mu      sync.Mutex
	running string // the id of the trigger whose turn is running
}

// New returns a desk; Run starts it.
func New(o Options) *Desk {
	if o.QueueLimit <= 0 {
		o.QueueLimit = DefaultQueueLimit
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	d := &Desk{o: o, queue: triggers.NewQueue(o.QueueLimit)}
	d.sched = &triggers.Scheduler{
		Desk: o.Name, Clock: o.Clock, Entries: o.Schedules,
		Fire: func(t triggers.Trigger) { _ = d.Submit(t) },
		Missed: func(name string, slot time.Time) {
			event.Publish(o.Bus, event.ScheduleMissed{Header: d.header(), Schedule: name, Slot: slot, Reason: "clock passed several slots at once; the latest fired"})
		},
	}
	return d
}

// Name returns the desk's name.
func (d *Desk) Name() string { return d.o.Name }

// Status is a snapshot of a desk.
type Status struct {
	Name         string    `json:"name"`
	Session      string    `json:"session"`
	TradingDate  string    `json:"trading_date"`
	Exchanges    int       `json:"exchanges"`
	QueueDepth   int       `json:"queue_depth"`
	Running      string    `json:"running,omitempty"`
	Model        string    `json:"model"`
	Provider     string    `json:"provider"`
	Scripted     bool      `json:"scripted,omitempty"`
	NextSchedule string    `json:"next_schedule,omitempty"`
	NextSlot     time.Time `json:"next_slot,omitzero"`
}

// Status returns a snapshot of the desk.
func (d *Desk) Status() Status {
	date, _ := d.o.Router.TradingDate()
	m := d.o.Router.Primary()
	d.mu.Lock()
	running := d.running
	d.mu.Unlock()
	s := Status{
		Name: d.o.Name, Session: d.o.Router.SessionID(), TradingDate: date.String(), Exchanges: d.o.Router.Exchanges(),
		QueueDepth: d.queue.Len(), Running: running, Model: m.Name, Provider: m.Provider, Scripted: m.Scripted(),
	}
	if name, at, ok := d.sched.Next(d.o.Clock.Now()); ok {
		s.NextSchedule, s.NextSlot = name, at
	}
	return s
}

// Submit queues t for a turn. A trigger without an id gets one; one without
// a time gets the clock's.
func (d *Desk) Submit(t triggers.Trigger) error {
	t.Desk = d.o.Name
	if t.ID == "" {
		t.ID = "t" + strconv.FormatInt(d.o.Clock.Now().UnixMilli(), 36) + "-" + strconv.FormatInt(d.seq.Add(1), 10)
	}
	if t.At.IsZero() {
		t.At = d.o.Clock.Now()
	}
	if err := d.queue.Push(t); err != nil {
		event.Publish(d.o.Bus, event.TriggerDropped{Header: d.header(), Trigger: t.ID, Kind: string(t.Kind), Reason: err.Error()})
		return fmt.Errorf("desk %s: queue trigger %s: %w", d.o.Name, t.ID, err)
	}
	event.Publish(d.o.Bus, event.TriggerQueued{Header: d.header(), Trigger: t.ID, Kind: string(t.Kind), Source: t.Source, Depth: d.queue.Len()})
	return nil
}

// Run starts the desk's session and runs turns until ctx is done. When ctx
// ends no new turn starts; a running turn may finish within the shutdown
// timeout, then it is cancelled. Run returns once the desk has stopped.
func (d *Desk) Run(ctx context.Context) error {
	work, stop := d.workContext(ctx)
	defer stop()
	if err := d.o.Keeper.Start(work); err != nil {
		return fmt.Errorf("desk %s: %w", d.o.Name, err)
	}
	m := d.o.Router.Primary()
	event.Publish(d.o.Bus, event.DeskStarted{Header: d.header(), Model: m.Name, Provider: m.Provider, Scripted: m.Scripted()})
	reason := "stopped"
	defer func() {
		event.Publish(d.o.Bus, event.DeskStopped{Header: d.header(), Reason: reason})
	}()
	if d.o.Keeper.Due() {
		// The daemon was down over a boundary: roll over now, not at the first turn.
		_, _ = d.o.Keeper.RollOver(work, "daily_rollover")
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); d.sched.Run(ctx) }()
	defer wg.Wait()

	for {
		boundary := d.o.Clock.NewTimer(d.o.Keeper.NextBoundary().Sub(d.o.Clock.Now()))
		select {
		case <-ctx.Done():
			boundary.Stop()
			return nil
		case <-boundary.C():
			if d.o.Keeper.Due() {
				_, _ = d.o.Keeper.RollOver(work, "daily_rollover")
			}
		case <-d.queue.Ready():
			boundary.Stop()
			if t, ok := d.queue.Pop(); ok {
				d.turn(work, t)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// workContext returns a context for turns and rollovers: it outlives ctx
// by the shutdown timeout, so that running work can finish. stop releases it.
func (d *Desk) workContext(ctx context.Context) (work context.Context, stop func()) {
	work, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-work.Done():
			return
		case <-ctx.Done():
		}
		if clock.Sleep(work, d.o.Clock, d.o.ShutdownTimeout) == nil {
			cancel(fmt.Errorf("desk %s: shutdown timeout of %s passed", d.o.Name, d.o.ShutdownTimeout))
		}
	}()
	return work, func() { cancel(errors.New("desk stopped")); wg.Wait() }
}

// turn runs one trigger through the keeper and the router.
func (d *Desk) turn(ctx context.Context, t triggers.Trigger) {
	d.mu.Lock()
	d.running = t.ID
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.running = ""
		d.mu.Unlock()
	}()
	prepared, err := d.o.Keeper.Prepare(ctx, t)
	session := d.o.Router.SessionID()
	turn := d.o.Router.Exchanges() + 1
	if err != nil {
		d.failed(ctx, session, turn, t, err)
		return
	}
	event.Publish(d.o.Bus, event.TurnStarted{Header: d.header(), Session: session, Turn: turn, Trigger: t.ID, Kind: string(t.Kind)})
	reply, err := d.o.Router.Send(ctx, prepared)
	if err != nil {
		d.failed(ctx, session, turn, t, err)
		return
	}
	event.Publish(d.o.Bus, event.TurnCompleted{
		Header: d.header(), Session: reply.Session, Turn: reply.Turn, Trigger: t.ID, Model: reply.Model,
		Provider: reply.Provider, Scripted: reply.Scripted, InputTokens: reply.Usage.InputTokens,
		OutputTokens: reply.Usage.OutputTokens, DurationMS: reply.Duration.Milliseconds(),
	})
}

func (d *Desk) failed(ctx context.Context, session string, turn int, t triggers.Trigger, err error) {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		event.Publish(d.o.Bus, event.TurnInterrupted{Header: d.header(), Session: session, Trigger: t.ID, Reason: context.Cause(ctx).Error()})
		return
	}
	event.Publish(d.o.Bus, event.TurnFailed{Header: d.header(), Session: session, Turn: turn, Trigger: t.ID, Error: err.Error()})
}

func (d *Desk) header() event.Header {
	return event.Header{At: d.o.Clock.Now(), Desk: d.o.Name}
}
