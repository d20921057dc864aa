// Package keeper starts, resumes and rolls over a desk's sessions.
//
// Before each turn the keeper checks the trading date; on the first turn of
// a new day (or as soon as the day boundary passes, when the desk's loop
// asks) it has the desk summarise the old session and fold the day's notes
// into Memory.md, writes the summary, runs the skill curator, then starts a
// fresh session whose first message carries the summary.
//
// A rollover is a small transaction: each step is written to the desk's
// rollover journal before the next starts, so a crash at any point resumes
// at the step it stopped at, never asks for a second summary, and never
// loses the old session. Each step's event (session.summarized,
// memory.folded, skills.reviewed, and the new session's session.started)
// is announced at least once: it is journalled, announced, and only then
// is the step marked done, so a crash in between announces it again on
// resume, as the same event with the same ID ("rollover:<old session>:<step>").
package keeper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// Router is what a Keeper needs from the desk's model router.
type Router interface {
	SessionID() string
	TradingDate() (memory.Date, bool)
	Exchanges() int
	RestoreSession(ctx context.Context) (resumed bool, err error)
	Reset(ctx context.Context) error
	Summarise(ctx context.Context, date memory.Date) (string, error)
	Digest() string
	Fold(ctx context.Context, date memory.Date, memoryText, notes string) (string, error)
}

// Curator reviews the desk's own skills after the day's summary.
type Curator interface {
	Review(ctx context.Context, date memory.Date, session string) (memory.SkillReview, error)
}

// RolloverMode is when a desk's sessions roll over (a desk's rollover).
type RolloverMode string

// The rollover modes.
const (
	// RolloverDaily rolls the session over at each trading day boundary
	// (the default).
	RolloverDaily RolloverMode = "daily"
	// RolloverOff never rolls the session over: the desk keeps one
	// session (Options.Disabled).
	RolloverOff RolloverMode = "off"
	// RolloverTradingDay rolls over at the first boundary into a trading
	// day of the desk's calendar: a weekend or a holiday opens no new
	// session (the desk's router is seen through its calendar).
	RolloverTradingDay RolloverMode = "trading_day"
)

// Step names a durable step of a rollover.
type Step string

// The steps of a rollover, in order.
const (
	StepSummarised Step = "summarised"
	StepFolded     Step = "folded"
	StepCurated    Step = "curated"
	StepReset      Step = "reset"
)

// Options configures a Keeper.
type Options struct {
	// Desk is the desk's name.
	Desk string
	// Router is the desk's model router, over the same folder.
	Router Router
	// Folder is the desk's folder.
	Folder *memory.Folder
	// Curator reviews skills after the summary; nil skips the review.
	Curator Curator
	// Bus receives the keeper's events.
	Bus *event.Bus
	// Clock is deskd's clock.
	Clock clock.Clock
	// Day maps instants to trading dates.
	Day memory.TradingDay
	// Disabled turns rollovers off: the desk keeps one session.
	Disabled bool
	// Guard decides whether a fold's result may replace Memory.md.
	Guard memory.FoldGuard
	// SummaryAttempts is how often a failing summary or fold call is tried
	// before the rollover degrades (default 3).
	SummaryAttempts int
	// Backoff is the wait before the second attempt; it doubles after each
	// failure (default 2s).
	Backoff time.Duration
	// AfterStep, if set, is called once each step's outcome is durable and
	// its event announced, before the journal marks the step done: the one
	// instant at which a crash makes the step announce its event again. An
	// error stops the rollover there as a crash would. Tests use it to
	// crash a rollover at every step.
	AfterStep func(Step) error
	// Progress, if set, is told of each rollover step as it starts, every
	// StillEvery while it runs, and as it ends (each is announced as
	// rollover.progress too). It runs on the rollover's goroutine, or the
	// still-running report's, and must not block.
	Progress func(Progress)
	// StillEvery is how often a running step is reported as still running
	// (DefaultStillEvery in deskd); zero reports only starts and ends.
	StillEvery time.Duration
	// Log receives the keeper's warnings (deskd's clock behind the
	// session's trading date); the zero Logger drops them.
	Log zerolog.Logger
}

