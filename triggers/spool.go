package triggers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/memory/durable"
)

// Names of the spool's folders inside a desk's inbox.
const (
	ProcessedDir = "processed"
	RejectedDir  = "rejected"
	// ReasonSuffix ends the file beside a rejected one that says why.
	ReasonSuffix = ".reason"
)

// Spool defaults.
const (
	// DefaultRescan is how often the spool looks again at files it could
	// not take yet (a full queue, a file still being written).
	DefaultRescan = 5 * time.Second
	// DefaultIncompleteAfter is how long a file may stay incomplete JSON
	// before it is rejected.
	DefaultIncompleteAfter = time.Minute
)

// Spool takes trigger files from the inbox folders of desks,
// <Dir>/<desk>/*.json, for feeds that write files: each file holds the
// body of a POST /v1/desks/{desk}/triggers. A feed writes the file under
// another name (a dot name, or one not ending in .json) and renames it in
// when it is complete. A file that is taken moves to processed/; one that
// is refused moves to rejected/, with a .reason file beside it saying why.
//
// Only regular files are taken, of at most MaxBody bytes. Anything else
// with a trigger file's name (a FIFO, a device, a socket, a folder, a
// symbolic link) is refused the same way, whether it was there at the
// start or arrived later: it is opened without blocking and without
// following a link, and checked before a byte is read, so it can neither
// hold the spool up nor make it read a file outside the inbox; a link's
// target is never read or named. A file's size is checked before it is
// read, and the read stops after MaxBody+1 bytes.
//
// Nothing in an inbox is lost across a restart: a file leaves the inbox
// only after Submit has recorded its trigger durably, and Open takes the
// files already there. A file without an id gets one made
// from its name and content, so a file taken again after a crash (before
// it was moved) is recognised by the desk's ledger and queued once.
//
// One fsnotify watcher watches every inbox (not the subfolders).
type Spool struct {
	// Dir is the inbox root, <state_dir>/inbox.
	Dir string
	// Desks are the desks whose inboxes are watched; each inbox is made.
	Desks []string
	// Clock is deskd's clock.
	Clock clock.Clock
	// Submit records and queues a file's trigger. An error wrapping
	// ErrQueueFull leaves the file in the inbox for a later try; any other
	// error rejects it with the error as the reason.
	Submit func(desk, file string, r Request) error
	// Taken, if set, is told of each file moved to processed/.
	Taken func(desk, file string)
	// Rejected, if set, is told of each rejected file.
	Rejected func(desk, file, reason string)
	// Failed, if set, is told of errors that leave a file where it is
	// (it cannot be read or moved).
	Failed func(desk, file string, err error)
	// Rescan and IncompleteAfter default to DefaultRescan and
	// DefaultIncompleteAfter.
	Rescan          time.Duration
	IncompleteAfter time.Duration

	w          *fsnotify.Watcher
	incomplete map[string]time.Time // path -> when first seen incomplete
}

// Open makes the inbox folders (each desk's; its processed/ and rejected/
// are made by the first file moved there), starts watching them, and
// takes the files already there. Run takes the files that arrive after.
func (s *Spool) Open() error {
	if s.Rescan <= 0 {
		s.Rescan = DefaultRescan
	}
	if s.IncompleteAfter <= 0 {
		s.IncompleteAfter = DefaultIncompleteAfter
	}
	s.incomplete = map[string]time.Time{}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("spool %s: %w", s.Dir, err)
	}
	for _, d := range s.Desks {
		dir := filepath.Join(s.Dir, d)
		// processed/ and rejected/ are made by the first file moved
		// into each (freeName): an idle desk's start makes one folder.
		if err := os.MkdirAll(dir, 0o750); err != nil {
			_ = w.Close()
			return fmt.Errorf("spool %s: %w", dir, err)
		}
		if err := w.Add(dir); err != nil {
			_ = w.Close()
			return fmt.Errorf("spool: watch %s: %w", dir, err)
		}
	}
	s.w = w
	s.scan()
	return nil
}

// Run takes each file that arrives, until ctx is done; it closes the
// watcher when it returns.
func (s *Spool) Run(ctx context.Context) {
	defer s.w.Close()
	for {
		t := s.Clock.NewTimer(s.Rescan)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case ev, ok := <-s.w.Events:
			t.Stop()
			if !ok {
				return
			}
			if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Write) {
				if desk, ok := s.deskOf(ev.Name); ok && wanted(filepath.Base(ev.Name)) {
					s.take(desk, ev.Name)
				}
			}
		case _, ok := <-s.w.Errors:
			t.Stop()
			if !ok {
				return
			}
			s.scan() // an overflow: what changed is unknown, look at everything
		case <-t.C():
			s.scan()
		}
	}
}

// scan takes every file waiting in the inboxes now; Open does it, and Run
// on a watcher overflow and every Rescan.
func (s *Spool) scan() {
	for _, d := range s.Desks {
		dir := filepath.Join(s.Dir, d)
		entries, err := os.ReadDir(dir)
		if err != nil {
			s.failed(d, dir, err)
			continue
		}
		type file struct {
			name string
			mod  time.Time
		}
		var files []file
		for _, e := range entries {
			// Not only regular files: take refuses anything else (a
			// FIFO, a link) with a reason, as it does live.
			if !wanted(e.Name()) {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue
			}
			files = append(files, file{e.Name(), fi.ModTime()})
		}
		slices.SortFunc(files, func(a, b file) int {
			if c := a.mod.Compare(b.mod); c != 0 {
				return c
			}
			return strings.Compare(a.name, b.name)
		})
		for _, f := range files {
			s.take(d, filepath.Join(dir, f.name))
		}
	}
}

