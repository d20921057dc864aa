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
// loses the old session.
package keeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	Review(ctx context.Context, date memory.Date, session string) (Review, error)
}

// Review is what a curator reports.
type Review struct {
	// Skills names the skills it looked at.
	Skills []string
	// Changes describes each change it made, one line each.
	Changes []string
}

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
	// AfterStep, if set, is called once each step is durable; an error
	// stops the rollover there as a crash would. Tests use it to crash a
	// rollover at every step.
	AfterStep func(Step) error
}

// Keeper looks after one desk's sessions. It is driven by the desk's loop,
// one call at a time.
type Keeper struct {
	o Options
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
const journalFile = "rollover.json"

// journal records how far the rollover of one session has come.
type journal struct {
	Session     string      `json:"session"`
	Date        memory.Date `json:"trading_date"`
	Reason      string      `json:"reason"`
	Summary     string      `json:"summary,omitempty"`
	Summarised  bool        `json:"summarised"`
	SummaryPath string      `json:"summary_path,omitempty"`
	Degraded    bool        `json:"degraded,omitempty"`
	Folded      bool        `json:"folded"`
	FoldBefore  string      `json:"fold_before,omitempty"`
	FoldResult  *string     `json:"fold_result,omitempty"`
	FoldNotes   []string    `json:"fold_notes,omitempty"`
	Curated     bool        `json:"curated"`
	NewSession  string      `json:"new_session,omitempty"`
	Done        bool        `json:"done"`
}

// Start picks up the session saved before a restart, or starts the first
// one, and announces it. A rollover that a crash cut short after its new
// session began is completed and announced; one cut short before that is
// resumed by the next RollOver.
func (k *Keeper) Start(ctx context.Context) error {
	resumed, err := k.o.Router.RestoreSession(ctx)
	if err != nil {
		return fmt.Errorf("keeper %s: start: %w", k.o.Desk, err)
	}
	reason := "first"
	if resumed {
		reason = "resumed"
	}
	k.announce(reason, "", "")
	var j journal
	ok, err := k.o.Folder.ReadJSON(journalFile, &j)
	if err != nil {
		return fmt.Errorf("keeper %s: start: %w", k.o.Desk, err)
	}
	if ok && !j.Done && j.Session != k.o.Router.SessionID() {
		j.NewSession, j.Done = k.o.Router.SessionID(), true
		if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
			return fmt.Errorf("keeper %s: complete rollover of %s: %w", k.o.Desk, j.Session, err)
		}
		k.announce(j.Reason, j.Session, j.SummaryPath)
	}
	return nil
}

// Today returns the trading date now.
func (k *Keeper) Today() memory.Date { return k.o.Day.DateOf(k.o.Clock.Now()) }

// Due reports whether the current session belongs to an earlier trading
// date, so that the desk must roll over.
func (k *Keeper) Due() bool {
	if k.o.Disabled {
		return false
	}
	d, ok := k.o.Router.TradingDate()
	return ok && d != k.Today()
}

// NextBoundary returns when the next trading date begins.
func (k *Keeper) NextBoundary() time.Time { return k.o.Day.NextBoundary(k.o.Clock.Now()) }