// Keeper looks after one desk's sessions. It is driven by the desk's loop,
// one call at a time.
type Keeper struct {
	o Options

	mu sync.Mutex
	// behind is the session for which the clock behind its trading date
	// was last warned of ("" once the clock has caught up).
	behind string
	// unfinished is the session whose manual rollover the journal holds
	// begun and not done at Start, before its new session began (a crash,
	// a failed step, a lease lost): it is due again, whatever its date.
	unfinished string
}

// New returns a keeper; call Start before the first turn.
func New(o Options) *Keeper {
	if o.SummaryAttempts <= 0 {
		o.SummaryAttempts = 3
	}
	if o.Backoff <= 0 {
		o.Backoff = 2 * time.Second
	}
	return &Keeper{o: o}
}

// journalFile is the rollover journal in the desk folder.
const journalFile = memory.RolloverFile

// journal records how far the rollover of one session has come: the
// fields memory.Rollover defines, and the keeper's own bookkeeping. Each
// step's outcome and event are journalled before the event is announced,
// and the step is marked done after (see Keeper.announced).
type journal struct {
	memory.Rollover

	SummarizedEvent *event.SessionSummarized `json:"summarized_event,omitempty"`
	// SummaryCovers is how many exchanges the session had when Summary
	// was made (0: not known, a journal of an older deskd). A rollover cut
	// short can be followed by turns in the same session (its later step
	// failed and the desk went on; deskd restarted with its clock behind):
	// a summary that covers fewer exchanges than the session has is made
	// again, round SummaryRound, so that no turn is in no summary.
	SummaryCovers int `json:"summary_covers,omitempty"`
	SummaryRound  int `json:"summary_round,omitempty"`

	// FoldTook is exactly what the fold (FoldResult) took of each notes
	// file: a crash after Memory.md was written but before
	// memory.FoldedFile was moves the record on from here, neither folding
	// those notes twice nor losing later ones.
	FoldTook    []noteRange         `json:"fold_took,omitempty"`
	FoldedEvent *event.MemoryFolded `json:"folded_event,omitempty"`

	ReviewedEvent *event.SkillsReviewed `json:"reviewed_event,omitempty"`

	StartedEvent *event.SessionStarted `json:"started_event,omitempty"`
}

// noteRange is what a fold took of one notes file, notes/<Date>.md: its
// bytes from offset From to To.Offset. To is the mark the file's entry in
// memory.FoldedFile moves to once the fold is written.
type noteRange struct {
	Date string           `json:"date"`
	From int64            `json:"from"`
	To   memory.NotesMark `json:"to"`
}

// Start picks up the session saved before a restart, or starts the first
// one, and announces it. A rollover that a crash cut short after its new
// session began is completed and announced; one cut short before that is
// resumed by the next RollOver: a daily one once its session's date is
// past (Due), a manual one at once (Due from Start on).
func (k *Keeper) Start(ctx context.Context) error {
	resumed, err := k.o.Router.RestoreSession(ctx)
	if err != nil {
		return fmt.Errorf("keeper %s: start: %w", k.o.Desk, err)
	}
	if _, err := k.o.Folder.ReadFolded(); err != nil { // migrates an older deskd's record now
		return fmt.Errorf("keeper %s: start: %w", k.o.Desk, err)
	}
	reason := event.ReasonFirst
	if resumed {
		reason = event.ReasonResumed
	}
	k.announce(reason, "", "")
	var j journal
	ok, err := k.o.Folder.ReadJSON(journalFile, &j)
	if err != nil {
		return fmt.Errorf("keeper %s: start: %w", k.o.Desk, err)
	}
	cur := k.o.Router.SessionID()
	if ok && !j.Done && j.Session == cur && event.SessionReason(j.Reason) == event.ReasonManualRollover {
		// A daily rollover cut short is due by its session's date, as
		// before; a manual one, of a session of any date, is due now.
		k.mu.Lock()
		k.unfinished = cur
		k.mu.Unlock()
	}
	if ok && !j.Done && j.Session != cur {
		// The router began the new session; the journal may not know it
		// yet, and its announcement may be lost: announce it (again, as
		// the same event when the journal has it), then mark it done.
		ev := event.SessionStarted{Header: k.stepHeader(j.Session, StepReset), Session: cur,
			Reason: event.SessionReason(j.Reason), Previous: j.Session, SummaryPath: j.SummaryPath}
		if j.StartedEvent != nil && j.StartedEvent.Session == cur {
			ev = *j.StartedEvent
		}
		j.NewSession, j.StartedEvent = cur, &ev
		event.Publish(k.o.Bus, ev)
		j.Done = true
		if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
			return fmt.Errorf("keeper %s: complete rollover of %s: %w", k.o.Desk, j.Session, err)
		}
	}
	return nil
}

