// Package desk runs desks: one loop per desk takes triggers from the desk's
// queue one at a time, lets the keeper prepare each (rolling the session
// over on a new trading day), sends it through the router, and announces
// what happened. Desks are independent of one another.
//
// Every trigger passes through the desk's ledger (triggers.Ledger) before
// it is queued, and every step of its turn is written there before the
// next begins, so that a trigger accepted once is answered once, whatever
// happens to the process: after a restart, a trigger that was queued, or
// whose turn began but had not reached the model, runs again; one whose
// turn had reached the model is marked interrupted, announced and shown in
// the status, because the model may have acted.
package desk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// DefaultKeepFor is how long the ledger keeps finished triggers (and so
// remembers their idempotency keys and outcomes) before compaction may
// drop them.
const DefaultKeepFor = 30 * 24 * time.Hour

// ErrQueueFull is the error of Submit when the desk's queue is full.
var ErrQueueFull = triggers.ErrQueueFull

// ErrStopped is the error of a request to a desk whose loop is not running.
var ErrStopped = errors.New("desk is not running")

// ErrStorage marks the error of a Submit that could not record the
// trigger because the desk's disk refused the write (full or failing):
// the trigger is not queued (its record is cut back; should even that
// fail, a restart may still find it), so the client tries again with the
// same id, which queues it once whatever happened.
var ErrStorage = errors.New("the desk cannot write to its disk")

// Storage retries: while the desk's writes fail, it tries again after
// retryFirst, doubling up to retryMax, and at once when a write succeeds.
const (
	retryFirst = time.Second
	retryMax   = 15 * time.Second
)

// Keeper is what a desk's loop asks of its session keeper (a
// *keeper.Keeper): start the session, prepare each trigger, roll over.
type Keeper interface {
	// Start restores or starts the session and announces it.
	Start(ctx context.Context) error
	// Prepare rolls over on a new trading day and puts the summary in
	// front of a new session's first message.
	Prepare(ctx context.Context, t triggers.Trigger) (triggers.Trigger, error)
	// RollOver starts a new session now, announced with reason, and
	// returns its id.
	RollOver(ctx context.Context, reason event.SessionReason) (string, error)
	// Due reports whether the trading day boundary has passed since the
	// session's date (an eager rollover is due).
	Due() bool
	// NextBoundary returns the next trading day boundary.
	NextBoundary() time.Time
}

// Router is what a desk's loop asks of its model router (a
// *router.Router): the session it shows, the turns it sends, the settings
// a reload hands it, and what a restart finds in its session file.
type Router interface {
	// SessionID, TradingDate and Exchanges describe the current session.
	SessionID() string
	TradingDate() (memory.Date, bool)
	Exchanges() int
	// Primary returns the desk's own model, the first of its route.
	Primary() router.Model
	// Spend returns what the desk has spent in its session and trading
	// date.
	Spend() router.Spend
	// Turn runs one turn of t in the current session: with o.Accepted,
	// for a trigger the desk took at once (triggers.Record.AtOnce), whose
	// message needs no fsync of its own (router.Router.SendAccepted); o.Begin
	// is called before anything of the turn is written, and o.Sent as its
	// request goes out (router.TurnOptions).
	Turn(ctx context.Context, t triggers.Trigger, o router.TurnOptions) (router.Reply, error)
	// Fork starts a new session carrying the current one's context.
	Fork(ctx context.Context) (string, error)
	// Configure replaces the router's settings for the next call.
	Configure(s router.Settings) error
	// Outcomes tells what session's file holds of each trigger's turn;
	// session "" is the one the desk's state file names.
	Outcomes(session string, triggers []string) (map[string]router.Outcome, error)
	// Unreadable lists the files the last prompt could not read.
	Unreadable() []router.Unreadable
}

// State is what a desk is doing (Status.State).
type State string

// The states of a desk.
const (
	StateStarting State = "starting"
	StateIdle     State = "idle"
	StateRunning  State = "running"
	// StateRollingOver: a rollover runs outside a turn (at the trading
	// day's boundary, or asked for); Running's kind is KindRollover.
	StateRollingOver State = "rolling_over"
	StatePaused      State = "paused"
	StateStopped     State = "stopped"
)

// Phase is the step a running turn is at (Running.Phase).
type Phase string

// The phases of a turn.
const (
	// PhasePreparing: the keeper has the turn (it may be rolling the
	// session over).
	PhasePreparing Phase = "preparing"
	// PhaseModel: the model router has the turn.
	PhaseModel Phase = "model"
	// PhaseSummarising, PhaseFolding and PhaseCurating: the keeper is at
	// that step of a rollover (keeper.Phase).
	PhaseSummarising Phase = "summarising"
	PhaseFolding     Phase = "folding"
	PhaseCurating    Phase = "curating"
)

// KindRollover is Running's kind while a rollover runs outside a turn.
const KindRollover triggers.Kind = "rollover"

// Options configures a Desk. Every field is required but QueueLimit,
// Coalesce, Calendar, KeepFor, ShutdownTimeout, PauseFile and RefusePaused.
type Options struct {
	Name string
	// Keeper is the desk's session keeper and Router its model router,
	// over the same session.
	Keeper Keeper
	Router Router
	// Ledger is the desk's trigger ledger (triggers.LedgerFile in the
	// desk's folder). The desk does not close it.
	Ledger    *triggers.Ledger
	Schedules []triggers.Entry
	Clock     clock.Clock
	Bus       *event.Bus
	// QueueLimit bounds the queue (default triggers.DefaultQueueLimit).
	QueueLimit int
	// Coalesce lets a market trigger with a key replace the queued market
	// trigger of the same key.
	Coalesce bool
	// Calendar is the desk's exchange calendar, for the status; may be nil.
	Calendar *triggers.Calendar
	// Beyond is what the desk does past the end of its calendar
	// (beyond_calendar), for the status: the market is unknown (hold, the
	// zero value) or assumed (weekdays).
	Beyond triggers.Beyond
	// WarnDays is calendar_warn_days: from that many days before the
	// calendar's end, the status says it is ending.
	WarnDays int
	// Day maps instants to deskd's trading dates: the status counts the
	// days left of the calendar on them. The zero Day counts them on the
	// calendar's own dates.
	Day memory.TradingDay
	// KeepFor is how long finished triggers stay in the ledger (default
	// DefaultKeepFor).
	KeepFor time.Duration
	// ShutdownTimeout is how long a running turn may go on once the desk is
	// told to stop, before it is cancelled (default
	// config.DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// PauseFile is where the desk's pause is kept (PauseFile in the desk's
	// folder), so that it survives a restart; empty: a pause is not kept.
	PauseFile string
	// RefusePaused makes a paused desk refuse triggers (ErrPaused) instead
	// of queueing them for when it is resumed.
	RefusePaused bool
	// Log receives the desk's debug lines (each trigger accepted, each
	// next slot of its schedules); the zero Logger writes none.
	Log zerolog.Logger
	// OnPause, when set, is called as the desk is paused, before
	// desk.paused is announced (the desk's waiting tool calls are denied).
	OnPause func(Pause)
	// Acting, when set, reports the state of the MCP servers the desk
	// uses and its tool calls that wait for an operator, for its status.
	Acting func() ([]mcphost.ServerStatus, []approval.Pending)
	// Folder is the desk's folder, which Folder returns to the desk
	// page's API (files.go); nil: the desk has none to show.
	Folder *memory.Folder
	// Space, if set, is the state folder's free-space probe: its low
	// space shows in Storage (the desk runs on).
	Space *SpaceProbe
	// SentMayBeLost is set on a host of a cluster: the record that a
	// turn's request went to the model is not fsynced by itself, so it is
	// replicated only with the turn's next durable write, and a takeover
	// (which rebuilds the folder from the replicated writes) can lose it.
	// A trigger found with its message recorded and no reply then counts
	// as one the model may have acted on, never as "never sent".
	SentMayBeLost bool
	// TakeAtOnce lets the desk take a trigger (not a scheduled slot's) at
	// once when its loop waits for work (queue empty, not paused, not
	// stalled, no rollover due): the trigger's ledger record, fsynced
	// before Submit returns, is then the turn's one durability point
	// before the model call (triggers.Record.AtOnce), and its message is
	// written without an fsync of its own. A restart that finds such a
	// trigger without its message interrupts it (the model may have been
	// asked), never runs it again; a clean stop, a pause, a turn stopped
	// before its message or a rollover that comes first queue it again
	// first. Off on a host of a cluster, whose messages a takeover must
	// find replicated.
	TakeAtOnce bool
}