// wanted reports whether a name in an inbox is a trigger file: *.json and
// not hidden (feeds write under a dot name and rename in).
func wanted(name string) bool {
	return strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".")
}

// deskOf returns the desk whose inbox holds path.
func (s *Spool) deskOf(path string) (string, bool) {
	dir, _ := filepath.Split(path)
	d := filepath.Base(filepath.Clean(dir))
	if filepath.Clean(filepath.Join(s.Dir, d)) != filepath.Clean(dir) || !slices.Contains(s.Desks, d) {
		return "", false
	}
	return d, true
}

// take submits one file and moves it out of the inbox.
func (s *Spool) take(desk, path string) {
	name := filepath.Base(path)
	data, err := durable.ReadRegular(path, MaxBody, durable.NoFollow)
	var refused *durable.RefusedError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		delete(s.incomplete, path)
		return // taken already (one event of several)
	case errors.As(err, &refused):
		delete(s.incomplete, path)
		s.reject(desk, path, refusal(refused))
		return
	case err != nil:
		s.failed(desk, name, err)
		return
	}
	r, err := DecodeFeedRequest(data)
	if errors.Is(err, ErrIncomplete) {
		first, seen := s.incomplete[path]
		if !seen {
			s.incomplete[path] = s.Clock.Now()
			return
		}
		if s.Clock.Now().Sub(first) < s.IncompleteAfter {
			return
		}
		err = fmt.Errorf("%w, and stayed so for %s (write the file under another name, then rename it in)", err, s.IncompleteAfter)
	}
	delete(s.incomplete, path)
	if err != nil {
		s.reject(desk, path, err.Error())
		return
	}
	if r.ID == "" {
		sum := sha256.Sum256(append([]byte(name+"\x00"), data...))
		r.ID = "inbox-" + strings.TrimSuffix(name, ".json") + "-" + hex.EncodeToString(sum[:6])
		if CheckID(r.ID) != nil || len(r.ID) > MaxIDLen {
			r.ID = "inbox-" + hex.EncodeToString(sum[:12])
		}
	}
	if r.Source == "" {
		r.Source = "inbox:" + name
	}
	if err := s.Submit(desk, name, r); errors.Is(err, ErrQueueFull) {
		return // stays in the inbox; the next scan tries again
	} else if err != nil {
		s.reject(desk, path, err.Error())
		return
	}
	if _, err := moveInto(path, filepath.Join(filepath.Dir(path), ProcessedDir)); err != nil {
		s.failed(desk, name, err)
		return
	}
	if s.Taken != nil {
		s.Taken(desk, name)
	}
}

// refusal is the reject reason for a file ReadRegular refused. It quotes
// nothing of the file, nor of what a link points to.
func refusal(e *durable.RefusedError) string {
	if errors.Is(e, durable.ErrTooLarge) {
		return fmt.Sprintf("the file is larger than %d bytes", MaxBody)
	}
	return "the file is " + e.Reason + ": the inbox takes regular files only, and never follows a link"
}

// reject moves the file to rejected/ with a .reason file beside it.
func (s *Spool) reject(desk, path, reason string) {
	name := filepath.Base(path)
	dir := filepath.Join(filepath.Dir(path), RejectedDir)
	dest, err := freeName(dir, name)
	if err == nil {
		err = durable.WriteFile(nil, dest+ReasonSuffix, []byte(reason+"\n"), 0o640)
	}
	if err == nil {
		err = os.Rename(path, dest)
	}
	if err == nil {
		err = syncDirs(filepath.Dir(path), dir)
	}
	if err != nil {
		s.failed(desk, name, err)
		return
	}
	if s.Rejected != nil {
		s.Rejected(desk, name, reason)
	}
}

func (s *Spool) failed(desk, file string, err error) {
	if s.Failed != nil {
		s.Failed(desk, file, err)
	}
}

// moveInto renames path into dir under a name not taken there, and makes
// both folders durable.
func moveInto(path, dir string) (string, error) {
	dest, err := freeName(dir, filepath.Base(path))
	if err != nil {
		return "", err
	}
	if err := os.Rename(path, dest); err != nil {
		return "", err
	}
	return dest, syncDirs(filepath.Dir(path), dir)
}

// freeName returns dir/name, or dir/<stem>-2.json, -3, ... when taken.
func freeName(dir, name string) (string, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	stem, ext := strings.TrimSuffix(name, filepath.Ext(name)), filepath.Ext(name)
	for i := 1; i < 100000; i++ {
		n := name
		if i > 1 {
			n = stem + "-" + strconv.Itoa(i) + ext
		}
		p := filepath.Join(dir, n)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no free name for %s in %s", name, dir)
}

func syncDirs(dirs ...string) error {
	for _, d := range dirs {
		if err := durable.SyncDir(nil, d); err != nil {
			return err
		}
	}
	return nil
}