// Today returns the trading date now.
func (k *Keeper) Today() memory.Date { return k.o.Day.DateOf(k.o.Clock.Now()) }

// Due reports whether the current session belongs to an earlier trading
// date, or is one whose manual rollover a restart found begun and not
// done (see Start), so that the desk must roll over. A session of a later date than
// today's (deskd's clock started before it, or stepped back) is not due:
// the desk keeps it, and the keeper warns once, until a trading date after
// the session's begins.
func (k *Keeper) Due() bool {
	if k.o.Disabled {
		return false
	}
	k.mu.Lock()
	unfinished := k.unfinished
	k.mu.Unlock()
	if unfinished != "" && unfinished == k.o.Router.SessionID() {
		return true
	}
	// The router may read the clock too (a trading-day router does): read
	// today before and after it, so that both sides of the comparison are
	// of one date even when the boundary passes in between.
	for {
		today := k.Today()
		d, ok := k.o.Router.TradingDate()
		if k.Today() != today {
			continue
		}
		k.noteBehind(ok && today.Before(d), d, today)
		return ok && d.Before(today)
	}
}

// noteBehind warns, once per session, that deskd's clock (trading date
// today) is behind the session's trading date d; behind is false once it
// is not, so that a later step back warns again.
func (k *Keeper) noteBehind(behind bool, d, today memory.Date) {
	session := k.o.Router.SessionID()
	k.mu.Lock()
	defer k.mu.Unlock()
	if !behind {
		k.behind = ""
		return
	}
	if k.behind == session {
		return
	}
	k.behind = session
	now := k.o.Clock.Now().In(k.o.Day.Location)
	k.o.Log.Warn().Str("desk", k.o.Desk).Str("session", session).Str("session_date", d.String()).Str("trading_date", today.String()).
		Msgf("desk %s: deskd's clock is at %s, trading date %s, before the trading date %s of session %s (--clock-start, or a clock stepped back); "+
			"the desk keeps session %s and rolls over only once a trading date after %s begins",
			k.o.Desk, now.Format(time.RFC3339), today, d, session, session, d)
}

// NextBoundary returns when the next trading date begins.
func (k *Keeper) NextBoundary() time.Time { return k.o.Day.NextBoundary(k.o.Clock.Now()) }

// Prepare rolls over to a new session on a new day, and puts the previous
// session's summary in front of a new session's first message. A rollover
// that fails is announced and the turn goes on in the old session; the
// next turn tries again.
func (k *Keeper) Prepare(ctx context.Context, t triggers.Trigger) (triggers.Trigger, error) {
	if k.Due() {
		if _, err := k.RollOver(ctx, event.ReasonDailyRollover); err != nil && ctx.Err() != nil {
			return t, err
		}
	}
	if k.o.Router.Exchanges() > 0 {
		return t, nil
	}
	s, ok, err := k.o.Folder.LatestSummary()
	if err != nil {
		return t, fmt.Errorf("keeper %s: prepare %s: %w", k.o.Desk, t.ID, err)
	}
	if !ok {
		return t, nil
	}
	return triggers.WithSummary(t, s.Date.String(), strings.TrimRight(s.Text, "\n")), nil
}

// RollOver ends the current session with a summary and starts a fresh one
// for today, and returns the new session's id. reason is announced with the
// new session (event.ReasonDailyRollover, ReasonManualRollover). A failure is announced
// as rollover.failed and returned; the journal keeps the steps already done.
func (k *Keeper) RollOver(ctx context.Context, reason event.SessionReason) (string, error) {
	prev := k.o.Router.SessionID()
	id, step, err := k.rollOver(ctx, reason)
	if err != nil {
		event.Publish(k.o.Bus, event.RolloverFailed{Header: k.header(), Session: prev, Step: string(step), Error: err.Error()})
		return "", fmt.Errorf("keeper %s: roll over: %s: %w", k.o.Desk, step, err)
	}
	return id, nil
}