// Prepare rolls over to a new session on a new day, and puts the previous
// session's summary in front of a new session's first message. A rollover
// that fails is announced and the turn goes on in the old session; the
// next turn tries again.
func (k *Keeper) Prepare(ctx context.Context, t triggers.Trigger) (triggers.Trigger, error) {
	if k.Due() {
		if _, err := k.RollOver(ctx, "daily_rollover"); err != nil && ctx.Err() != nil {
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
// new session ("daily_rollover", "manual_rollover"). A failure is announced
// as rollover.failed and returned; the journal keeps the steps already done.
func (k *Keeper) RollOver(ctx context.Context, reason string) (string, error) {
	prev := k.o.Router.SessionID()
	id, step, err := k.rollOver(ctx, reason)
	if err != nil {
		event.Publish(k.o.Bus, event.RolloverFailed{Header: k.header(), Session: prev, Step: string(step), Error: err.Error()})
		return "", fmt.Errorf("keeper %s: roll over: %s: %w", k.o.Desk, step, err)
	}
	return id, nil
}

func (k *Keeper) rollOver(ctx context.Context, reason string) (string, Step, error) {
	prev := k.o.Router.SessionID()
	date, ok := k.o.Router.TradingDate()
	var j journal
	if _, err := k.o.Folder.ReadJSON(journalFile, &j); err != nil {
		return "", StepSummarised, err
	}
	if j.Session != prev || j.Done {
		j = journal{Session: prev, Date: date, Reason: reason}
	}
	if ok && k.o.Router.Exchanges() > 0 {
		if err := k.summarise(ctx, &j); err != nil {
			return "", StepSummarised, err
		}
		if err := k.fold(ctx, &j); err != nil {
			return "", StepFolded, err
		}
		if err := k.curate(ctx, &j); err != nil {
			return "", StepCurated, err
		}
	}
	if err := k.o.Router.Reset(ctx); err != nil {
		return "", StepReset, err
	}
	// The journal names the new session before it is announced, and is
	// marked done after: a crash between the two announces it again at
	// Start (at least once, never lost).
	j.NewSession = k.o.Router.SessionID()
	if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
		return "", StepReset, err
	}
	j.Done = true
	if err := k.save(j, StepReset, func() { k.announce(j.Reason, prev, j.SummaryPath) }); err != nil {
		return "", StepReset, err
	}
	return j.NewSession, "", nil
}

// summarise asks the model for the summary, with retries, and degrades to
// the mechanical digest when every attempt fails. The text is journalled
// before the summary file is written, so a crash between the two writes the
// same text on resume instead of asking the model again.
func (k *Keeper) summarise(ctx context.Context, j *journal) error {
	if j.Summarised {
		return nil
	}
	attempts := 0
	var lastErr error
	if j.Summary == "" {
		text, n, err := k.retry(ctx, func() (string, error) { return k.o.Router.Summarise(ctx, j.Date) })
		attempts, lastErr = n, err
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			j.Degraded = true
			text = fmt.Sprintf("[Degraded summary: the model could not summarise this session (%s). "+
				"This is a mechanical digest of its exchanges.]\n\n%s", oneLine(err.Error()), k.o.Router.Digest())
		}
		j.Summary = strings.TrimRight(text, "\n") + "\n"
		if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
			return err
		}
	}
	path, err := k.o.Folder.WriteSummary(j.Date, j.Summary)
	if err != nil {
		return err
	}
	j.SummaryPath, j.Summarised = path, true
	ev := event.SessionSummarized{Header: k.header(), Session: j.Session, Date: j.Date.String(), SummaryPath: path, Degraded: j.Degraded, Attempts: attempts}
	if lastErr != nil {
		ev.Error = lastErr.Error()
	}
	return k.save(*j, StepSummarised, func() { event.Publish(k.o.Bus, ev) })
}

// foldedFile lists the note dates already folded into Memory.md.
const foldedFile = "folded-notes.json"

