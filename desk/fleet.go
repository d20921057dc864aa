package desk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
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
	// failed is set when the loop ended before the desk started (its
	// failure is in the set): its exit only closes its files.
	failed bool
	// fenced is set when the desk stopped because this host lost its
	// lease (clustered.go): its exit closes its files, and the host
	// stands by for it.
	fenced bool
}

// fleet is the daemon's desks. Only the daemon's main loop uses it, but
// for set, which the front end, the spool and the metrics read.
type fleet struct {
	clk clock.Clock
	bus *event.Bus
	log zerolog.Logger
	// fsys is the file layer the desks' folders and ledgers write through
	// (nil: the operating system's).
	fsys durable.FS
	// pool is the connections every desk's model clients share (nil:
	// each a client of its own).
	pool *router.Pool
	// acting is the MCP servers and the calls waiting for an operator of
	// every desk (nil: none, in tests that make a fleet of their own).
	acting *acting
	// space is the state folder's free-space probe (nil: none, in tests
	// that make a fleet of their own).
	space *SpaceProbe

	set *Set
	// runs is the running desks. mu guards its writes while startDesks'
	// workers start desks at once; the main loop reads it only when no
	// worker runs.
	mu    sync.Mutex
	runs  map[string]*deskRun
	exits chan *deskRun // each desk's goroutine sends its run when Run returns
	wg    sync.WaitGroup

	// workers is how many desks startDesks opens and starts at once, and
	// reading is the bytes of trigger ledgers they may be reading at once
	// (see startOne).
	workers int
	reading *budget
	// starting, if set (by tests), is called as a worker begins a desk's
	// start, and the func it returns once the desk has started or failed.
	starting func(name string) (done func())
}

func newFleet(clk clock.Clock, bus *event.Bus, log zerolog.Logger) *fleet {
	return &fleet{clk: clk, bus: bus, log: log, set: NewSet(), runs: map[string]*deskRun{}, exits: make(chan *deskRun),
		workers: startWorkers(), reading: newBudget(startReadBytes)}
}

// startWorkers is how many desks the daemon opens and starts at once: 8
// times the CPUs Go uses, and at least 16. A desk's start mostly waits
// (the fsyncs of its folder, its first session and state file; the reads
// of its files), so that many overlap their waits; the memory of the
// files they read is bounded apart, by startReadBytes.
func startWorkers() int { return max(16, 8*runtime.GOMAXPROCS(0)) }

// startReadBytes is how many bytes of trigger ledgers the desks starting
// at once may be reading (a desk's ledger is read whole as it opens, and
// its session's records after its mark as it starts): desks with big
// files start a few at a time, small ones as many as there are workers.
const startReadBytes = 16 << 20

// budget is a counting semaphore of bytes: a taker whose share is more
// than the whole waits until it has all of it.
type budget struct {
	mu   sync.Mutex
	cond *sync.Cond
	size int64
	left int64
}