// Desk is one desk's runtime.
type Desk struct {
	o      Options
	queue  *triggers.Queue
	sched  *triggers.Scheduler
	ledger *triggers.Ledger

	// configRejected is set while the desk's file is refused and the desk
	// runs on its last good config (Set.setRejections).
	configRejected atomic.Pointer[ConfigRejected]

	submitMu sync.Mutex // serialises Submit and schedule claims
	// waiting is set while the loop waits in its select for work with
	// nothing queued, not paused, not stalled and no rollover due: a
	// trigger queued then is its next step (TakeAtOnce).
	waiting atomic.Bool
	// closed is set, under submitMu, when Run returns: later triggers are
	// refused with ErrStopped, so that none is left in the ledger behind
	// a desk that will not run it (a restarted desk reads the ledger anew).
	closed bool

	rollovers chan rolloverRequest
	// tasks are the operator's changes of the desk's files, done on the
	// loop between turns (files.go).
	tasks chan func()
	// wake tells the loop that settings are pending or the pause changed.
	wake    chan struct{}
	started chan struct{}
	done    chan struct{}
	// hurry is closed by CutShort: a running turn is cancelled at once
	// once the desk is stopping.
	hurry     chan struct{}
	hurryOnce sync.Once
	// pauseMu guards pause and refusePaused, and orders Pause against the
	// loop's taking of the next trigger: once Pause returns no turn starts.
	pauseMu      sync.Mutex
	pause        *Pause
	refusePaused bool
	// staged are the outcomes a restart recorded (a trigger found answered
	// in the session file although the ledger had not recorded it, or cut
	// off during its model call): their events were staged (event.Stage)
	// before the records, and Run delivers them.
	staged []func()

	// storeMu guards the storage trouble: the failure that stalls the
	// desk, since when, and the ledger records it still owes.
	storeMu    sync.Mutex
	storeErr   error
	storeSince time.Time
	owed       []triggers.Record
	retryWait  time.Duration
	failures   int // counts failed writes, so a retry can tell one came meanwhile

	mu       sync.Mutex
	state    State
	running  *Running
	calendar *triggers.Calendar
	beyond   triggers.Beyond
	warnDays int
	// heldOn is, per schedule, the date (in its calendar's zone) whose
	// held slot was last announced: one schedule.missed per schedule and day.
	heldOn  map[string]string
	pending *Settings // settings Configure left for the loop
	// seen is the router's session as the loop last saw it between turns:
	// the router holds its lock for a whole model call, so Status must not
	// ask it while a turn runs.
	seen sessionView
}

// sessionView is what Status shows of the router.
type sessionView struct {
	session   string
	date      string
	exchanges int
	model     router.Model
	spend     router.Spend
	answer    *LastAnswer
}

// Running is the turn a desk is running, or the rollover it runs outside
// a turn (Trigger "", Kind KindRollover, state rolling_over).
type Running struct {
	Trigger string        `json:"trigger"`
	Kind    triggers.Kind `json:"kind"`
	Since   time.Time     `json:"since"`
	// Phase is preparing (the keeper may be rolling the session over),
	// summarising, folding or curating (the keeper is rolling it over) or
	// model (the model router has the turn); PhaseSince is when it began.
	Phase      Phase     `json:"phase"`
	PhaseSince time.Time `json:"phase_since"`
}

type rolloverRequest struct {
	reply chan rolloverResult
	// fork starts a new session carrying the current context instead.
	fork bool
}

type rolloverResult struct {
	previous, session string
	err               error
}

// New returns a desk. It reads the desk's ledger: triggers that were queued
// or running when deskd last stopped are queued again, and those whose turn
// had reached the model are marked interrupted. Run starts the desk.
func New(o Options) (*Desk, error) {
	if o.QueueLimit <= 0 {
		o.QueueLimit = triggers.DefaultQueueLimit
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = config.DefaultShutdownTimeout
	}
	if o.KeepFor <= 0 {
		o.KeepFor = DefaultKeepFor
	}
	if o.Ledger == nil {
		return nil, fmt.Errorf("desk %s: no trigger ledger", o.Name)
	}
	d := &Desk{
		o: o, queue: triggers.NewQueue(o.QueueLimit, o.Coalesce), ledger: o.Ledger,
		rollovers: make(chan rolloverRequest), tasks: make(chan func()), wake: make(chan struct{}, 1), started: make(chan struct{}), done: make(chan struct{}),
		hurry: make(chan struct{}), state: StateStarting, calendar: o.Calendar, refusePaused: o.RefusePaused,
		beyond: o.Beyond, warnDays: o.WarnDays, heldOn: map[string]string{},
	}
	p, err := loadPause(o.PauseFile)
	d.pause = p // a damaged pause file leaves the desk paused, and says why
	if err != nil && p == nil {
		return nil, fmt.Errorf("desk %s: %w", o.Name, err)
	}
	d.sched = d.scheduler(o.Schedules)
	if n, live := o.Ledger.Records(), o.Ledger.Len(); n > 2*live+1000 {
		if err := o.Ledger.Compact(o.Clock.Now().Add(-o.KeepFor)); err != nil {
			return nil, fmt.Errorf("desk %s: %w", o.Name, err)
		}
	}
	if err := d.recover(); err != nil {
		return nil, fmt.Errorf("desk %s: %w", o.Name, err)
	}
	return d, nil
}

func (d *Desk) scheduler(entries []triggers.Entry) *triggers.Scheduler {
	return &triggers.Scheduler{
		Desk: d.o.Name, Clock: d.o.Clock, Entries: entries, From: d.o.Clock.Now(),
		Last:   d.ledger.LastSlot,
		Arm:    d.arm,
		Fire:   d.claim,
		Missed: d.missed,
		Held:   d.held,
		Planned: func(name string, at time.Time) {
			d.o.Log.Debug().Str("desk", d.o.Name).Str("schedule", name).Time("slot", at).Msg("schedule's next slot")
		},
		MissedRun: func(e triggers.Entry, n int, first, last time.Time, reason string) {
			event.Publish(d.o.Bus, event.ScheduleMissed{
				Header: d.header(), Schedule: e.Name, Slot: first, Reason: reason, Count: n, First: first, Last: last,
			})
		},
	}
}