// fold folds every note not yet folded, up to the session's date, into
// Memory.md, through the fold guard: a result that is empty, too large, or
// drops too many of the prior entries is refused, and Memory.md stays as it
// was. The write is a compare-and-swap on the text the fold read: when an
// operator edited Memory.md meanwhile, the notes are folded once more into
// the new text, and if that conflicts too the operator's file is kept. A
// degraded day, a refused or failed fold, and a conflict all leave the
// notes for the next fold. The model's result is journalled before
// Memory.md is written, so a crash between the two does not fold twice.
func (k *Keeper) fold(ctx context.Context, j *journal) error {
	if j.Folded {
		return nil
	}
	done := func(ev event.MemoryFolded) error {
		j.Folded = true
		ev.Header, ev.Session, ev.Date = k.header(), j.Session, j.Date.String()
		return k.save(*j, StepFolded, func() { event.Publish(k.o.Bus, ev) })
	}
	if j.Degraded {
		return done(event.MemoryFolded{Reason: "degraded summary: notes kept for the next fold"})
	}
	var folded []string
	if _, err := k.o.Folder.ReadJSON(foldedFile, &folded); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		current, err := k.o.Folder.ReadMemory()
		if err != nil {
			return err
		}
		if j.FoldResult != nil && current == *j.FoldResult {
			break // written before a crash
		}
		if j.FoldResult == nil || current != j.FoldBefore {
			notes, dates, err := k.pendingNotes(j.Date, folded)
			if err != nil {
				return err
			}
			if len(dates) == 0 {
				return done(event.MemoryFolded{Reason: "no notes to fold"})
			}
			result, _, err := k.retry(ctx, func() (string, error) { return k.o.Router.Fold(ctx, j.Date, current, notes) })
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				return done(event.MemoryFolded{Notes: dates, Reason: "fold failed, notes kept for the next fold: " + oneLine(err.Error())})
			}
			if err := k.o.Guard.Check(current, result); err != nil {
				return done(event.MemoryFolded{Notes: dates, Reason: oneLine(err.Error()) + "; Memory.md unchanged, notes kept for the next fold"})
			}
			j.FoldBefore, j.FoldResult, j.FoldNotes = current, &result, dates
			if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
				return err
			}
		}
		hist, err := k.o.Folder.ReplaceMemory(j.FoldBefore, *j.FoldResult)
		if errors.Is(err, memory.ErrMemoryChanged) {
			if attempt < 2 {
				continue // an operator edited Memory.md during the fold: fold once more on their text
			}
			return done(event.MemoryFolded{Notes: j.FoldNotes, Reason: "Memory.md was edited during the fold twice; the operator's file is kept, notes kept for the next fold"})
		}
		if err != nil {
			return err
		}
		ev := event.MemoryFolded{Folded: true, Notes: j.FoldNotes, HistoryPath: hist}
		ev.LinesAdded, ev.LinesRemoved = lineDiff(j.FoldBefore, *j.FoldResult)
		if err := k.o.Folder.WriteJSON(foldedFile, mergeDates(folded, j.FoldNotes)); err != nil {
			return err
		}
		return done(ev)
	}
	ev := event.MemoryFolded{Folded: true, Notes: j.FoldNotes}
	ev.LinesAdded, ev.LinesRemoved = lineDiff(j.FoldBefore, *j.FoldResult)
	if err := k.o.Folder.WriteJSON(foldedFile, mergeDates(folded, j.FoldNotes)); err != nil {
		return err
	}
	return done(ev)
}

// pendingNotes gathers the notes of every date up to date not yet folded.
func (k *Keeper) pendingNotes(date memory.Date, folded []string) (string, []string, error) {
	dates, err := k.o.Folder.NoteDates()
	if err != nil {
		return "", nil, err
	}
	seen := map[string]bool{}
	for _, d := range folded {
		seen[d] = true
	}
	var b strings.Builder
	var took []string
	for _, d := range dates {
		if date.Before(d) || seen[d.String()] {
			continue
		}
		text, ok, err := k.o.Folder.ReadNotes(d)
		if err != nil {
			return "", nil, err
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
		took = append(took, d.String())
	}
	return b.String(), took, nil
}

func (k *Keeper) curate(ctx context.Context, j *journal) error {
	if j.Curated {
		return nil
	}
	ev := event.SkillsReviewed{Header: k.header(), Session: j.Session, Date: j.Date.String(), Skills: []string{}, Changes: []string{}}
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
	j.Curated = true
	return k.save(*j, StepCurated, func() { event.Publish(k.o.Bus, ev) })
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

// save writes the journal, announces the step, then lets AfterStep see
// the durable step.
func (k *Keeper) save(j journal, step Step, announce func()) error {
	if err := k.o.Folder.WriteJSON(journalFile, j); err != nil {
		return err
	}
	announce()
	if k.o.AfterStep != nil {
		return k.o.AfterStep(step)
	}
	return nil
}

func (k *Keeper) announce(reason, previous, summaryPath string) {
	event.Publish(k.o.Bus, event.SessionStarted{
		Header: k.header(), Session: k.o.Router.SessionID(), Reason: reason, Previous: previous, SummaryPath: summaryPath,
	})
}

func (k *Keeper) header() event.Header {
	return event.Header{At: k.o.Clock.Now(), Desk: k.o.Desk}
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

func mergeDates(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range append(append([]string(nil), a...), b...) {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}
