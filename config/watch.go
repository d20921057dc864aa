package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/deskd/deskd/desk/clock"
)

// DefaultDebounce is how long a Watcher waits after the last change of a
// burst before it reports the burst. An editor's save (a temporary file
// renamed into place, or a truncation and a write in chunks) is a burst of
// events microseconds apart, so 50 ms still makes it one reload of the
// whole file while an edit shows in the status well within 100 ms. A
// writer that pauses longer mid-file may get a reload of half a file:
// Load refuses it if it does not parse (the last good config keeps
// running), and the next write's event reloads the whole file.
const DefaultDebounce = 50 * time.Millisecond

// maxEmptyWaits bounds how many more debounces a Watcher waits, at the
// end of a burst, while a config file the burst touched is empty: a save
// that truncated the file and has not written it yet. Past them (6 x 50
// ms: the 300 ms deskd used to wait for every burst) the burst is reported
// anyway, so that a file emptied on purpose is still reloaded (and
// refused).
const maxEmptyWaits = 6

// Watcher reports changes to the config files: the main file, the desk
// files in the desks folder, and the files of any other folder of YAML
// files it is given (calendars_dir). It never loads the config; it says
// "something changed", once per burst of changes, and the caller reloads.
//
// It watches directories, never files (a watch on a file is lost at the
// first atomic save), with one fsnotify watcher, and keeps only the events
// that concern the config: the main file's name in its directory, YAML
// files (<name>.yaml, and .yml so that a misnamed file is reported; not
// hidden or editor temporary files) in the folders, and the folders
// themselves. Chmod events are ignored; a lost-events overflow counts as a
// change.
//
// Symlinks are followed. When the main file, a folder or a file in one is a
// symlink, or its path goes through one (a Kubernetes-style
// ..data swap, a config folder swapped by re-pointing a link), the
// directories that hold the links and the directories of their targets are
// watched too. Every event re-resolves the links: a link that now points
// elsewhere is a change, and the watches move to the new targets. A file
// removed and created again, or a folder removed and created again, is seen
// as long as a watched directory still holds it.
//
// Each relevant event (re)starts the debounce timer on the injected clock;
// when it fires, one notification is delivered on Changes. Notifications
// coalesce: the channel holds at most one. When the timer fires while a
// config file of the burst is empty (truncated by a save that has not
// written it yet), the Watcher waits one more debounce, up to
// maxEmptyWaits times, so that the reload reads the whole file.
//
// A desk's instructions_file is not watched: an edit of it alone is picked
// up by the next reload (SIGHUP, or any change to the desk file).
type Watcher struct {
	mainPath string
	folders  []string // the desks folder, then the others
	clk      clock.Clock
	debounce time.Duration

	fsw     *fsnotify.Watcher
	changes chan struct{}

	closeOnce sync.Once
	closeErr  error

	// Owned by Run once it starts (NewWatcher sets them first).
	state  resolution
	timer  clock.Timer
	expiry <-chan time.Time
	// touched are the config files the events of the burst under way
	// named; emptyWaits counts the debounces it waited for one of them to
	// be written.
	touched    map[string]bool
	emptyWaits int

	// seen, if set, is called after each fsnotify event has been handled,
	// with whether it counted as a change. Tests use it to know that the
	// watcher has caught up with the file system.
	seen func(ev fsnotify.Event, relevant bool)
}

// NewWatcher watches the main file at mainPath, the desk files in
// desksDir and the YAML files of moreDirs (such as calendars_dir); paths
// are made absolute. A debounce of 0 or less means DefaultDebounce; clk
// times the debounce. The main file's directory must exist; a folder may
// be missing and is picked up when it appears in a watched directory (its
// parent is watched too). Call Run to start delivering changes, and Close
// (or end Run's context) to stop.
func NewWatcher(mainPath, desksDir string, clk clock.Clock, debounce time.Duration, moreDirs ...string) (*Watcher, error) {
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	if clk == nil {
		return nil, errors.New("config watch: no clock")
	}
	mainAbs, err := filepath.Abs(mainPath)
	if err != nil {
		return nil, fmt.Errorf("config watch: %w", err)
	}
	var folders []string
	for _, d := range append([]string{desksDir}, moreDirs...) {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("config watch: %w", err)
		}
		folders = append(folders, abs)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("config watch: %w", err)
	}
	w := &Watcher{
		mainPath: mainAbs,
		folders:  folders,
		clk:      clk,
		debounce: debounce,
		fsw:      fsw,
		changes:  make(chan struct{}, 1),
	}
	w.state = w.resolve()
	mainDir := filepath.Dir(w.state.main)
	if err := fsw.Add(mainDir); err != nil {
		fsw.Close()
		return nil, fmt.Errorf("config watch: %s: %w", mainDir, err)
	}
	w.sync()
	return w, nil
}

// Changes delivers one value after each burst of changes to the config
// files. It holds at most one undelivered value: a slow reader gets one
// notification for everything that happened since it last read.
func (w *Watcher) Changes() <-chan struct{} { return w.changes }

// Watching returns the directories being watched, sorted.
func (w *Watcher) Watching() []string {
	l := w.fsw.WatchList()
	slices.Sort(l)
	return l
}

