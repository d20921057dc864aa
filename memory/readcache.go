package memory

import (
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/deskd/deskd/memory/durable"
)

// MaxPromptFile caps what deskd reads of a file that goes into a prompt
// (Memory.md, a SKILL.md): far more than any context window holds. A
// larger file is refused (durable.ErrTooLarge), never read whole.
const MaxPromptFile = 4 << 20

// racyWindow is how recently a file may have been modified for its
// content not to be kept. File times may come from a coarse kernel clock
// (before Linux 6.13's multigrain timestamps), so two writes of the same
// size within one tick can leave the same times; only a file that has not
// been modified for longer than this is told unchanged by its key (git's
// "racy clean" rule). It is measured on the operating system's clock,
// which stamps the files, not on deskd's clock. (A change time is in the
// key too; left out is only a write that also sets the modification time
// back, within one tick of the change time of the read before it, on a
// coarse clock.)
const racyWindow = 2 * time.Second

// fileKey tells one content of a file from another without reading it:
// a write changes its size or its modification and change times, a
// replacement (an atomic save) its inode.
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

// readCache keeps the content last read of each file, by path, for as
// long as the file's key stays the same, so that the files every model
// call puts in its prompt (Memory.md, the skills) are read again only
// when they change: a turn costs a stat of each instead of a read. Reads
// go through durable.ReadRegular: anything but a regular file (a FIFO, a
// device) is refused at once instead of waited on, and so is a file over
// MaxPromptFile. It is safe for concurrent use; the zero value is ready.
type readCache struct {
	mu sync.Mutex
	m  map[string]cachedRead
}

type cachedRead struct {
	key  fileKey
	text string
}

// read returns the content of the file at path (following links), from
// the cache while the file is unchanged, and what a stat of it said. A
// missing file is an error that satisfies errors.Is(err, fs.ErrNotExist).
func (c *readCache) read(path string) (string, fs.FileInfo, error) {
	before, err := os.Stat(path)
	if err != nil {
		c.forget(path)
		return "", nil, err
	}
	key, keyed := keyOf(before)
	if keyed {
		c.mu.Lock()
		got, ok := c.m[path]
		c.mu.Unlock()
		if ok && got.key == key {
			return got.text, before, nil
		}
	}
	data, err := durable.ReadRegular(path, MaxPromptFile, durable.Follow)
	if err != nil {
		c.forget(path)
		return "", nil, err
	}
	text := string(data)
	// Kept only if nothing changed while it was read, and the file has
	// been still for long enough that its times tell a change.
	after, err := os.Stat(path)
	if err == nil && keyed {
		if k, ok := keyOf(after); ok && k == key && time.Since(after.ModTime()) > racyWindow {
			c.mu.Lock()
			if c.m == nil {
				c.m = map[string]cachedRead{}
			}
			c.m[path] = cachedRead{key: key, text: text}
			c.mu.Unlock()
			return text, after, nil
		}
	}
	c.forget(path)
	if err == nil {
		return text, after, nil
	}
	return text, before, nil
}

// forget drops what the cache holds of path.
func (c *readCache) forget(path string) {
	c.mu.Lock()
	delete(c.m, path)
	c.mu.Unlock()
}
