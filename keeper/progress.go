package keeper

import (
	"sync"
	"time"

	"github.com/deskd/deskd/desk/event"
)

// Phase is the step a rollover is at while it runs (Progress.Phase).
type Phase string

// The phases of a rollover, in order.
const (
	PhaseSummarising Phase = "summarising"
	PhaseFolding     Phase = "folding"
	PhaseCurating    Phase = "curating"
)

// DefaultStillEvery is how often deskd reports a rollover step that is
// still running (Options.StillEvery).
const DefaultStillEvery = 10 * time.Second

// Progress is a report of a rollover step as it runs (Options.Progress):
// its start, every Options.StillEvery while it runs, and its end.
type Progress struct {
	Session string
	Date    string
	Phase   Phase
	// State is started, running (still at it) or done.
	State event.ProgressState
	// Since is when the step started; At is when this report was made.
	Since, At time.Time
}

// step runs one rollover step, reporting its start, its end and, every
// StillEvery while it runs, that it still runs.
func (k *Keeper) step(j *journal, phase Phase, f func() error) error {
	p := Progress{Session: j.Session, Date: j.Date.String(), Phase: phase, State: event.ProgressStarted, Since: k.o.Clock.Now()}
	p.At = p.Since
	k.report(p)
	stop := k.still(p)
	err := f()
	stop()
	p.State, p.At = event.ProgressDone, k.o.Clock.Now()
	k.report(p)
	return err
}

// still reports p as still running every StillEvery on deskd's clock until
// the returned stop is called.
func (k *Keeper) still(p Progress) (stop func()) {
	if k.o.StillEvery <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			t := k.o.Clock.NewTimer(k.o.StillEvery)
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C():
				q := p
				q.State, q.At = event.ProgressRunning, k.o.Clock.Now()
				k.report(q)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// report hands p to Options.Progress and announces it as rollover.progress.
func (k *Keeper) report(p Progress) {
	if k.o.Progress != nil {
		k.o.Progress(p)
	}
	event.Publish(k.o.Bus, event.RolloverProgress{
		Header: event.Header{At: p.At, Desk: k.o.Desk}, Session: p.Session, Date: p.Date, Phase: string(p.Phase),
		State: p.State, Since: p.Since, ElapsedMS: p.At.Sub(p.Since).Milliseconds(),
	})
}