// Settings are what a config reload may change in a running desk.
type Settings struct {
	Schedules  []triggers.Entry
	QueueLimit int
	Coalesce   bool
	Calendar   *triggers.Calendar
	// Beyond and WarnDays: see Options.
	Beyond   triggers.Beyond
	WarnDays int
	// Router, if not nil, replaces the router's settings: the model route,
	// instructions, tools, budgets.
	Router *router.Settings
	// RefusePaused: see Options.RefusePaused.
	RefusePaused bool
}

// Configure hands the desk new settings and returns at once; the desk's
// loop applies them all together between turns (after a running turn,
// before the next): the router takes its new settings, the schedules
// restart from the ledger's record of their slots (a schedule that is new
// is armed; one that keeps its name keeps its history), and the queue
// takes the new limit and coalescing (triggers already queued stay
// queued). Settings handed over before an earlier call's were applied
// replace them. A desk that has stopped returns ErrStopped.
func (d *Desk) Configure(s Settings) error {
	if s.QueueLimit <= 0 {
		s.QueueLimit = triggers.DefaultQueueLimit
	}
	select {
	case <-d.done:
		return fmt.Errorf("desk %s: %w", d.o.Name, ErrStopped)
	default:
	}
	d.mu.Lock()
	d.pending = &s
	d.mu.Unlock()
	d.poke()
	return nil
}

// CutShort makes a stopping desk cancel its running turn now instead of
// after the shutdown timeout (the turn is recorded interrupted). It may be
// called before or after the desk's context ends, and more than once.
func (d *Desk) CutShort() { d.hurryOnce.Do(func() { close(d.hurry) }) }

// recover settles every trigger the ledger leaves unfinished, from what
// the session file holds of it: a trigger the model never saw is queued
// again, one whose reply was written is answered, and one the model may
// have acted on is interrupted. Only the 202's record (queued) is fsynced
// before a turn's message (the session's user record, fsynced before the
// model call but for a trigger taken at once): a crash of the host may
// lose the ledger's running and sent records, so the session file, not
// the ledger's state, tells whether the model saw a trigger. A trigger
// taken at once (Record.AtOnce) without its message is interrupted: its
// message may have been lost after its request went out.
func (d *Desk) recover() error {
	now := d.o.Clock.Now()
	items := d.ledger.Unfinished()
	seen, err := d.outcomes(items)
	if err != nil {
		return err
	}
	for _, it := range items {
		o := seen[it.Trigger.ID]
		session := it.Session
		if session == "" {
			session = o.Session
		}
		switch {
		case o.Answered:
			// The reply was written, the ledger's record of it was not.
			d.staged = append(d.staged, event.Stage(d.o.Bus, event.TurnCompleted{
				Header: d.outcome(it.Trigger.ID, triggers.StateAnswered), Session: session, Turn: o.Turn, Trigger: it.Trigger.ID, Reconciled: true,
			}))
			if err := d.ledger.Append(triggers.Record{
				At: now, ID: it.Trigger.ID, State: triggers.StateAnswered, Session: session, Turn: o.Turn, Reply: o.Reply,
				Reason: "answered before deskd stopped; the answer was taken from the session file",
			}); err != nil {
				return err
			}
		case o.Seen:
			rec := triggers.Record{
				At: now, ID: it.Trigger.ID, State: triggers.StateInterrupted, Session: session, Turn: it.Turn,
				Reason: interruptedReason(o, d.o.SentMayBeLost),
			}
			d.staged = append(d.staged, event.Stage(d.o.Bus, event.TurnInterrupted{
				Header: d.outcome(it.Trigger.ID, triggers.StateInterrupted), Session: session, Trigger: it.Trigger.ID, Kind: string(it.Trigger.Kind), Reason: rec.Reason,
			}))
			if err := d.ledger.Append(rec); err != nil {
				return err
			}
		case it.AtOnce:
			// Taken at once, its message written without an fsync of its
			// own: a crash of the host, or a file system that dropped
			// unsynced pages, may have lost the message of a request that
			// went out.
			rec := triggers.Record{At: now, ID: it.Trigger.ID, State: triggers.StateInterrupted, Session: session, Turn: it.Turn,
				Reason: reasonAtOnce}
			d.staged = append(d.staged, event.Stage(d.o.Bus, event.TurnInterrupted{
				Header: d.outcome(it.Trigger.ID, triggers.StateInterrupted), Session: session, Trigger: it.Trigger.ID, Kind: string(it.Trigger.Kind), Reason: rec.Reason,
			}))
			if err := d.ledger.Append(rec); err != nil {
				return err
			}
		case it.State == triggers.StateQueued:
			d.queue.Restore(it.Trigger)
		default:
			reason := "queued again after a restart: its turn had begun but had not reached the model"
			if it.State == triggers.StateSent {
				reason = "queued again after a restart: its message had not reached the model"
			}
			if err := d.ledger.Append(triggers.Record{At: now, ID: it.Trigger.ID, State: triggers.StateQueued, Reason: reason}); err != nil {
				return err
			}
			d.queue.Restore(it.Trigger)
		}
	}
	return nil
}

// The reasons of a trigger a restart finds interrupted: its request went
// to the model, or its message was recorded and the request never sent
// (router.Outcome.Requested; the request.sent record is not fsynced by
// itself, so a crash of the host, not of deskd, can lose it).
const (
	reasonSent    = sentPrefix + " the model may have acted (deskd stopped while the turn was with the model); it is not run again automatically"
	reasonMaySent = "may have been sent: the model may have acted (its message was recorded; on a cluster the record of its request is replicated only with the turn's next write, so a takeover can lose it); it is not run again automatically"
	reasonAtOnce  = maySentPrefix + ": the desk took it at once on acceptance, so its turn's message is written without an fsync of its own, " +
		"and no message of it was found: a crash of the host (or a file system that dropped what was not yet on disk) may have lost it " +
		"after the request went out; the model may have acted, so it is not run again automatically: submit it again if it should run"
	// reasonStoppedBeforeTurn queues again a trigger taken at once whose
	// turn did not reach its message (recover would take it for one the
	// model may have seen), or waits for a rollover first.
	reasonStoppedBeforeTurn = "queued again, no longer taken at once: the desk stopped, paused or rolled over before its turn reached the model"
	maySentPrefix           = "may have been sent"
	sentPrefix              = "sent:"
	neverSentPrefix         = "never sent to the model"
	reasonNeverSent         = neverSentPrefix + ": deskd stopped after recording its message, before its request went out " +
		"(unless the host itself crashed, which can lose that record); it is not run again automatically: submit it again if it should run"
)

// interruptedReason is the reason of a trigger interrupted with outcome
// o; sentMayBeLost (Options.SentMayBeLost) says a missing record of the
// request proves nothing.
func interruptedReason(o router.Outcome, sentMayBeLost bool) string {
	switch {
	case o.Requested:
		return reasonSent + unansweredCalls(o.Unanswered)
	case sentMayBeLost:
		return reasonMaySent
	}
	return reasonNeverSent
}

// unansweredCalls names the tool calls of an interrupted turn that have
// no result (docs/SCALING.md: the trigger shown interrupted with the call
// named), for the end of its reason; "" when there are none.
func unansweredCalls(calls []memory.ToolCall) string {
	if len(calls) == 0 {
		return ""
	}
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Name + " (call " + c.ID + ")"
	}
	return "; its tool calls without a result, which may have run or were waiting for an approval: " + strings.Join(names, ", ") + ": check them before you submit it again"
}

