package desk

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// deskRun is one desk of the running daemon: its folder and ledger, which
// outlive a restart of the desk, and the loop now running on them.
type deskRun struct {
	name   string
	folder *memory.Folder
	ledger *triggers.Ledger

	assembled
	cancel context.CancelCauseFunc
	exited chan struct{} // closed once Run has returned; err is set then
	err    error
	// stopping is set when the daemon stopped the desk (removed, restarting
	// or shutting down); an exit without it is a failure.
	stopping bool
}

// fleet is the daemon's desks. Only the daemon's main loop uses it, but
// for set, which the front end, the spool and the metrics read.
type fleet struct {
	clk clock.Clock
	bus *event.Bus
	log zerolog.Logger
	// pool is the connections every desk's model clients share (nil:
	// each a client of its own).
	pool *router.Pool

	set   *Set
	runs  map[string]*deskRun
	exits chan *deskRun // each desk's goroutine sends its run when Run returns
	wg    sync.WaitGroup
}

func newFleet(clk clock.Clock, bus *event.Bus, log zerolog.Logger) *fleet {
	return &fleet{clk: clk, bus: bus, log: log, set: NewSet(), runs: map[string]*deskRun{}, exits: make(chan *deskRun)}
}

// start starts desk dc under ctx: on its folder and ledger, which it opens
// unless a stopped run of the desk left them open (reuse). Wait for it with
// awaitStarted.
func (f *fleet) start(ctx context.Context, cfg *config.Config, dc *config.Desk, reuse *deskRun) (*deskRun, error) {
	run := reuse
	if run == nil {
		folder, err := memory.OpenFolder(folderOf(cfg, dc.Name), dc.Name, f.clk.Now)
		if err != nil {
			return nil, fmt.Errorf("desk %s: %w", dc.Name, err)
		}
		// Under the state-dir lock and before the desk runs, nothing else
		// writes here: temp files are what a crash left mid-write.
		stale, err := folder.RemoveStaleTemps()
		if err != nil {
			return nil, fmt.Errorf("desk %s: %w", dc.Name, err)
		}
		if len(stale) > 0 {
			f.log.Warn().Str("desk", dc.Name).Strs("removed", stale).Msg("removed temp files a crash left mid-write")
		}
		ledger, err := triggers.OpenLedger(folder.Path(triggers.LedgerFile))
		if err != nil {
			return nil, fmt.Errorf("desk %s: %w", dc.Name, err)
		}
		run = &deskRun{name: dc.Name, folder: folder, ledger: ledger}
	}
	a, err := assemble(cfg, dc, run.folder, run.ledger, f.clk, f.bus, f.pool)
	if err != nil {
		if reuse == nil {
			_ = run.ledger.Close()
		}
		return nil, err
	}
	dctx, cancel := context.WithCancelCause(ctx)
	run.assembled, run.cancel = a, cancel
	run.exited, run.err, run.stopping = make(chan struct{}), nil, false
	f.runs[dc.Name] = run
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		run.err = a.desk.Run(dctx)
		close(run.exited)
		f.exits <- run
	}()
	return run, nil
}

// folderOf returns a desk's folder in the state folder.
func folderOf(cfg *config.Config, name string) string {
	return filepath.Join(cfg.StateDir, "desks", name)
}

// awaitStarted waits until run's desk takes triggers, and puts it in the
// set. A desk whose Run ended first failed to start: its error is logged
// at once and returned. When ctx ends first, awaitStarted returns nil.
func (f *fleet) awaitStarted(ctx context.Context, run *deskRun) error {
	select {
	case <-run.desk.Started():
		f.set.Put(run.desk)
		if p := run.desk.Paused(); p != nil {
			f.log.Warn().Str("desk", run.name).Str("by", p.By).Time("paused_at", p.At).Str("reason", p.Reason).
				Msg("desk is paused: it runs no turn until deskd resume")
		}
		return nil
	case <-run.exited:
		err := run.err
		if err == nil {
			err = fmt.Errorf("desk %s stopped as it started", run.name)
		}
		f.log.Error().Err(err).Str("desk", run.name).Msg("desk failed to start")
		return err
	case <-ctx.Done():
		return nil
	}
}

// stop tells run's desk to stop after its running turn; cause is the
// reason desk.stopped gives.
func (f *fleet) stop(run *deskRun, cause error) {
	run.stopping = true
	run.cancel(cause)
}

// stopAll stops every desk. They stay in the set, so that the front end
// can still tell their status and their triggers' while they stop.
func (f *fleet) stopAll(cause error) {
	for _, run := range f.runs {
		f.stop(run, cause)
	}
}

// ended closes what the stopped loop of run held (its session file); the
// folder and the ledger stay open for a restart, see close.
func (f *fleet) ended(run *deskRun) {
	if err := run.router.Close(); err != nil {
		f.log.Error().Err(err).Str("desk", run.name).Msg("close session")
	}
}

// close closes run's ledger and forgets it.
func (f *fleet) close(run *deskRun) {
	if err := run.ledger.Close(); err != nil {
		f.log.Error().Err(err).Str("desk", run.name).Msg("close the trigger ledger")
	}
	if f.runs[run.name] == run {
		delete(f.runs, run.name)
	}
}

// sortedNames returns the keys of m, sorted.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