// Run handles file system events until ctx is done or the Watcher is
// closed, and then closes it; call it once. It returns nil in both cases.
// Errors of the file system watcher (lost events, a failed read) count as
// a change and do not stop it.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.Close()
	defer func() {
		if w.timer != nil {
			w.timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return nil
			}
			relevant := w.handle(ev)
			if w.seen != nil {
				w.seen(ev, relevant)
			}
		case _, ok := <-w.fsw.Errors:
			if !ok {
				return nil
			}
			// ErrEventOverflow means events were lost: anything may have
			// changed. Any other error may hide a change too. A reload that
			// finds nothing new costs little.
			w.state = w.resolve()
			w.sync()
			w.arm()
		case <-w.expiry:
			w.timer, w.expiry = nil, nil
			if w.emptyWaits < maxEmptyWaits && w.touchedEmpty() {
				w.emptyWaits++
				w.arm()
				continue
			}
			w.touched, w.emptyWaits = nil, 0
			select {
			case w.changes <- struct{}{}:
			default: // one is pending already
			}
		}
	}
}

// Close stops watching. Run returns once it notices. Close is idempotent.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() { w.closeErr = w.fsw.Close() })
	return w.closeErr
}

// handle re-resolves the watched paths after ev, moves the watches, and
// arms the debounce if ev concerns the config. It reports whether it did.
func (w *Watcher) handle(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	old := w.state
	w.state = w.resolve()
	w.sync()
	name := filepath.Clean(ev.Name)
	relevant := !w.state.equal(old) || old.concerns(name) || w.state.concerns(name)
	if relevant {
		if w.touched == nil {
			w.touched = map[string]bool{}
		}
		w.touched[name] = true
		w.arm()
	}
	return relevant
}

// touchedEmpty reports whether a config file the burst touched is now an
// empty regular file (symlinks followed). A file that is gone is not: its
// removal is the change.
func (w *Watcher) touchedEmpty() bool {
	for p := range w.touched {
		fi, err := os.Stat(p) // a folder is not a regular file
		if err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			return true
		}
	}
	return false
}

// arm (re)starts the debounce timer.
func (w *Watcher) arm() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.timer = w.clk.NewTimer(w.debounce)
	w.expiry = w.timer.C()
}

// sync adds a watch on every directory the current resolution needs and
// removes the watches it no longer needs. A directory that cannot be
// watched (it does not exist now) is skipped; it is tried again after the
// next event.
func (w *Watcher) sync() {
	want := w.state.dirs
	have := w.fsw.WatchList()
	for _, d := range have {
		if !slices.Contains(want, d) {
			_ = w.fsw.Remove(d) // may be gone already
		}
	}
	for _, d := range want {
		if !slices.Contains(have, d) {
			_ = w.fsw.Add(d)
		}
	}
}

// resolution is where the config's paths lead, with every symlink
// followed: the file names that matter and the directories to watch.
type resolution struct {
	main    string            // the main file, resolved
	folders []string          // the folders, resolved, in Watcher.folders' order
	files   map[string]string // a YAML file in a (resolved) folder -> where it resolves to
	dirs    []string          // the directories to watch, sorted, no duplicates
}

func (w *Watcher) resolve() resolution {
	var r resolution
	var links, dirs []string
	r.main, links = resolveLinks(w.mainPath)
	dirs = append(dirs, filepath.Dir(r.main))
	dirs = append(dirs, dirsOf(links)...)

	r.files = map[string]string{}
	for _, f := range w.folders {
		folder, links := resolveLinks(f)
		r.folders = append(r.folders, folder)
		dirs = append(dirs, folder, filepath.Dir(folder))
		dirs = append(dirs, dirsOf(links)...)
		entries, _ := os.ReadDir(folder) // a missing folder has no files
		for _, e := range entries {
			if !isYAMLName(e.Name()) {
				continue
			}
			p := filepath.Join(folder, e.Name())
			if e.Type()&fs.ModeSymlink == 0 {
				r.files[p] = p
				continue
			}
			target, links := resolveLinks(p)
			r.files[p] = target
			dirs = append(dirs, filepath.Dir(target))
			dirs = append(dirs, dirsOf(links)...)
		}
	}
	slices.Sort(dirs)
	r.dirs = slices.Compact(dirs)
	return r
}

// equal reports whether r and o lead to the same files.
func (r resolution) equal(o resolution) bool {
	if r.main != o.main || !slices.Equal(r.folders, o.folders) || len(r.files) != len(o.files) {
		return false
	}
	for k, v := range r.files {
		if ov, ok := o.files[k]; !ok || ov != v {
			return false
		}
	}
	return true
}

// concerns reports whether a change at path p may change the config: p is
// where the main file, a folder or a file in one resolves to. (A link
// re-pointed, or a file added or removed, changes the resolution itself.)
func (r resolution) concerns(p string) bool {
	if p == r.main || slices.Contains(r.folders, p) {
		return true
	}
	for _, f := range r.files {
		if p == f {
			return true
		}
	}
	return false
}

// isYAMLName reports whether name, in a watched folder, is a config file
// (or a misnamed .yml one, which loading reports).
func isYAMLName(name string) bool {
	return !isIgnored(name) && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml"))
}

func dirsOf(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Dir(p)
	}
	return out
}

// maxLinks bounds the symlinks followed for one path, as the kernel does.
const maxLinks = 40

// resolveLinks follows every symlink in the absolute path p, component by
// component, and returns the resolved path and the (resolved) path of each
// link it followed. Components that do not exist are kept as written, so a
// missing file still resolves to where it would be.
func resolveLinks(p string) (resolved string, links []string) {
	rest := strings.Split(filepath.Clean(p), string(filepath.Separator))
	cur := string(filepath.Separator)
	for hops := 0; len(rest) > 0; {
		part := rest[0]
		rest = rest[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 || hops >= maxLinks {
			cur = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			cur = next
			continue
		}
		hops++
		links = append(links, next)
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		rest = append(strings.Split(target, string(filepath.Separator)), rest...)
	}
	return cur, links
}