// outcomes reads what the session files hold of items: a sent trigger's
// own session (the ledger names it), and for the others the desk's
// current session, each file once. A sent trigger whose session file is
// gone counts as seen and requested (the model may have acted): nothing
// can tell otherwise.
func (d *Desk) outcomes(items []triggers.Item) (map[string]router.Outcome, error) {
	bySession := map[string][]string{}
	for _, it := range items {
		bySession[it.Session] = append(bySession[it.Session], it.Trigger.ID)
	}
	out := map[string]router.Outcome{}
	for session, ids := range bySession {
		found, err := d.o.Router.Outcomes(session, ids)
		if errors.Is(err, fs.ErrNotExist) && session != "" {
			found, err = map[string]router.Outcome{}, nil
			for _, id := range ids {
				found[id] = router.Outcome{Seen: true, Requested: true, Session: session}
			}
		}
		if err != nil {
			return nil, err
		}
		for id, o := range found {
			out[id] = o
		}
	}
	return out, nil
}

// Name returns the desk's name.
func (d *Desk) Name() string { return d.o.Name }

// Started is closed once Run has started the desk's session and it takes
// triggers.
func (d *Desk) Started() <-chan struct{} { return d.started }

// Done is closed when Run has returned.
func (d *Desk) Done() <-chan struct{} { return d.done }

// Ledger returns the desk's trigger ledger.
func (d *Desk) Ledger() *triggers.Ledger { return d.ledger }

// Status is a snapshot of a desk.
type Status struct {
	Name string `json:"name"`
	// AsOf is when the snapshot was taken, on deskd's clock (which
	// --clock-start may have moved): a client measures how long the
	// running entry has run against it, not against its own clock.
	AsOf        time.Time `json:"as_of"`
	Session     string    `json:"session"`
	TradingDate string    `json:"trading_date"`
	// Exchanges is the turns of the current session; Turns is the same
	// count under a clearer name (exchanges is kept for compatibility).
	Exchanges int `json:"exchanges"`
	Turns     int `json:"turns"`
	// State is starting, idle, running, rolling_over, paused or stopped;
	// standby for a desk another host of the cluster owns (or none yet).
	State      State               `json:"state"`
	QueueDepth int                 `json:"queue_depth"`
	QueueLimit int                 `json:"queue_limit"`
	Running    *Running            `json:"running,omitempty"`
	Model      string              `json:"model"`
	Provider   router.ProviderName `json:"provider"`
	Scripted   bool                `json:"scripted,omitempty"`
	// Spend is what the desk has spent in its trading date (tokens, of
	// them the tokens read from the services' prompt caches, and cost where
	// its models have prices) and session, as of its last turn.
	Spend router.Spend `json:"spend"`
	// NextSchedule and NextSlot are the next scheduled slot.
	NextSchedule string    `json:"next_schedule,omitempty"`
	NextSlot     time.Time `json:"next_slot,omitzero"`
	// Calendar is the desk's exchange calendar and MarketOpen whether it
	// is open now; MarketOpen is left out past the calendar's end, where
	// it is not known.
	Calendar   string `json:"calendar,omitempty"`
	MarketOpen *bool  `json:"market_open,omitempty"`
	// Market is open or closed while the calendar covers today; past its
	// end, unknown (beyond_calendar: hold) or assumed_open/assumed_closed
	// (weekdays).
	Market triggers.MarketState `json:"market,omitempty"`
	// CalendarThrough is the calendar's last date covered, and
	// CalendarDaysLeft the trading dates from today to it (0 on it,
	// negative past it).
	CalendarThrough  string `json:"calendar_through,omitempty"`
	CalendarDaysLeft *int   `json:"calendar_days_left,omitempty"`
	// CalendarEnding is set from calendar_warn_days before the end on.
	CalendarEnding bool `json:"calendar_ending,omitempty"`
	// Interrupted lists the triggers cut off during their model call, for
	// an operator to decide on, oldest first.
	Interrupted []TriggerStatus `json:"interrupted"`
	// Paused is who paused the desk, when and why; nil when it is not paused.
	Paused *Pause `json:"paused,omitempty"`
	// PausedTriggers is what the desk does with triggers while paused:
	// queue or refuse.
	PausedTriggers triggers.PausedTriggers `json:"paused_triggers"`
	// Unreadable lists the desk's Memory.md and skills that exist but
	// could not be read when its last prompt was built, and still cannot:
	// its prompts go without them (announced as memory.unreadable).
	Unreadable []router.Unreadable `json:"unreadable,omitempty"`
	// Storage is set while the desk cannot write to its disk: it takes no
	// turn, and its triggers wait in the ledger, until a write succeeds;
	// or, with LowSpace, while the state folder's free space is below the
	// threshold (the desk runs on).
	Storage *StorageStatus `json:"storage,omitempty"`
	// ConfigRejected is set while the desk's file is refused: the desk
	// runs on its last good config.
	ConfigRejected *ConfigRejected `json:"config_rejected,omitempty"`
	// LastAnswer is the model that answered the last turn (nil before any).
	LastAnswer *LastAnswer `json:"last_answer,omitempty"`
	// MCP is the state of the MCP servers the desk's file lets it call:
	// while one is not up, its tools are unavailable to the desk.
	MCP []mcphost.ServerStatus `json:"mcp,omitempty"`
	// Approvals are the desk's tool calls that wait for an operator's
	// decision, oldest first.
	Approvals []approval.Pending `json:"approvals,omitempty"`
	// Failed is set, with State failed, for a desk of the config that
	// failed to start (Set.Statuses): the file that stopped it and why.
	Failed *Failure `json:"failed,omitempty"`
	// Owner is the host of the cluster that owns the desk (config
	// cluster; Set.Statuses), this one or another (State standby); nil
	// without a cluster, or while no host owns it.
	Owner *Owner `json:"owner,omitempty"`
}

// StorageStatus is a desk's storage trouble.
type StorageStatus struct {
	Error    string    `json:"error"`
	Since    time.Time `json:"since"`
	DiskFull bool      `json:"disk_full,omitempty"`
	// LowSpace is set when no write failed but the state folder's free
	// space (FreeBytes) is below the threshold (SpaceProbe): the desk runs
	// on, and shows it before a write fails.
	LowSpace  bool   `json:"low_space,omitempty"`
	FreeBytes uint64 `json:"free_bytes,omitempty"`
}

