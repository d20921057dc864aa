package memory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// LockFile is the name of the state-dir lock file.
const LockFile = "deskd.lock"

// Lock is the exclusive lock one deskd holds on its state dir.
type Lock struct {
	mu   sync.Mutex
	fl   *flock.Flock
	path string
}

// LockedError is the error of LockStateDir when another process (or another
// Lock in this one) holds the state dir.
type LockedError struct {
	Dir    string // the state dir
	Path   string // its lock file
	Holder string // what the holder wrote in the lock file, or "unknown holder"
}

// Error returns "state dir <dir> is in use by another deskd (<holder>)".
func (e *LockedError) Error() string {
	dir := e.Dir
	if dir == "" {
		dir = filepath.Dir(e.Path)
	}
	return fmt.Sprintf("state dir %s is in use by another deskd (%s)", dir, e.Holder)
}

// LockStateDir takes an exclusive, non-blocking flock on <dir>/deskd.lock,
// creating dir as needed, so that one deskd runs per state dir. Holding the
// lock, it writes "pid <pid> on <hostname> since <now, RFC3339>" into the
// file. When the lock is held elsewhere, the error is a *LockedError whose
// Holder is the file's content. The lock file is never deleted (deleting
// it would let two processes hold "the" lock); the kernel releases the
// lock if the process dies.
func LockStateDir(dir string, now time.Time) (*Lock, error) {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("lock state dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	fl := flock.New(path, flock.SetPermissions(filePerm))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock state dir %s: lock %s: %w", dir, path, err)
	}
	if !ok {
		holder := "unknown holder"
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
			holder = strings.TrimSpace(string(b))
		}
		return nil, &LockedError{Dir: dir, Path: path, Holder: holder}
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown host"
	}
	holder := fmt.Sprintf("pid %d on %s since %s\n", os.Getpid(), host, now.Format(time.RFC3339))
	if err := writeHolder(path, holder); err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("lock state dir %s: write holder to %s: %w", dir, path, err)
	}
	return &Lock{fl: fl, path: path}, nil
}

// writeHolder replaces the content of the (locked) lock file with holder.
// It truncates through a second descriptor, which leaves the flock alone.
func writeHolder(path, holder string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(holder), 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Path returns the lock file's path.
func (l *Lock) Path() string { return l.path }

// Release empties the lock file's holder line (while still holding the
// lock) and releases the lock. The file stays. Releasing again does nothing.
func (l *Lock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fl == nil {
		return nil
	}
	var errs []error
	if err := os.Truncate(l.path, 0); err != nil {
		errs = append(errs, err)
	}
	if err := l.fl.Unlock(); err != nil {
		errs = append(errs, err)
	}
	l.fl = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("release lock %s: %w", l.path, err)
	}
	return nil
}
