package durable

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// FSSyncer is an FS that can make everything written to one file system
// durable at once (syncfs(2)), through dir, a folder of that file system
// opened with OpenFile: one call covers the writes of many files.
type FSSyncer interface {
	SyncFS(dir File) error
}

// SyncFS is syncfs(2) of the file system holding dir, which must be an
// *os.File.
func (OS) SyncFS(dir File) error {
	f, ok := dir.(*os.File)
	if !ok {
		return fmt.Errorf("syncfs %s: not a file of the operating system", dir.Name())
	}
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: f.Name(), Err: err}
	}
	return nil
}

// Group is an FS whose logs share their fsyncs (group commit): the synced
// Appends of many Logs opened through it that wait at the same instant
// wait for one flush. A lone writer flushes its own file at once (an
// fsync, as without a Group); writers that arrive while a flush runs join
// the next one, which one of them leads: a syncfs(2) of their file system
// when the base FS can (FSSyncer), covering all of them. A flush that
// fails fails every writer it covered; a writer whose bytes were written
// before a failed syncfs (which may have taken the error of its pages
// from it) is checked by an fsync of its own file instead. Everything
// else goes to the base FS unchanged. A Group must be the outermost FS
// (a Log finds it by its type), or an FS wrapping it must route its
// files' fsyncs through SyncFile. Close it when no Log writes any more.
type Group struct {
	FS

	mu     sync.Mutex
	busy   bool      // a flush is running
	queue  []*waiter // writers waiting for the next flush
	failed uint64    // how many syncfs flushes failed
	dirs   map[uint64]File
	closed bool
	// counts of GroupStats, read without mu
	syncs, fsyncs, syncfss atomic.Int64
}

// GroupStats counts what a Group did.
type GroupStats struct {
	// Syncs is how many synced writes waited for a flush.
	Syncs int64
	// Fsyncs is how many fsyncs of single files the flushes made.
	Fsyncs int64
	// SyncFSs is how many syncfs calls they made.
	SyncFSs int64
}

// NewGroup returns a Group over base (nil: the operating system's).
func NewGroup(base FS) *Group { return &Group{FS: Or(base), dirs: map[uint64]File{}} }

// Stats returns the counts so far.
func (g *Group) Stats() GroupStats {
	return GroupStats{Syncs: g.syncs.Load(), Fsyncs: g.fsyncs.Load(), SyncFSs: g.syncfss.Load()}
}

// Close closes the folders the Group keeps open for syncfs. Later
// flushes fsync each file.
func (g *Group) Close() error {
	g.mu.Lock()
	dirs := g.dirs
	g.dirs, g.closed = nil, true
	g.mu.Unlock()
	var errs []error
	for _, d := range dirs {
		errs = append(errs, d.Close())
	}
	return errors.Join(errs...)
}

// waiter is one synced write waiting for a flush.
type waiter struct {
	f     File
	dev   uint64
	dir   string // a folder of f's file system
	since uint64 // Group.failed when f's unsynced bytes began
	err   error
	wake  chan []*waiter // the batch to lead, or nil: err is set
}

// generation returns the count of failed syncfs flushes, which a Log
// notes when it writes bytes not yet synced.
func (g *Group) generation() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.failed
}

// Generation is what an FS wrapping the Group (whose files a Log cannot
// see are the Group's) notes before its first unsynced write to a file,
// and gives SyncFile when it makes that file durable.
func (g *Group) Generation() uint64 { return g.generation() }

// SyncFile makes f, a file opened through the Group, durable as a synced
// Append of a Log opened through it does: sharing the flush with the
// writers waiting at the same time. dir is f's folder; since is what
// Generation returned before f's first unsynced write.
func (g *Group) SyncFile(f File, dir string, since uint64) error { return g.sync(f, dir, since) }

// sync makes f durable, sharing the flush with the writers waiting at
// the same time. dir is f's folder; since is what generation returned
// before f's first unsynced write.
func (g *Group) sync(f File, dir string, since uint64) error {
	return g.syncOn(f, devOf(f), dir, since)
}

// syncOn is sync of f on device dev (devOf(f)), which the caller knows.
func (g *Group) syncOn(f File, dev uint64, dir string, since uint64) error {
	w := &waiter{f: f, dir: dir, since: since, dev: dev}
	g.syncs.Add(1)
	g.mu.Lock()
	if g.busy {
		w.wake = make(chan []*waiter, 1)
		g.queue = append(g.queue, w)
		g.mu.Unlock()
		batch := <-w.wake
		if batch == nil {
			return w.err
		}
		g.lead(batch)
		return w.err
	}
	g.busy = true
	g.mu.Unlock()
	g.lead([]*waiter{w})
	return w.err
}

// lead flushes batch (its first writer is the caller), answers the
// others, and hands the flush on to the writers that queued meanwhile.
func (g *Group) lead(batch []*waiter) {
	g.flush(batch)
	for _, w := range batch[1:] {
		w.wake <- nil
	}
	g.mu.Lock()
	next := g.queue
	g.queue = nil
	if len(next) == 0 {
		g.busy = false
	}
	g.mu.Unlock()
	if len(next) > 0 {
		next[0].wake <- next
	}
}

// flush makes every file of batch durable: one fsync for a lone writer,
// one syncfs per file system for the others.
func (g *Group) flush(batch []*waiter) {
	if len(batch) == 1 {
		g.fsync(batch[0])
		return
	}
	g.mu.Lock()
	failed := g.failed
	g.mu.Unlock()
	byDev := map[uint64][]*waiter{}
	for _, w := range batch {
		if w.since != failed || w.dev == 0 {
			g.fsync(w) // a failed syncfs may have taken its error: ask its file
			continue
		}
		byDev[w.dev] = append(byDev[w.dev], w)
	}
	for dev, ws := range byDev {
		if len(ws) == 1 {
			g.fsync(ws[0])
			continue
		}
		d, ok := g.dirOf(dev, ws[0].dir)
		if !ok {
			for _, w := range ws {
				g.fsync(w)
			}
			continue
		}
		err := g.FS.(FSSyncer).SyncFS(d)
		g.syncfss.Add(1)
		if err != nil {
			g.mu.Lock()
			g.failed++
			g.mu.Unlock()
			err = fmt.Errorf("flush %d files with %s: %w", len(ws), d.Name(), err)
		}
		for _, w := range ws {
			w.err = err
		}
	}
}

// fsync flushes w's own file.
func (g *Group) fsync(w *waiter) {
	w.err = w.f.Sync()
	g.fsyncs.Add(1)
}

// dirOf returns the folder kept open for syncfs of file system dev,
// opening dir the first time; ok is false when there is none to use (the
// base FS cannot syncfs, the Group is closed, dir cannot be opened).
func (g *Group) dirOf(dev uint64, dir string) (File, bool) {
	if _, ok := g.FS.(FSSyncer); !ok {
		return nil, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, false
	}
	if d := g.dirs[dev]; d != nil {
		return d, true
	}
	d, err := g.FS.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return nil, false
	}
	if devOf(d) != dev {
		_ = d.Close()
		return nil, false
	}
	g.dirs[dev] = d
	return d, true
}

// devOf returns the device of f's file system, or 0 when it cannot tell.
func devOf(f File) uint64 {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return uint64(st.Dev) + 1 // never 0
}