// Status returns a snapshot of the desk. It never waits for a running turn.
func (d *Desk) Status() Status {
	d.mu.Lock()
	state, seen := d.state, d.seen
	var running *Running
	if d.running != nil {
		r := *d.running
		running = &r
	}
	d.mu.Unlock()
	now := d.o.Clock.Now()
	s := Status{
		Name: d.o.Name, AsOf: now, Session: seen.session, TradingDate: seen.date, Exchanges: seen.exchanges, Turns: seen.exchanges,
		State: state, QueueDepth: d.queue.Len(), QueueLimit: d.queue.Limit(), Running: running,
		Model: seen.model.Name, Provider: seen.model.Provider, Scripted: seen.model.Scripted(), Interrupted: []TriggerStatus{},
		Spend: seen.spend, LastAnswer: seen.answer,
	}
	d.mu.Lock()
	sched, cal, beyond, warnDays := d.sched, d.calendar, d.beyond, d.warnDays
	d.mu.Unlock()
	d.pauseMu.Lock()
	if d.pause != nil {
		p := *d.pause
		s.Paused = &p
	}
	if s.State == StateIdle || s.State == StatePaused { // from the pause read here: a pause set while a turn ended shows
		s.State = StateIdle
		if s.Paused != nil {
			s.State = StatePaused
		}
	}
	s.PausedTriggers = triggers.PausedQueue
	if d.refusePaused {
		s.PausedTriggers = triggers.PausedRefuse
	}
	d.pauseMu.Unlock()
	if name, at, ok := sched.Next(now); ok {
		s.NextSchedule, s.NextSlot = name, at
	}
	s.Storage = d.Storage()
	s.ConfigRejected = d.configRejected.Load()
	if c := cal; c != nil {
		s.Calendar, s.Market = c.Name, c.MarketAt(now, beyond)
		if c.Covers(now) {
			open := s.Market == triggers.MarketOpen
			s.MarketOpen = &open
		}
		if n, ok := d.daysLeft(c, now); ok {
			s.CalendarThrough, s.CalendarDaysLeft, s.CalendarEnding = c.Through, &n, n <= warnDays
		}
	}
	for _, it := range d.ledger.Interrupted() {
		s.Interrupted = append(s.Interrupted, statusOf(d.o.Name, it, it))
	}
	if u := d.o.Router.Unreadable(); len(u) > 0 {
		s.Unreadable = u // the router answers this without waiting for a turn
	}
	if d.o.Acting != nil {
		s.MCP, s.Approvals = d.o.Acting()
	}
	return s
}

// Accepted is Submit's answer.
type Accepted struct {
	// ID is the trigger's id (made up when the trigger had none).
	ID string
	// Duplicate is true when the ledger already knew the id; nothing was
	// queued, and State is the earlier trigger's.
	Duplicate bool
	State     triggers.State
	// Replaced is the queued trigger this one replaced (coalescing).
	Replaced string
	// next: the desk's waiting loop takes it next (Record.AtOnce).
	next bool
}

// Submit records t in the desk's ledger (durably) and queues it for a turn.
// A trigger without an id gets one; one without a time gets the clock's.
// An id the ledger already knows queues nothing: the answer is the known
// trigger's state, with Duplicate set. A full queue is ErrQueueFull.
func (d *Desk) Submit(t triggers.Trigger) (Accepted, error) {
	a, err := d.submit(t, "", time.Time{})
	if a.next {
		// The idle loop was made runnable on this goroutine's processor,
		// where it would wait until the caller blocks: after it answers
		// (the API's handler writes the 202, then reads and serves the
		// client's next request on the same connection). Yield, so that
		// the loop takes the trigger to the model now and the caller goes
		// on beside it.
		runtime.Gosched()
	}
	return a, err
}

func (d *Desk) submit(t triggers.Trigger, schedule string, slot time.Time) (Accepted, error) {
	t.Desk = d.o.Name
	now := d.o.Clock.Now()
	if t.ID == "" {
		t.ID = newTriggerID(now)
	}
	if t.At.IsZero() {
		t.At = now
	}
	d.submitMu.Lock()
	defer d.submitMu.Unlock()
	if d.closed {
		return Accepted{ID: t.ID}, fmt.Errorf("desk %s: queue trigger %s: %w", d.o.Name, t.ID, ErrStopped)
	}
	if _, known, ok := d.ledger.Resolve(t.ID); ok {
		state := known.State
		if r := d.runningTurn(); state == triggers.StateQueued && r != nil && r.Trigger == known.Trigger.ID {
			state = triggers.StateRunning // its turn began; the sent record comes as the request goes out
		}
		return Accepted{ID: t.ID, Duplicate: true, State: state}, nil
	}
	if err := d.refusing(); err != nil {
		event.Publish(d.o.Bus, event.TriggerDropped{Header: d.header(), Trigger: t.ID, Kind: string(t.Kind), Reason: err.Error()})
		return Accepted{ID: t.ID}, err
	}
	var depth int
	// Looked at before the queue's lock is taken (Paused takes pauseMu,
	// which next holds while it takes the queue's lock). A scheduled slot
	// is never taken at once: planned work, it runs after a restart
	// whatever a crash left of its message, and gains nothing from a
	// quicker way to the model.
	atOnce, next := schedule == "" && d.o.TakeAtOnce && d.waiting.Load() && d.Paused() == nil, false
	queued, replaced, err := d.queue.Add(t, func(t triggers.Trigger, replaced *triggers.Trigger, n int) error {
		rec := triggers.Record{At: now, ID: t.ID, State: triggers.StateQueued, Trigger: &t, Schedule: schedule, Slot: slot}
		if replaced != nil {
			rec.Merges = []string{replaced.ID}
		}
		if n == 1 && atOnce {
			rec.AtOnce = true // the loop's next step: this record is its turn's one durability point
			next = true
		}
		if err := d.ledger.Append(rec); err != nil {
			return err
		}
		// Announced before the loop can take it: trigger.queued comes
		// before the turn's events, for exporters too.
		ev := event.TriggerQueued{
			Header: d.header(), Trigger: t.ID, Kind: string(t.Kind), Source: t.Source, Depth: n, Key: t.Key, Merged: t.Merged,
		}
		if replaced != nil {
			ev.Replaced = replaced.ID
		}
		event.Publish(d.o.Bus, ev)
		depth = n
		return nil
	})
	if errors.Is(err, triggers.ErrQueueFull) {
		reason := fmt.Sprintf("queue full (%s)", termsafe.Plural(d.queue.Limit(), "trigger"))
		event.Publish(d.o.Bus, event.TriggerDropped{Header: d.header(), Trigger: t.ID, Kind: string(t.Kind), Reason: reason})
		return Accepted{ID: t.ID}, fmt.Errorf("desk %s: queue trigger %s: %w", d.o.Name, t.ID, err)
	}
	if err != nil {
		d.storageFailed(err)
		return Accepted{ID: t.ID}, fmt.Errorf("desk %s: queue trigger %s: %w: %w", d.o.Name, t.ID, ErrStorage, err)
	}
	d.storageWorks()
	a := Accepted{ID: t.ID, State: triggers.StateQueued, next: next}
	if replaced != nil {
		a.Replaced = replaced.ID
	}
	d.o.Log.Debug().Str("desk", d.o.Name).Str("trigger", queued.ID).Str("source", t.Source).Str("kind", string(t.Kind)).
		Str("schedule", schedule).Int("depth", depth).Msg("trigger accepted")
	return a, nil
}

// arm records when a new schedule's slots start to count.
func (d *Desk) arm(e triggers.Entry, from time.Time) {
	d.write(triggers.Record{At: d.o.Clock.Now(), ID: triggers.ArmID(e.Name), State: triggers.StateArmed, Schedule: e.Name, Slot: from})
}

// claim records a scheduled slot in the ledger and queues its trigger; a
// slot that finds the queue full is recorded as dropped and announced.
func (d *Desk) claim(e triggers.Entry, slot time.Time, t triggers.Trigger) {
	_, err := d.submit(t, e.Name, slot)
	if errors.Is(err, triggers.ErrQueueFull) || errors.Is(err, ErrPaused) {
		reason := fmt.Sprintf("queue full (%s)", termsafe.Plural(d.queue.Limit(), "trigger"))
		if errors.Is(err, ErrPaused) {
			reason = err.Error()
		}
		d.write(triggers.Record{
			At: d.o.Clock.Now(), ID: t.ID, State: triggers.StateDropped, Trigger: &t, Schedule: e.Name, Slot: slot, Reason: reason,
		})
		event.Publish(d.o.Bus, event.ScheduleMissed{Header: d.header(), Schedule: e.Name, Slot: slot, Reason: reason, Count: 1, First: slot, Last: slot})
	} else if err != nil {
		event.Publish(d.o.Bus, event.ScheduleMissed{
			Header: d.header(), Schedule: e.Name, Slot: slot, Reason: err.Error(), Count: 1, First: slot, Last: slot,
		})
	}
}