func (k *Keeper) rollOver(ctx context.Context, reason event.SessionReason) (string, Step, error) {
	prev := k.o.Router.SessionID()
	date, ok := k.o.Router.TradingDate()
	var j journal
	if _, err := k.o.Folder.ReadJSON(journalFile, &j); err != nil {
		return "", StepSummarised, err
	}
	if j.Session != prev || j.Done {
		j = journal{Rollover: memory.Rollover{Session: prev, Date: date, Reason: string(reason)}}
	}
	if ok && k.o.Router.Exchanges() > 0 {
		if err := k.step(&j, PhaseSummarising, func() error { return k.summarise(ctx, &j) }); err != nil {
			return "", StepSummarised, err
		}
		if err := k.step(&j, PhaseFolding, func() error { return k.fold(ctx, &j) }); err != nil {
			return "", StepFolded, err
		}
		if err := k.step(&j, PhaseCurating, func() error { return k.curate(ctx, &j) }); err != nil {
			return "", StepCurated, err
		}
	}
	if err := k.o.Router.Reset(ctx); err != nil {
		return "", StepReset, err
	}
	// The journal names the new session and holds its announcement before
	// it is announced, and is marked done after: a crash between the two
	// announces it again at Start (at least once, never lost, same ID).
	ev := event.SessionStarted{Header: k.stepHeader(prev, StepReset), Session: k.o.Router.SessionID(),
		Reason: event.SessionReason(j.Reason), Previous: prev, SummaryPath: j.SummaryPath}
	j.NewSession, j.StartedEvent = ev.Session, &ev
	if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
		return "", StepReset, err
	}
	if err := k.announced(&j, StepReset, func() { event.Publish(k.o.Bus, ev) }, func() { j.Done = true }); err != nil {
		return "", StepReset, err
	}
	return j.NewSession, "", nil
}

// summarise asks the model for the summary, with retries, and degrades to
// the mechanical digest when every attempt fails. The text is journalled
// before the summary file is written, so a crash between the two writes the
// same text on resume instead of asking the model again. The router records
// the model's answer in the session file (fsynced) before it returns it, an
// instant before the journal can hold it: an answer found there after the
// session's last exchange, and not in the journal, is the answer of this
// rollover that a crash (or a failed journal write) cut short, and is used
// without asking the model again.
func (k *Keeper) summarise(ctx context.Context, j *journal) error {
	if n := k.o.Router.Exchanges(); j.Summary != "" && j.SummaryCovers > 0 && j.SummaryCovers < n {
		// The session went on after this summary was made: make it again.
		j.Summary, j.SummaryAttempts, j.SummaryError, j.Degraded = "", 0, "", false
		j.Summarised, j.SummarizedEvent = false, nil
		j.SummaryRound++
		if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
			return err
		}
	}
	if j.Summarised {
		return nil
	}
	if j.SummarizedEvent == nil {
		if j.Summary == "" {
			if text, ok := k.recordedSummary(j.Session); ok {
				j.Summary, j.SummaryAttempts, j.SummaryCovers = strings.TrimRight(text, "\n")+"\n", 1, k.o.Router.Exchanges()
				if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
					return err
				}
			}
		}
		if j.Summary == "" {
			text, n, err := k.retry(ctx, func() (string, error) { return k.o.Router.Summarise(ctx, j.Date) })
			j.SummaryAttempts = n
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				j.Degraded, j.SummaryError = true, err.Error()
				text = memory.DegradedSummary(oneLine(err.Error()), k.o.Router.Digest())
			}
			j.Summary, j.SummaryCovers = strings.TrimRight(text, "\n")+"\n", k.o.Router.Exchanges()
			if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
				return err
			}
		}
		path, err := k.writeSummary(j)
		if err != nil {
			return err
		}
		j.SummaryPath = path
		h := k.stepHeader(j.Session, StepSummarised)
		if j.SummaryRound > 0 { // a summary made again is a new event, not a copy of the first
			h.ID += ":" + strconv.Itoa(j.SummaryRound)
		}
		j.SummarizedEvent = &event.SessionSummarized{Header: h, Session: j.Session,
			Date: j.Date.String(), SummaryPath: path, Degraded: j.Degraded, Attempts: j.SummaryAttempts, Error: j.SummaryError}
		if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
			return err
		}
	}
	ev := *j.SummarizedEvent
	return k.announced(j, StepSummarised, func() { event.Publish(k.o.Bus, ev) }, func() { j.Summarised = true })
}

