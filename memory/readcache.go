package memory

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MaxPromptFile caps what deskd reads of a file that goes into a prompt
// (Memory.md, a SKILL.md): far more than any context window holds. A
// larger file is refused (durable.ErrTooLarge), never read whole.
const MaxPromptFile = 4 << 20

// racyWindow is how recently a file may have been modified for what was
// read of it not to be kept. File times may come from a coarse kernel
// clock (before Linux 6.13's multigrain timestamps), so two writes of the
// same size within one tick can leave the same times; only a file that
// has not been modified for longer than this is told unchanged by its
// key (git's "racy clean" rule). It is measured on the operating
// system's clock, which stamps the files, not on deskd's clock. (A change
// time is in the key too; left out is only a write that also sets the
// modification time back, within one tick of the change time of the read
// before it, on a coarse clock.)
const racyWindow = 2 * time.Second

// fileKey tells one content of a file from another without reading it:
// a write changes its size or its modification and change times, a
// replacement (an atomic save) its inode. A folder's key changes when an
// entry is added, removed or renamed in it.
type fileKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

// keyOf returns fi's key; ok is false where the file system gives none.
func keyOf(fi fs.FileInfo) (k fileKey, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return k, false
	}
	return fileKey{
		dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}, true
}

// look is one stat of a file or folder that a prompt input was read
// from: its key, or that it was missing.
type look struct {
	path    string
	key     fileKey
	missing bool
	info    fs.FileInfo // nil when missing
}

// sameAs reports whether a new look at the same path saw what l saw.
func (l look) sameAs(n look) bool {
	return l.missing == n.missing && l.key == n.key
}

// racy reports whether what l saw was modified so recently that its key
// cannot vouch for its content (racyWindow): a later write within the
// same tick of a coarse clock could leave the same times.
func (l look) racy(now time.Time) bool {
	if l.missing {
		return false
	}
	return now.Sub(time.Unix(0, l.key.mtime)) <= racyWindow
}

// PromptStats counts the work a Folder did for the files every model call
// puts in its prompt (ReadMemory, Skills): what it read and listed, and
// the stats that told it that nothing had changed.
type PromptStats struct {
	// Reads is how many times Memory.md or a SKILL.md was read.
	Reads int64
	// Lists is how many times the skills folder was listed.
	Lists int64
	// Looks is how many stats of those files and folders were made.
	Looks int64
	// Kept is how many calls were answered from what was read before.
	Kept int64
}

// promptCache keeps what ReadMemory and Skills last read, for as long as
// deskd wrote neither (the Folder's generation, which every write of
// Memory.md or a skill through the Folder moves on) and a stat of each
// file and folder they were read from sees it unchanged (an operator's
// edit, a save by another program): an unchanged Memory.md costs one
// stat, unchanged skills one stat of the skills folder and two of each
// skill (its folder, its SKILL.md), and nothing is read, listed or
// hashed. It is safe for concurrent use; the zero value is ready.
//
// The stats are the check for operators' edits rather than an fsnotify
// watch: a watch needs one inotify watch per folder (the desk folder,
// skills/, each skill's), which 10,000 desks with a few skills each
// would take past the default fs.inotify.max_user_watches, and it is
// lost on overflow and silent on network file systems; a stat of an
// unchanged file costs about a microsecond, and a turn asks once.
type promptCache struct {
	mu     sync.Mutex
	memory cached[string]
	skills cached[[]Skill]

	gen                       atomic.Uint64
	reads, lists, looks, kept atomic.Int64
	// holds counts the holds under way (hold); epoch numbers them, each
	// hold a new one.
	holds atomic.Int64
	epoch atomic.Uint64
}

// cached is one value of a promptCache and what vouches for it.
type cached[T any] struct {
	ok    bool
	gen   uint64
	looks []look
	value T
	// checked is the hold's epoch in which the looks last saw the same.
	checked uint64
}

// hold makes the cache trust what its looks saw once in the hold, until
// release: during a hold each value is checked at its first call, and
// after that only deskd's writes (the generation) make it read again.
func (c *promptCache) hold() (release func()) {
	c.epoch.Add(1)
	c.holds.Add(1)
	var once sync.Once
	return func() { once.Do(func() { c.holds.Add(-1) }) }
}

// heldEpoch returns the epoch of the latest hold, or 0 when none is
// under way.
func (c *promptCache) heldEpoch() uint64 {
	if c.holds.Load() <= 0 {
		return 0
	}
	return c.epoch.Load()
}

// changed moves the generation on: what is cached is read again.
func (c *promptCache) changed() { c.gen.Add(1) }

// stats returns the counts so far.
func (c *promptCache) stats() PromptStats {
	return PromptStats{Reads: c.reads.Load(), Lists: c.lists.Load(), Looks: c.looks.Load(), Kept: c.kept.Load()}
}

// look stats path (following links). ok is false when the stat failed
// for another reason than a missing file, or gave no key: such a file
// cannot vouch for what is read of it.
func (c *promptCache) look(path string) (l look, ok bool) {
	c.looks.Add(1)
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return look{path: path, missing: true}, true
	}
	if err != nil {
		return look{path: path}, false
	}
	k, ok := keyOf(fi)
	return look{path: path, key: k, info: fi}, ok
}

// unchanged reports whether each of looks sees the same again.
func (c *promptCache) unchanged(looks []look) bool {
	for _, l := range looks {
		n, ok := c.look(l.path)
		if !ok || !l.sameAs(n) {
			return false
		}
	}
	return true
}

// get returns e's value if it was read at generation gen and its looks
// see the same again.
func getCached[T any](c *promptCache, e *cached[T], gen uint64) (T, bool) {
	epoch := c.heldEpoch()
	c.mu.Lock()
	ok, at, looks, v, checked := e.ok, e.gen, e.looks, e.value, e.checked
	c.mu.Unlock()
	var zero T
	if !ok || at != gen {
		return zero, false
	}
	if epoch == 0 || checked != epoch {
		if !c.unchanged(looks) {
			return zero, false
		}
		if epoch != 0 {
			c.mu.Lock()
			if e.ok && e.gen == gen {
				e.checked = epoch
			}
			c.mu.Unlock()
		}
	}
	c.kept.Add(1)
	return v, true
}

// setCached keeps v, read at generation gen from what looks saw, if
// nothing of it changed while it was read and none of it changed too
// recently for its key to vouch for it (racyWindow); otherwise it drops
// what e held.
func setCached[T any](c *promptCache, e *cached[T], gen uint64, looks []look, v T) {
	now := time.Now()
	keep := true
	for _, l := range looks {
		if l.racy(now) {
			keep = false
			break
		}
	}
	keep = keep && c.unchanged(looks)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !keep {
		*e = cached[T]{}
		return
	}
	*e = cached[T]{ok: true, gen: gen, looks: slices.Clip(looks), value: v, checked: c.heldEpoch()}
}