// held announces a slot held past the end of its calendar, once per
// schedule and date (the scheduler has recorded it missed): at error
// level, since nothing of the schedule fires until the calendar is
// extended.
func (d *Desk) held(e triggers.Entry, slot time.Time, reason string) {
	day := slot.In(e.Calendar.Location).Format(time.DateOnly)
	d.mu.Lock()
	seen := d.heldOn[e.Name] == day
	d.heldOn[e.Name] = day
	d.mu.Unlock()
	if seen {
		return
	}
	event.Publish(d.o.Bus, event.ScheduleMissed{
		Header: d.header(), Schedule: e.Name, Slot: slot, Reason: reason, Count: 1, First: slot, Last: slot, Held: true,
	})
}

// daysLeft counts the days from today's trading date to the end of cal.
func (d *Desk) daysLeft(cal *triggers.Calendar, now time.Time) (int, bool) {
	today := now.In(cal.Location)
	if d.o.Day.Location != nil {
		td := d.o.Day.DateOf(now)
		today = time.Date(td.Year, td.Month, td.Day, 0, 0, 0, 0, time.UTC)
	}
	return cal.DaysLeft(today)
}

// missed records a slot that will not run; the scheduler's MissedRun
// announces the slots of one schedule missed at once in one event.
func (d *Desk) missed(e triggers.Entry, slot time.Time, reason string) {
	d.write(triggers.Record{
		At: d.o.Clock.Now(), ID: triggers.SlotID(e.Name, slot), State: triggers.StateMissed, Schedule: e.Name, Slot: slot, Reason: reason,
	})
}

// RollOver rolls the desk over to a new session now, between turns, and
// returns the previous and the new session's ids.
func (d *Desk) RollOver(ctx context.Context) (previous, session string, err error) {
	return d.newSession(ctx, rolloverRequest{reply: make(chan rolloverResult, 1)})
}

// Fork starts a new session now, between turns, that carries the current
// session's context and names it as its parent, and returns the previous
// and the new session's ids.
func (d *Desk) Fork(ctx context.Context) (previous, session string, err error) {
	return d.newSession(ctx, rolloverRequest{reply: make(chan rolloverResult, 1), fork: true})
}

// newSession hands req to the desk's loop and waits for its answer.
func (d *Desk) newSession(ctx context.Context, req rolloverRequest) (previous, session string, err error) {
	select {
	case d.rollovers <- req:
	case <-ctx.Done():
		return "", "", ctx.Err()
	case <-d.done:
		return "", "", fmt.Errorf("desk %s: %w", d.o.Name, ErrStopped)
	}
	select {
	case r := <-req.reply:
		return r.previous, r.session, r.err
	case <-ctx.Done():
		return "", "", ctx.Err()
	}
}

// Run starts the desk's session and runs turns until ctx is done. When ctx
// ends no new turn starts and the schedules stop; a running turn may
// finish within the shutdown timeout (or until CutShort), then it is
// cancelled. Run returns once the desk has stopped; desk.stopped gives
// context.Cause(ctx) as its reason when the cause is not plain
// cancellation.
func (d *Desk) Run(ctx context.Context) error {
	defer close(d.done)
	defer d.setState(StateStopped)
	defer func() {
		d.submitMu.Lock()
		d.closed = true
		d.submitMu.Unlock()
	}()
	work, stop := d.workContext(ctx)
	defer stop()
	defer d.requeueAtOnce() // a clean stop: the queue's triggers taken at once run after the restart
	if err := d.o.Keeper.Start(work); err != nil {
		return fmt.Errorf("desk %s: %w", d.o.Name, err)
	}
	m := d.o.Router.Primary()
	event.Publish(d.o.Bus, event.DeskStarted{Header: d.header(), Model: m.Name, Provider: string(m.Provider), Scripted: m.Scripted()})
	defer func() {
		reason := "stopped"
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			reason = cause.Error()
		}
		event.Publish(d.o.Bus, event.DeskStopped{Header: d.header(), Reason: reason})
	}()
	d.announceDamage()
	for _, deliver := range d.staged {
		deliver()
	}
	d.staged = nil
	for _, t := range d.queue.Items() {
		event.Publish(d.o.Bus, event.TriggerQueued{
			Header: d.header(), Trigger: t.ID, Kind: string(t.Kind), Source: t.Source, Depth: d.queue.Len(), Key: t.Key,
			Merged: t.Merged, Restored: true,
		})
	}
	d.look()
	d.setState(d.idleState())
	close(d.started)
	// eager rolls over as soon as the boundary has passed, not at the
	// first turn after it: at start (deskd was down over a boundary), when
	// the boundary timer fires, and when the clock passed the boundary
	// while the loop was busy (a turn, or a clock step). A failed attempt
	// is not repeated for the same session until the next boundary; the
	// next turn tries again lazily.
	tried := ""
	eager := func() {
		if !d.o.Keeper.Due() || tried == d.o.Router.SessionID() {
			return
		}
		tried = d.o.Router.SessionID()
		d.requeueAtOnce() // the rollover's model calls come first
		_, _ = d.rollOver(work, event.ReasonDailyRollover)
	}
	eager() // triggers may arrive meanwhile; they wait in the queue

	var wg sync.WaitGroup
	startScheduler := func(sc *triggers.Scheduler) (stop func()) {
		if len(sc.Entries) == 0 {
			// A scheduler of no schedules only waits for ctx: an idle
			// desk without schedules runs no goroutine for it.
			return func() {}
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		wg.Add(1)
		go func() { defer wg.Done(); defer close(done); sc.Run(sctx) }()
		return func() { cancel(); <-done }
	}
	stopScheduler := startScheduler(d.sched)
	defer wg.Wait()
	// applyPending puts the settings Configure left into effect; it runs
	// before every turn, so that no turn starts on settings replaced.
	applyPending := func() {
		d.mu.Lock()
		s := d.pending
		d.pending = nil
		d.mu.Unlock()
		if s != nil {
			stopScheduler()
			stopScheduler = startScheduler(d.apply(*s))
		}
	}

	for {
		// The boundary timer is armed before the check: a boundary the
		// clock passes from here on fires it, and one it passed before,
		// eager sees.
		boundary := d.o.Clock.NewTimer(d.o.Keeper.NextBoundary().Sub(d.o.Clock.Now()))
		eager()
		if ctx.Err() != nil {
			boundary.Stop()
			return nil
		}
		var ready <-chan struct{}
		var retry <-chan time.Time
		stalled := d.stalled()
		if d.Paused() == nil && !stalled {
			ready = d.queue.Ready()
			d.waiting.Store(d.o.TakeAtOnce && d.queue.Len() == 0 && !d.o.Keeper.Due())
		}
		var retryTimer clock.Timer
		if stalled {
			retryTimer = d.o.Clock.NewTimer(d.nextRetry())
			retry = retryTimer.C()
		}
		stopRetry := func() {
			if retryTimer != nil {
				retryTimer.Stop()
			}
		}
		select {
		case <-ctx.Done():
			d.waiting.Store(false)
			boundary.Stop()
			stopRetry()
			return nil
		case <-retry:
			d.waiting.Store(false)
			boundary.Stop()
			if d.retryStorage() {
				eager()
				d.next(work)
			}
		case <-boundary.C():
			d.waiting.Store(false)
			tried = "" // a new boundary: one more eager attempt
			d.look()
		case <-d.wake:
			d.waiting.Store(false)
			boundary.Stop()
			applyPending()
			if d.Paused() != nil {
				d.requeueAtOnce() // paused: a trigger taken at once may wait long
			}
			if !d.stalled() || d.retryStorage() {
				eager()
				d.next(work) // a resumed desk takes up its queue
			}
		case req := <-d.rollovers:
			d.waiting.Store(false)
			boundary.Stop()
			prev := d.o.Router.SessionID()
			var id string
			var err error
			if req.fork {
				id, err = d.o.Router.Fork(work)
				if err == nil {
					event.Publish(d.o.Bus, event.SessionStarted{Header: d.header(), Session: id, Reason: event.ReasonFork, Previous: prev})
				}
			} else {
				id, err = d.rollOver(work, event.ReasonManualRollover)
			}
			d.look()
			req.reply <- rolloverResult{previous: prev, session: id, err: err}
		case task := <-d.tasks:
			d.waiting.Store(false)
			boundary.Stop()
			task()
		case <-ready:
			d.waiting.Store(false)
			boundary.Stop()
			applyPending()
			eager() // the boundary may have passed since the check above: roll over before the turn
			d.next(work)
		}
		stopRetry()
		if ctx.Err() != nil {
			return nil
		}
	}
}