// recordedSummary returns the model's summary answer that session's file
// holds after its last exchange, as Router.Summarise returned it (with the
// scripted model's header when that model wrote it); ok is false when there
// is none: no answer, one cut at its cap, or one a later message, tool
// result or checkpoint followed (it does not cover the session). A file
// that cannot be read holds none to reuse: the model is asked, as it would
// be without it.
func (k *Keeper) recordedSummary(session string) (text string, ok bool) {
	recs, err := k.o.Folder.ReadSession(session)
	if err != nil {
		return "", false
	}
	for i := len(recs) - 1; i >= 0; i-- {
		switch r := recs[i]; {
		case r.Type == memory.RecordMessage || r.Type == memory.RecordTool || r.Type == memory.RecordCheckpoint:
			return "", false
		case r.Type == memory.RecordEvent && r.Kind == memory.SummaryKind && r.ForkedFrom == "" && !r.Truncated &&
			strings.TrimSpace(r.Text) != "":
			if r.Scripted {
				return memory.ScriptedSummaryHeader(r.Model) + r.Text, true
			}
			return r.Text, true
		}
	}
	return "", false
}

// writeSummary writes the journalled summary, unless the summary file holds
// it already (a crash after the write), and returns the file's path.
func (k *Keeper) writeSummary(j *journal) (string, error) {
	s, ok, err := k.o.Folder.ReadSummary(j.Date)
	if err != nil {
		return "", err
	}
	if ok && s.Text == j.Summary {
		return s.Path, nil
	}
	return k.o.Folder.WriteSummary(j.Date, j.Summary)
}

// markFolded moves the marks of memory.FoldedFile on past what the journalled
// fold took. It is idempotent: it sets each mark to where the fold ended.
func (k *Keeper) markFolded(j *journal) error {
	rec, err := k.o.Folder.ReadFolded()
	if err != nil {
		return err
	}
	for _, r := range j.FoldTook {
		rec.Notes[r.Date] = r.To
	}
	if len(j.FoldTook) == 0 {
		// A journal of an older deskd names only the dates: they count
		// as folded up to their files' sizes now, as a migration does.
		for _, s := range j.FoldNotes {
			d, err := memory.ParseDate(s)
			if err != nil {
				continue
			}
			tail, ok, err := k.o.Folder.ReadNotesFrom(d, memory.NotesMark{})
			if err != nil {
				return fmt.Errorf("mark notes of %s folded: %w", s, err)
			}
			if ok {
				rec.Notes[s] = tail.To
			}
		}
	}
	if err := k.o.Folder.WriteFolded(rec); err != nil {
		return fmt.Errorf("mark notes of %s folded: %w", strings.Join(j.FoldNotes, ", "), err)
	}
	return nil
}

// fold folds every note not yet folded, up to the session's date, into
// Memory.md (see memory.FoldedFile), and announces the outcome. Its event is
// journalled before it is announced; a journalled successful fold moves
// the marks of memory.FoldedFile on before every announcement, so a crash
// anywhere after Memory.md was written neither folds twice nor loses notes.
func (k *Keeper) fold(ctx context.Context, j *journal) error {
	if j.Folded {
		return nil
	}
	if j.FoldedEvent == nil {
		ev, err := k.foldNotes(ctx, j)
		if err != nil {
			return err
		}
		ev.Header, ev.Session, ev.Date = k.stepHeader(j.Session, StepFolded), j.Session, j.Date.String()
		j.FoldedEvent = &ev
		if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
			return err
		}
	}
	if j.FoldedEvent.Folded {
		if err := k.markFolded(j); err != nil {
			return err
		}
	}
	ev := *j.FoldedEvent
	return k.announced(j, StepFolded, func() { event.Publish(k.o.Bus, ev) }, func() { j.Folded = true })
}