func newBudget(size int64) *budget {
	b := &budget{size: size, left: size}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// take waits until n bytes of the budget (at least 1, at most all of it)
// are free, takes them, and returns how many it took, for give.
func (b *budget) take(n int64) int64 {
	n = min(max(n, 1), b.size)
	b.mu.Lock()
	for b.left < n {
		b.cond.Wait()
	}
	b.left -= n
	b.mu.Unlock()
	return n
}

// give returns n bytes taken.
func (b *budget) give(n int64) {
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// start starts desk dc under ctx: on its folder and ledger, which it opens
// unless a stopped run of the desk left them open (reuse). Wait for it with
// awaitStarted.
//
// A desk that fails to start, here or in awaitStarted, is a failed desk
// of the set (Set.Fail), announced as desk.failed; the other desks run.
func (f *fleet) start(ctx context.Context, cfg *config.Config, dc *config.Desk, reuse *deskRun) (*deskRun, error) {
	run, err := f.prepare(cfg, dc, reuse)
	if err != nil {
		f.failed(dc.Name, err)
		return nil, err
	}
	f.launch(ctx, run)
	return run, nil
}

// prepare opens desk dc's folder and ledger (unless reuse holds them) and
// assembles its loop, without running it. It touches nothing of the
// fleet's but the pool, so that several desks may be prepared at once.
func (f *fleet) prepare(cfg *config.Config, dc *config.Desk, reuse *deskRun) (*deskRun, error) {
	run := reuse
	if run == nil {
		// The desk's folder, and each of its folders, is made by the first
		// write into it, through the fleet's file layer (fsynced into its
		// parent then): an idle desk's start creates nothing.
		folder, err := memory.OpenFolderLazily(folderOf(cfg, dc.Name), dc.Name, f.clk.Now)
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
		folder.FS = f.fsys
		ledger, err := triggers.OpenLedgerOn(f.fsys, folder.Path(triggers.LedgerFile))
		if err != nil {
			return nil, fmt.Errorf("desk %s: %w", dc.Name, err)
		}
		run = &deskRun{name: dc.Name, folder: folder, ledger: ledger}
	}
	if err := f.mendStartFiles(run.folder); err != nil {
		if reuse == nil {
			_ = run.ledger.Close()
		}
		return nil, fmt.Errorf("desk %s: %w", dc.Name, err)
	}
	a, err := assemble(cfg, dc, run.folder, run.ledger, f.clk, f.bus, f.pool, f.acting, f.space, f.log)
	if err != nil {
		if reuse == nil {
			_ = run.ledger.Close()
		}
		if f.acting != nil {
			f.acting.forget(dc.Name) // a desk that does not run uses no server
		}
		return nil, err
	}
	run.assembled = a
	return run, nil
}

// launch runs the prepared run's desk under ctx, in a goroutine of its own.
func (f *fleet) launch(ctx context.Context, run *deskRun) {
	dctx, cancel := context.WithCancelCause(ctx)
	run.cancel = cancel
	run.exited, run.err, run.stopping, run.failed, run.fenced = make(chan struct{}), nil, false, false, false
	f.mu.Lock()
	f.runs[run.name] = run
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		run.err = run.desk.Run(dctx)
		close(run.exited)
		f.exits <- run
	}()
}

// folderOf returns a desk's folder in the state folder.
func folderOf(cfg *config.Config, name string) string {
	return filepath.Join(cfg.StateDir, "desks", name)
}

// awaitStarted waits until run's desk takes triggers, and puts it in the
// set. A desk whose Run ended first failed to start: its error is logged
// at once and returned. When ctx ends first, awaitStarted returns nil.
func (f *fleet) awaitStarted(ctx context.Context, run *deskRun) error {
	started, err := f.waitStarted(ctx, run)
	if err != nil {
		return err
	}
	if started {
		f.admit(run)
	}
	return nil
}

// waitStarted waits until run's desk takes triggers (true), or its Run
// ends first (its error: it failed to start, and is a failed desk of the
// set), or ctx ends (false, nil).
func (f *fleet) waitStarted(ctx context.Context, run *deskRun) (bool, error) {
	select {
	case <-run.desk.Started():
		return true, nil
	case <-run.exited:
		err := run.err
		if err == nil {
			err = fmt.Errorf("desk %s stopped as it started", run.name)
		}
		run.failed = true
		f.failed(run.name, err)
		return false, err
	case <-ctx.Done():
		return false, nil
	}
}

// admit puts run's started desk in the set, and warns if it is paused.
func (f *fleet) admit(run *deskRun) {
	f.set.Put(run.desk)
	if p := run.desk.Paused(); p != nil {
		f.log.Warn().Str("desk", run.name).Str("by", p.By).Time("paused_at", p.At).Str("reason", p.Reason).
			Msg("desk is paused: it runs no turn until deskd resume")
	}
}

// startOne is one desk's start by a worker of startDesks: it opens the
// desk, runs it under deskCtx, and waits until it has started (true) or
// failed (its error, a failed desk of the set, announced at once), or ctx
// ends (false, nil). The desk is not put in the set.
func (f *fleet) startOne(ctx, deskCtx context.Context, cfg *config.Config, dc *config.Desk) (*deskRun, bool, error) {
	// The ledger's size stands for what the desk reads as it starts: a
	// desk with a long ledger has a long session too.
	var size int64
	if fi, err := os.Stat(filepath.Join(folderOf(cfg, dc.Name), triggers.LedgerFile)); err == nil {
		size = fi.Size()
	}
	defer f.reading.give(f.reading.take(size))
	if f.starting != nil {
		defer f.starting(dc.Name)()
	}
	run, err := f.start(deskCtx, cfg, dc, nil)
	if err != nil {
		return nil, false, err
	}
	started, err := f.waitStarted(ctx, run)
	return run, started, err
}

// failed records that desk name failed to start with err: a failed desk of
// the set, with the file err names, announced as desk.failed (at error
// level: its log line is the failure's).
func (f *fleet) failed(name string, err error) {
	fl := Failure{File: failedFile(err), Reason: err.Error(), Since: f.clk.Now()}
	f.set.Fail(name, fl)
	event.Publish(f.bus, event.DeskFailed{Header: event.Header{At: fl.Since, Desk: name}, File: fl.File, Reason: fl.Reason})
}

// stop tells run's desk to stop after its running turn; cause is the
// reason desk.stopped gives.
func (f *fleet) stop(run *deskRun, cause error) {
	run.stopping = true
	if f.acting != nil {
		// Its calls waiting for an operator end now, denied: its turn
		// ends rather than waiting out the stop.
		f.acting.queue.DenyAll(run.name, approval.ByDeskd, "the desk is stopping: "+cause.Error())
	}
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

// close closes run's ledger and forgets it. Several may run at once
// (closeAll).
func (f *fleet) close(run *deskRun) {
	if err := run.ledger.Close(); err != nil {
		f.log.Error().Err(err).Str("desk", run.name).Msg("close the trigger ledger")
	}
	f.mu.Lock()
	mine := f.runs[run.name] == run
	if mine {
		delete(f.runs, run.name)
	}
	f.mu.Unlock()
	if mine && f.acting != nil {
		f.acting.forget(run.name)
	}
}

// stopWorkers is how many stopped desks the shutdown closes at once (their
// session files and ledgers): a close that has something to write waits
// for its fsyncs, so that many overlap their waits.
const stopWorkers = 64

// closer closes the desks whose loops have ended in the shutdown, up to
// stopWorkers at once.
type closer struct {
	runs chan *deskRun
	wg   sync.WaitGroup
}

// closeAll returns a closer of f's desks; wait for it to end.
func (f *fleet) closeAll() *closer {
	c := &closer{runs: make(chan *deskRun)}
	for range stopWorkers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for run := range c.runs {
				f.ended(run)
				f.close(run)
			}
		}()
	}
	return c
}

// add hands run to a worker; it waits while every worker is busy.
func (c *closer) add(run *deskRun) { c.runs <- run }

// wait waits until every run added is closed.
func (c *closer) wait() {
	close(c.runs)
	c.wg.Wait()
}

// running returns the desks of f now running.
func (f *fleet) running() []*deskRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*deskRun, 0, len(f.runs))
	for _, run := range f.runs {
		out = append(out, run)
	}
	return out
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