// apply puts settings into effect between turns and returns the new
// scheduler, for the loop to start.
func (d *Desk) apply(s Settings) *triggers.Scheduler {
	if s.Router != nil {
		// Validated when the config was loaded: a route is never empty.
		_ = d.o.Router.Configure(*s.Router)
	}
	sc := d.scheduler(s.Schedules)
	d.queue.Configure(s.QueueLimit, s.Coalesce)
	d.pauseMu.Lock()
	d.refusePaused = s.RefusePaused
	d.pauseMu.Unlock()
	d.mu.Lock()
	d.sched, d.calendar, d.beyond, d.warnDays = sc, s.Calendar, s.Beyond, s.WarnDays
	d.mu.Unlock()
	d.look()
	return sc
}

// next runs the next queued trigger, unless the desk is paused. The pause
// is checked under pauseMu as the trigger is taken, so that no turn starts
// once Pause has returned.
func (d *Desk) next(work context.Context) {
	d.pauseMu.Lock()
	if d.pause != nil {
		d.pauseMu.Unlock()
		return
	}
	t, ok := d.queue.Pop()
	d.pauseMu.Unlock()
	if ok {
		d.turn(work, t)
		d.look()
		d.compactLedger()
	}
}

// workContext returns a context for turns and rollovers: it outlives ctx
// by the shutdown timeout (or until CutShort), so that running work can
// finish. stop releases it.
func (d *Desk) workContext(ctx context.Context) (work context.Context, stop func()) {
	work, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	// The shutdown timer is armed once ctx ends (context.AfterFunc), so
	// that a running desk keeps no goroutine waiting for it.
	var wg sync.WaitGroup
	wg.Add(1)
	stopAfter := context.AfterFunc(ctx, func() {
		defer wg.Done()
		t := d.o.Clock.NewTimer(d.o.ShutdownTimeout)
		defer t.Stop()
		select {
		case <-work.Done():
		case <-t.C():
			cancel(fmt.Errorf("desk %s: shutdown timeout of %s passed", d.o.Name, d.o.ShutdownTimeout))
		case <-d.hurry:
			cancel(fmt.Errorf("desk %s: stopped at once (a second signal)", d.o.Name))
		}
	})
	return work, func() {
		cancel(errors.New("desk stopped"))
		if stopAfter() {
			wg.Done() // ctx had not ended: the func will never run
		}
		wg.Wait()
	}
}

// turn runs one trigger through the keeper and the router, writing each
// step to the ledger before taking it.
func (d *Desk) turn(ctx context.Context, t triggers.Trigger) {
	it, ok := d.ledger.Get(t.ID)
	if ok && it.State != triggers.StateQueued && it.State != triggers.StateRunning {
		return // the ledger says it ran, or was merged or dropped: never twice
	}
	accepted := ok && it.AtOnce // its ledger record is the turn's durability point
	now := d.o.Clock.Now()
	// The ledger says running while Prepare rolls the session over first
	// (its model calls take a while); else the sent record, a moment
	// later, says when the turn began (its StartedAt): one write fewer on
	// the way to the model. A restart runs a trigger again that is queued
	// or running alike.
	rolling := d.o.Keeper.Due()
	if rolling && it.AtOnce {
		// Prepare's rollover comes first, with its model calls: the
		// trigger is no longer taken at once, and its message is fsynced.
		d.write(triggers.Record{At: now, ID: t.ID, State: triggers.StateQueued, Reason: reasonStoppedBeforeTurn})
		accepted = false
	}
	if rolling {
		if err := d.ledger.Note(triggers.Record{At: now, ID: t.ID, State: triggers.StateRunning}); err != nil {
			// The ledger still says queued: the trigger runs once writes
			// succeed again (retryStorage takes it up from the ledger).
			d.storageFailed(err)
			return
		}
	}
	d.setRunning(&Running{Trigger: t.ID, Kind: t.Kind, Since: now, Phase: PhasePreparing, PhaseSince: now})
	defer d.setRunning(nil)

	msg := t
	msg.Text = triggers.Prompt(t)
	prepared, err := d.o.Keeper.Prepare(ctx, msg)
	session := d.o.Router.SessionID()
	turn := d.o.Router.Exchanges() + 1
	if err != nil {
		if ctx.Err() != nil {
			// Stopped before the model saw it: the ledger says running (or
			// queued), so the trigger runs again after the restart. One
			// taken at once is queued again first (it has no message).
			if it.AtOnce {
				d.write(triggers.Record{At: d.o.Clock.Now(), ID: t.ID, State: triggers.StateQueued, Reason: reasonStoppedBeforeTurn})
			}
			return
		}
		d.finish(t, session, turn, triggers.StateFailed, err.Error(),
			event.Stage(d.o.Bus, event.TurnFailed{Header: d.outcome(t.ID, triggers.StateFailed), Session: session, Turn: turn, Trigger: t.ID, Error: err.Error()}))
		return
	}
	// The sent record is written as the request goes out, while the
	// model works on it (router.TurnOptions.Sent), or once the turn
	// returns, whichever comes first: not on the way to the model. It is
	// not fsynced, and a restart does not go by it: the session's record
	// of the message is what it goes by, fsynced before the model call
	// unless the desk took the trigger at once (see recover). Until it is
	// written, Trigger shows the running turn's trigger running.
	sent := triggers.Record{ID: t.ID, State: triggers.StateSent, Session: session, Turn: turn}
	if !rolling {
		sent.StartedAt = now
	}
	noteSent := sync.OnceFunc(func() {
		sent.At = d.o.Clock.Now()
		if err := d.ledger.Note(sent); err != nil {
			d.storageFailed(err) // the turn's outcome, written next, is owed if writes still fail
		}
	})
	d.look()
	// The turn begins (turn.started) as the router writes its first
	// record, once its request is built; one that ends before (stopped,
	// or failed) has it once Turn returns, before its outcome.
	begin := sync.OnceValue(func() error {
		d.setPhase(PhaseModel)
		event.Publish(d.o.Bus, event.TurnStarted{Header: d.header(), Session: session, Turn: turn, Trigger: t.ID, Kind: string(t.Kind)})
		return nil
	})
	reply, err := d.o.Router.Turn(ctx, prepared, router.TurnOptions{Accepted: accepted, Sent: noteSent, Begin: begin})
	_ = begin()
	noteSent()
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			reason := context.Cause(ctx).Error()
			d.finish(t, session, turn, triggers.StateInterrupted, reason,
				event.Stage(d.o.Bus, event.TurnInterrupted{Header: d.outcome(t.ID, triggers.StateInterrupted), Session: session, Trigger: t.ID, Kind: string(t.Kind), Reason: reason}))
			return
		}
		if errors.Is(err, router.ErrNotSent) {
			// Its message could not be written: the model never saw it.
			// Queue it again (in the ledger, once writes succeed).
			d.ended()
			d.storageFailed(err)
			d.owe(triggers.Record{At: d.o.Clock.Now(), ID: t.ID, State: triggers.StateQueued, Reason: "queued again: its message could not be written (" + err.Error() + ")"})
			return
		}
		d.finish(t, session, turn, triggers.StateFailed, err.Error(),
			event.Stage(d.o.Bus, event.TurnFailed{Header: d.outcome(t.ID, triggers.StateFailed), Session: session, Turn: turn, Trigger: t.ID, Error: err.Error()}))
		return
	}
	d.ended()
	// The event is staged (the NATS outbox has it) before the answer is
	// recorded, and delivered after (event.Stage). The record is not
	// fsynced: the reply is, in the session file, and a restart takes the
	// answer from there (recover), announcing it again with the same id.
	deliver := event.Stage(d.o.Bus, event.TurnCompleted{
		Header: d.outcome(t.ID, triggers.StateAnswered), Session: reply.Session, Turn: reply.Turn, Trigger: t.ID, Model: reply.Model,
		Provider: string(reply.Provider), Scripted: reply.Scripted, InputTokens: reply.Usage.InputTokens,
		OutputTokens: reply.Usage.OutputTokens, CachedTokens: reply.Usage.CachedTokens, CacheWriteTokens: reply.Usage.CacheWriteTokens, Cost: reply.Cost,
		ToolCalls: reply.ToolCalls, DurationMS: reply.Duration.Milliseconds(),
		Fallback: reply.Fallback, Primary: reply.Primary, PrimaryError: reply.PrimaryError,
	})
	d.note(triggers.Record{
		At: d.o.Clock.Now(), ID: t.ID, State: triggers.StateAnswered, Session: reply.Session, Turn: reply.Turn, Reply: reply.Text,
	})
	deliver()
}