// foldNotes folds the pending notes into Memory.md through the fold guard,
// and returns the event that says how it went: a result that is empty, too
// large, or drops too many of the prior entries is refused, and Memory.md
// stays as it was. The write is a compare-and-swap on the text the fold
// read: when an operator edited Memory.md meanwhile, the notes are folded
// once more into the new text, and if that conflicts too the operator's
// file is kept. A degraded day, a refused or failed fold, and a conflict
// all leave the notes for the next fold. The model's result, and what it
// took, are journalled before Memory.md is written, so a crash between the
// two does not fold twice.
func (k *Keeper) foldNotes(ctx context.Context, j *journal) (event.MemoryFolded, error) {
	if j.Degraded {
		return event.MemoryFolded{Reason: "degraded summary: notes kept for the next fold"}, nil
	}
	rec, err := k.o.Folder.ReadFolded()
	if err != nil {
		return event.MemoryFolded{}, err
	}
	for attempt := 1; ; attempt++ {
		current, err := k.o.Folder.ReadMemory()
		if err != nil {
			return event.MemoryFolded{}, err
		}
		if j.FoldResult != nil && current == *j.FoldResult {
			ev := event.MemoryFolded{Folded: true, Notes: j.FoldNotes} // written before a crash
			ev.LinesAdded, ev.LinesRemoved = lineDiff(j.FoldBefore, *j.FoldResult)
			return ev, nil
		}
		if j.FoldResult == nil || current != j.FoldBefore {
			notes, took, dates, err := k.pendingNotes(j.Date, rec)
			if err != nil {
				return event.MemoryFolded{}, err
			}
			if len(took) == 0 {
				return event.MemoryFolded{Reason: "no notes to fold"}, nil
			}
			result, _, err := k.retry(ctx, func() (string, error) { return k.o.Router.Fold(ctx, j.Date, current, notes) })
			if err != nil {
				if ctx.Err() != nil {
					return event.MemoryFolded{}, err
				}
				return event.MemoryFolded{Notes: dates, Reason: "fold failed, notes kept for the next fold: " + oneLine(err.Error())}, nil
			}
			if err := k.o.Guard.Check(current, result); err != nil {
				return event.MemoryFolded{Notes: dates, Reason: oneLine(err.Error()) + "; Memory.md unchanged, notes kept for the next fold"}, nil
			}
			j.FoldBefore, j.FoldResult, j.FoldNotes, j.FoldTook = current, &result, dates, took
			if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
				return event.MemoryFolded{}, err
			}
		}
		hist, err := k.o.Folder.ReplaceMemory(j.FoldBefore, *j.FoldResult)
		if errors.Is(err, memory.ErrMemoryChanged) {
			if attempt < 2 {
				continue // an operator edited Memory.md during the fold: fold once more on their text
			}
			return event.MemoryFolded{Notes: j.FoldNotes, Reason: "Memory.md was edited during the fold twice; the operator's file is kept, notes kept for the next fold"}, nil
		}
		if err != nil {
			return event.MemoryFolded{}, err
		}
		ev := event.MemoryFolded{Folded: true, Notes: j.FoldNotes, HistoryPath: hist}
		ev.LinesAdded, ev.LinesRemoved = lineDiff(j.FoldBefore, *j.FoldResult)
		return ev, nil
	}
}

// pendingNotes gathers what every notes file up to date holds beyond its
// mark in rec (the whole file when it was rewritten), and returns the text,
// what it took of each file, and the dates it took notes of.
func (k *Keeper) pendingNotes(date memory.Date, rec memory.Folded) (string, []noteRange, []string, error) {
	dates, err := k.o.Folder.NoteDates()
	if err != nil {
		return "", nil, nil, err
	}
	var b strings.Builder
	var took []noteRange
	var tookDates []string
	for _, d := range dates {
		if date.Before(d) {
			continue
		}
		tail, ok, err := k.o.Folder.ReadNotesFrom(d, rec.Notes[d.String()])
		if err != nil {
			return "", nil, nil, err
		}
		text := tail.Text
		if tail.From.Offset > 0 {
			text = strings.TrimLeft(text, "\r\n") // the newline AppendNote put after a hand-edited last line
		}
		if !ok || strings.TrimSpace(text) == "" {
			continue
		}
		if len(took) > 0 {
			b.WriteString("\n")
		}
		if len(dates) > 1 {
			fmt.Fprintf(&b, "### %s\n\n", d)
		}
		b.WriteString(strings.TrimRight(text, "\n"))
		b.WriteString("\n")
		took = append(took, noteRange{Date: d.String(), From: tail.From.Offset, To: tail.To})
		tookDates = append(tookDates, d.String())
	}
	return b.String(), took, tookDates, nil
}

