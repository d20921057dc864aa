package triggers

import (
	"context"
	"fmt"
	"time"

	"github.com/deskd/deskd/desk/clock"
)

// Entry is one of a desk's schedules.
type Entry struct {
	Name string
	Spec *Spec
	Text string
}

// Scheduler fires a desk's schedules on deskd's clock. It uses robfig/cron
// only to parse expressions and compute the next slot; it never runs cron's
// own runner, which reads the wall clock.
type Scheduler struct {
	// Desk is the desk the triggers are for.
	Desk string
	// Clock is deskd's clock.
	Clock clock.Clock
	// Entries are the schedules.
	Entries []Entry
	// Fire receives one trigger per slot.
	Fire func(Trigger)
	// Missed is told of each slot that passed without firing, because the
	// clock jumped past more than one slot of a schedule; may be nil.
	Missed func(name string, slot time.Time)
}

// Next returns the earliest upcoming slot after now and its schedule's
// name; ok is false when there are no schedules.
func (s *Scheduler) Next(now time.Time) (name string, at time.Time, ok bool) {
	for _, e := range s.Entries {
		n := e.Spec.Next(now)
		if !n.IsZero() && (!ok || n.Before(at)) {
			name, at, ok = e.Name, n, true
		}
	}
	return name, at, ok
}

// Run fires slots until ctx is done. Slots are counted from the time Run
// starts; when the clock passes several slots of one schedule at once, the
// latest fires and the earlier ones are reported to Missed.
func (s *Scheduler) Run(ctx context.Context) {
	last := s.Clock.Now()
	for {
		_, at, ok := s.Next(last)
		if !ok {
			<-ctx.Done()
			return
		}
		t := s.Clock.NewTimer(at.Sub(s.Clock.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		now := s.Clock.Now()
		for _, e := range s.Entries {
			s.fireDue(e, last, now)
		}
		last = now
	}
}

// fireDue fires the latest slot of e in (after, now] and reports the others.
func (s *Scheduler) fireDue(e Entry, after, now time.Time) {
	var due []time.Time
	for slot := e.Spec.Next(after); !slot.IsZero() && !slot.After(now); slot = e.Spec.Next(slot) {
		due = append(due, slot)
		if len(due) > 1000 { // a clock jump of years: report no more
			break
		}
	}
	if len(due) == 0 {
		return
	}
	if s.Missed != nil {
		for _, slot := range due[:len(due)-1] {
			s.Missed(e.Name, slot)
		}
	}
	slot := due[len(due)-1]
	s.Fire(Trigger{
		ID:     fmt.Sprintf("%s@%s", e.Name, slot.UTC().Format(time.RFC3339)),
		Desk:   s.Desk,
		Kind:   Schedule,
		Text:   e.Text,
		At:     now,
		Source: "schedule:" + e.Name,
	})
}