// finish writes a turn's final state, then delivers its staged event
// (event.Stage: exported before the record, delivered after). A failure
// to write it is owed: it is written once writes succeed again; a restart
// before that finds the ledger at sent and reconciles it from the session
// file, never running it twice.
func (d *Desk) finish(t triggers.Trigger, session string, turn int, state triggers.State, reason string, deliver func()) {
	d.ended()
	d.write(triggers.Record{At: d.o.Clock.Now(), ID: t.ID, State: state, Session: session, Turn: turn, Reason: reason})
	deliver()
}

// Waiting reports whether the desk's loop waits for work with nothing
// queued, not paused, not stalled and no rollover due, taking triggers at
// once (Options.TakeAtOnce): a trigger submitted now is its next step.
func (d *Desk) Waiting() bool { return d.waiting.Load() }

// requeueAtOnce queues again, in the ledger, each trigger of the queue
// taken at once (Record.AtOnce), whose turn has not begun: the loop is
// paused, stopping or about to roll over, and a restart would take it for
// one the model may have seen. Only the loop calls it (or Run, once the
// loop has ended). Under submitMu, so that no Submit merges a trigger it
// looks at (coalescing) between its look at the ledger and its write.
func (d *Desk) requeueAtOnce() {
	d.submitMu.Lock()
	defer d.submitMu.Unlock()
	for _, t := range d.queue.Items() {
		if it, ok := d.ledger.Get(t.ID); ok && it.AtOnce && it.State == triggers.StateQueued {
			d.write(triggers.Record{At: d.o.Clock.Now(), ID: t.ID, State: triggers.StateQueued, Reason: reasonStoppedBeforeTurn})
		}
	}
}

// compactLedger compacts the ledger between turns once its file has grown
// well past what it keeps (New compacts it at start as well). A failed
// compaction leaves the file as it was and changes nothing a restart
// does; the next Append reports a failing disk.
func (d *Desk) compactLedger() {
	_, _ = d.ledger.CompactIfGrown(d.o.Clock.Now().Add(-d.o.KeepFor))
}

// ended shows the turn over in the status (the session as it is now, no
// running turn) before its outcome is written: whoever sees the outcome in
// the ledger sees a status that agrees with it.
func (d *Desk) ended() {
	d.look()
	d.setRunning(nil)
}

// look records the router's session for Status. Only the loop calls it,
// between turns.
func (d *Desk) look() {
	date, _ := d.o.Router.TradingDate()
	v := sessionView{
		session: d.o.Router.SessionID(), date: date.String(), exchanges: d.o.Router.Exchanges(), model: d.o.Router.Primary(),
		spend: d.o.Router.Spend(), answer: lastAnswer(d.o.Router),
	}
	d.mu.Lock()
	d.seen = v
	d.mu.Unlock()
}

func (d *Desk) setState(s State) {
	d.mu.Lock()
	d.state = s
	d.mu.Unlock()
}

// idleState is StatePaused or StateIdle.
func (d *Desk) idleState() State {
	if d.Paused() != nil {
		return StatePaused
	}
	return StateIdle
}

// setIdleState shows the desk idle (or paused) unless it is starting,
// running a turn or stopped.
func (d *Desk) setIdleState() {
	idle := d.idleState()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == StateStopped || d.running != nil || d.state == StateStarting && !isClosed(d.started) {
		return
	}
	d.state = idle
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (d *Desk) setRunning(r *Running) {
	idle := d.idleState()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.running = r
	if d.state == StateStopped {
		return
	}
	if r != nil {
		d.state = StateRunning
		if r.Kind == KindRollover {
			d.state = StateRollingOver
		}
	} else {
		d.state = idle
	}
}

func (d *Desk) setPhase(p Phase) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running != nil {
		d.running.Phase, d.running.PhaseSince = p, d.o.Clock.Now()
	}
}

func (d *Desk) header() event.Header {
	return event.Header{At: d.o.Clock.Now(), Desk: d.o.Name}
}

// outcome is the header of the event that reports trigger's final state:
// its ID, trigger:<id>:<state>, is the same on the copy a restart
// announces again (recover), so that a consumer (the NATS stream's
// duplicate window) keeps one.
func (d *Desk) outcome(trigger string, state triggers.State) event.Header {
	h := d.header()
	h.ID = "trigger:" + trigger + ":" + string(state)
	return h
}

// newTriggerID makes an id for a trigger that came without one: the UTC
// time and random hex, sortable and unique.
func newTriggerID(now time.Time) string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail on Linux
	return "t-" + now.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}