// curate runs the skill curator once and announces its review; the review
// is journalled before it is announced, so a crash after it does not run
// the curator again.
func (k *Keeper) curate(ctx context.Context, j *journal) error {
	if j.Curated {
		return nil
	}
	if j.ReviewedEvent == nil {
		ev := event.SkillsReviewed{Header: k.stepHeader(j.Session, StepCurated), Session: j.Session, Date: j.Date.String(), Skills: []string{}, Changes: []string{}}
		if k.o.Curator == nil {
			ev.Skipped = "curator disabled"
		} else if r, err := k.o.Curator.Review(ctx, j.Date, j.Session); err != nil {
			if ctx.Err() != nil {
				return err
			}
			ev.Skipped = "review failed: " + oneLine(err.Error())
		} else {
			ev.Skills, ev.Changes = append(ev.Skills, r.Skills...), append(ev.Changes, r.Changes...)
		}
		j.ReviewedEvent = &ev
		if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
			return err
		}
	}
	ev := *j.ReviewedEvent
	return k.announced(j, StepCurated, func() { event.Publish(k.o.Bus, ev) }, func() { j.Curated = true })
}

// retry calls f up to SummaryAttempts times, waiting Backoff (doubling) on
// deskd's clock between attempts. It returns the attempts made.
func (k *Keeper) retry(ctx context.Context, f func() (string, error)) (string, int, error) {
	wait := k.o.Backoff
	var errs error
	for n := 1; ; n++ {
		text, err := f()
		if err == nil && strings.TrimSpace(text) == "" {
			err = errors.New("empty answer")
		}
		if err == nil {
			return text, n, nil
		}
		errs = err
		if n >= k.o.SummaryAttempts || ctx.Err() != nil {
			return "", n, errs
		}
		if err := clock.Sleep(ctx, k.o.Clock, wait); err != nil {
			return "", n, errors.Join(errs, err)
		}
		wait *= 2
	}
}

// announced announces a step whose outcome and event are journalled, lets
// AfterStep see it, and only then marks the step done (done) in the
// journal: a crash before that announces the same event again when the
// rollover resumes, so every step's event is announced at least once.
func (k *Keeper) announced(j *journal, step Step, announce, done func()) error {
	announce()
	if k.o.AfterStep != nil {
		if err := k.o.AfterStep(step); err != nil {
			return err
		}
	}
	done()
	return k.o.Folder.WriteJSON(journalFile, j)
}

func (k *Keeper) announce(reason event.SessionReason, previous, summaryPath string) {
	event.Publish(k.o.Bus, event.SessionStarted{
		Header: k.header(), Session: k.o.Router.SessionID(), Reason: reason, Previous: previous, SummaryPath: summaryPath,
	})
}

func (k *Keeper) header() event.Header {
	return event.Header{At: k.o.Clock.Now(), Desk: k.o.Desk}
}

// stepHeader is the header of the event that the rollover of session old
// announces at step: its ID, "rollover:<old>:<step>", is the same in every
// copy announced across a crash.
func (k *Keeper) stepHeader(old string, step Step) event.Header {
	h := k.header()
	h.ID = "rollover:" + old + ":" + string(step)
	return h
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// lineDiff counts the lines of after that before lacks, and the reverse.
func lineDiff(before, after string) (added, removed int) {
	count := map[string]int{}
	for _, l := range strings.Split(before, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(after, "\n") {
		if count[l] > 0 {
			count[l]--
		} else {
			added++
		}
	}
	for _, n := range count {
		removed += n
	}
	return added, removed
}
