package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/deskd/deskd/desk/clock"
)

const testDebounce = 300 * time.Millisecond

// watchHarness runs a Watcher on a fake clock. It knows the watcher has
// caught up with the file system when the watcher has handled the event of
// a sentinel file the harness creates (inotify reports the events of one
// watcher in order), so tests never sleep.
type watchHarness struct {
	t        *testing.T
	w        *Watcher
	clk      *clock.Fake
	debounce time.Duration // the watcher's
	handled  chan fsnotify.Event
	syncDir  string
	n        int
}

// startWatcher watches mainPath, desksDir and moreDirs; syncDir is a
// watched directory where the harness creates its sentinel files.
func startWatcher(t *testing.T, mainPath, desksDir, syncDir string, moreDirs ...string) *watchHarness {
	t.Helper()
	return startWatcherDebounce(t, testDebounce, testDebounce, mainPath, desksDir, syncDir, moreDirs...)
}

// startWatcherDebounce is startWatcher with NewWatcher's debounce
// argument, and the debounce the test expects it to give.
func startWatcherDebounce(t *testing.T, arg, want time.Duration, mainPath, desksDir, syncDir string, moreDirs ...string) *watchHarness {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	w, err := NewWatcher(mainPath, desksDir, clk, arg, moreDirs...)
	if err != nil {
		t.Fatalf("NewWatcher: %v", err)
	}
	h := &watchHarness{t: t, w: w, clk: clk, debounce: want, handled: make(chan fsnotify.Event, 4096), syncDir: syncDir}
	w.seen = func(ev fsnotify.Event, _ bool) { h.handled <- ev }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
	return h
}

func (h *watchHarness) deadline() context.Context {
	ctx, cancel := context.WithTimeout(h.t.Context(), 10*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// sync returns once the watcher has handled every event caused so far.
func (h *watchHarness) sync() {
	h.t.Helper()
	h.n++
	sentinel := filepath.Join(h.syncDir, fmt.Sprintf(".sync-%d", h.n))
	if err := os.WriteFile(sentinel, nil, 0o644); err != nil {
		h.t.Fatal(err)
	}
	ctx := h.deadline()
	for {
		select {
		case ev := <-h.handled:
			if ev.Name == sentinel {
				return
			}
		case <-ctx.Done():
			h.t.Fatalf("the watcher did not report %s within 10s", sentinel)
		}
	}
}

// armed waits until the watcher has armed a debounce timer, or fails the
// test with failure.
func (h *watchHarness) armed(failure string) {
	h.t.Helper()
	if err := h.clk.WaitPending(h.deadline(), 1); err != nil {
		h.t.Fatal(failure)
	}
}

// notNotified fails the test with failure if a notification waits.
func (h *watchHarness) notNotified(failure string) {
	h.t.Helper()
	select {
	case <-h.w.Changes():
		h.t.Fatal(failure)
	default:
	}
}

// notified waits for a notification, or fails the test with failure.
func (h *watchHarness) notified(failure string) {
	h.t.Helper()
	select {
	case <-h.w.Changes():
	case <-h.deadline().Done():
		h.t.Fatal(failure)
	}
}

// expectOne checks that what happened since the last check is one burst:
// one armed timer, nothing before the debounce has passed, then exactly
// one notification.
func (h *watchHarness) expectOne(what string) {
	h.t.Helper()
	h.sync()
	h.armed(what + ": the debounce timer was never armed")
	if n := h.clk.Pending(); n != 1 {
		h.t.Fatalf("%s: %d timers armed, want 1", what, n)
	}
	h.clk.Advance(h.debounce - time.Millisecond)
	h.sync()
	if n := h.clk.Pending(); n != 1 {
		h.t.Fatalf("%s: %d timers armed %v before the debounce ends, want 1", what, n, time.Millisecond)
	}
	h.notNotified(what + ": notified before the debounce ended")
	h.clk.Advance(time.Millisecond)
	h.notified(what + ": no notification after the debounce")
	h.expectNone(what + " (after its notification)")
}

// expectNone checks that nothing since the last check concerned the config.
func (h *watchHarness) expectNone(what string) {
	h.t.Helper()
	h.sync()
	if n := h.clk.Pending(); n != 0 {
		h.t.Fatalf("%s: %d debounce timers armed, want none", what, n)
	}
	h.notNotified(what + ": unexpected notification")
}

// write writes content to p (watchWrite) and expects one burst of it
// (expectOne).
func (h *watchHarness) write(p, content, what string) {
	h.t.Helper()
	watchWrite(h.t, p, content)
	h.expectOne(what)
}

func watchWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// plainConfig makes dir/deskd.yaml and dir/desks.d/main.yaml.
func plainConfig(t *testing.T) (dir, mainPath, desksDir string) {
	dir = t.TempDir()
	mainPath = filepath.Join(dir, "deskd.yaml")
	desksDir = filepath.Join(dir, "desks.d")
	watchWrite(t, mainPath, "state_dir: ./state\n")
	watchWrite(t, filepath.Join(desksDir, "main.yaml"), "model: offline\n")
	return dir, mainPath, desksDir
}

// plainWatch is plainConfig watched by startWatcher, dir the folder of
// its sentinels.
func plainWatch(t *testing.T) (h *watchHarness, dir, mainPath, desksDir string) {
	t.Helper()
	dir, mainPath, desksDir = plainConfig(t)
	return startWatcher(t, mainPath, desksDir, dir), dir, mainPath, desksDir
}

func TestWatchInPlaceWrite(t *testing.T) {
	h, _, mainPath, desksDir := plainWatch(t)

	// Truncate, then write in two chunks: three Write events, one burst.
	f, err := os.OpenFile(mainPath, os.O_WRONLY|os.O_TRUNC, 0)
	noErr(t, err)
	_, err = f.WriteString("state_dir: ./state\n")
	noErr(t, err)
	_, err = f.WriteString("listen: 127.0.0.1:7318\n")
	noErr(t, err)
	noErr(t, f.Close())
	h.expectOne("in-place write of the main file")

	h.write(filepath.Join(desksDir, "main.yaml"), "model: other\n", "in-place write of a desk file")
}

func TestWatchAtomicRenameSave(t *testing.T) {
	h, dir, mainPath, desksDir := plainWatch(t)

	tmp := filepath.Join(dir, ".deskd.yaml3141592")
	watchWrite(t, tmp, "state_dir: ./other\n")
	h.expectNone("a temp file beside the main file")
	noErr(t, os.Rename(tmp, mainPath))
	h.expectOne("rename of the temp file over the main file")

	tmp = filepath.Join(desksDir, ".main.yaml.tmp")
	watchWrite(t, tmp, "model: b\n")
	noErr(t, os.Rename(tmp, filepath.Join(desksDir, "main.yaml")))
	h.expectOne("atomic save of a desk file")

	// The watch survived both renames.
	h.write(mainPath, "state_dir: ./third\n", "in-place write after the renames")
}

func TestWatchVimSave(t *testing.T) {
	h, dir, mainPath, _ := plainWatch(t)

	// vim (backupcopy=no): probe the folder, rename the original to a
	// backup, write a new file, delete the backup.
	probe := filepath.Join(dir, "4913")
	watchWrite(t, probe, "")
	noErr(t, os.Remove(probe))
	noErr(t, os.Rename(mainPath, mainPath+"~"))
	watchWrite(t, mainPath, "state_dir: ./vim\n")
	noErr(t, os.Remove(mainPath+"~"))
	h.expectOne("vim-style save")

	h.write(mainPath, "state_dir: ./again\n", "write after the vim-style save")
}

func TestWatchRemoveThenRecreate(t *testing.T) {
	h, _, mainPath, _ := plainWatch(t)

	noErr(t, os.Remove(mainPath))
	h.expectOne("main file removed")
	h.write(mainPath, "state_dir: ./back\n", "main file created again")
	h.write(mainPath, "state_dir: ./edited\n", "main file edited after it came back")
}

func TestWatchDeskAddedAndRemoved(t *testing.T) {
	h, _, _, desksDir := plainWatch(t)

	h.write(filepath.Join(desksDir, "fx.yaml"), "model: offline\n", "new desk file")
	noErr(t, os.Remove(filepath.Join(desksDir, "main.yaml")))
	h.expectOne("desk file removed")
	h.write(filepath.Join(desksDir, "rates.yml"), "model: offline\n", "a misnamed .yml desk file (loading reports it)")
}

// TestWatchMoreDirs: another folder of YAML files (calendars_dir) is
// watched like the desks folder, and need not exist at first.
func TestWatchMoreDirs(t *testing.T) {
	dir, mainPath, desksDir := plainConfig(t)
	calendars := filepath.Join(dir, "calendars.d")
	h := startWatcher(t, mainPath, desksDir, dir, calendars)

	noErr(t, os.Mkdir(calendars, 0o755))
	h.expectOne("calendars folder created")
	h.write(filepath.Join(calendars, "lse.yaml"), "timezone: Europe/London\n", "new calendar file")
	h.write(filepath.Join(calendars, "lse.yaml"), "timezone: UTC\n", "calendar file edited")
	watchWrite(t, filepath.Join(calendars, "notes.txt"), "x")
	h.expectNone("a file that is not YAML in the calendars folder")
}

func TestWatchIgnoresOtherFiles(t *testing.T) {
	h, dir, mainPath, desksDir := plainWatch(t)

	watchWrite(t, filepath.Join(dir, "notes.txt"), "x")
	watchWrite(t, filepath.Join(dir, "deskd.yaml.bak"), "x")
	watchWrite(t, filepath.Join(desksDir, "README.md"), "x")
	watchWrite(t, filepath.Join(desksDir, ".hidden.yaml"), "x")
	watchWrite(t, filepath.Join(desksDir, "main.yaml~"), "x")
	watchWrite(t, filepath.Join(desksDir, ".main.yaml.swp"), "x")
	watchWrite(t, filepath.Join(dir, "state", "desks", "main", "Memory.md"), "x")
	noErr(t, os.Chmod(mainPath, 0o600))
	h.expectNone("files that are not config, and a chmod")

	h.write(mainPath, "state_dir: ./s\n", "the main file after the noise")
}

func TestWatchDesksDirRemovedAndRecreated(t *testing.T) {
	h, _, _, desksDir := plainWatch(t)

	noErr(t, os.RemoveAll(desksDir))
	h.expectOne("desks folder removed")
	if slices.Contains(h.w.Watching(), desksDir) {
		t.Errorf("Watching() = %v, still has the removed %s", h.w.Watching(), desksDir)
	}
	noErr(t, os.Mkdir(desksDir, 0o755))
	h.expectOne("desks folder created again")
	if !slices.Contains(h.w.Watching(), desksDir) {
		t.Fatalf("Watching() = %v, want it to have %s again", h.w.Watching(), desksDir)
	}
	h.write(filepath.Join(desksDir, "fx.yaml"), "model: offline\n", "desk file in the new desks folder")
}

// TestWatchDataSymlinkSwap is a Kubernetes-style config folder: the files
// are links through ..data, which is swapped atomically to a new version.
func TestWatchDataSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	watchWrite(t, filepath.Join(dir, "..v1", "deskd.yaml"), "state_dir: ./v1\n")
	watchWrite(t, filepath.Join(dir, "..v1", "desks.d", "main.yaml"), "model: v1\n")
	noErr(t, os.Symlink("..v1", filepath.Join(dir, "..data")))
	noErr(t, os.Symlink("..data/deskd.yaml", filepath.Join(dir, "deskd.yaml")))
	noErr(t, os.Symlink("..data/desks.d", filepath.Join(dir, "desks.d")))
	h := startWatcher(t, filepath.Join(dir, "deskd.yaml"), filepath.Join(dir, "desks.d"), dir)

	h.write(filepath.Join(dir, "..v1", "deskd.yaml"), "state_dir: ./v1b\n", "in-place edit of the link's target")
	h.write(filepath.Join(dir, "..v1", "desks.d", "main.yaml"), "model: v1b\n", "in-place edit of a desk file in the linked desks folder")

	watchWrite(t, filepath.Join(dir, "..v2", "deskd.yaml"), "state_dir: ./v2\n")
	watchWrite(t, filepath.Join(dir, "..v2", "desks.d", "main.yaml"), "model: v2\n")
	h.expectNone("a new version written beside the current one")
	noErr(t, os.Symlink("..v2", filepath.Join(dir, "..data_tmp")))
	noErr(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	noErr(t, os.RemoveAll(filepath.Join(dir, "..v1")))
	h.expectOne("..data swapped to the new version")

	want := []string{dir, filepath.Join(dir, "..v2"), filepath.Join(dir, "..v2", "desks.d")}
	if got := h.w.Watching(); !slices.Equal(got, want) {
		t.Errorf("Watching() = %v, want %v", got, want)
	}
	h.write(filepath.Join(dir, "..v2", "deskd.yaml"), "state_dir: ./v2b\n", "in-place edit of the new target")
	h.write(filepath.Join(dir, "..v2", "desks.d", "fx.yaml"), "model: v2\n", "new desk file in the new target")
}

// TestWatchFolderSymlinkSwap: the main file's path goes through a link to
// a folder, and the link is re-pointed; the old folder is no longer
// watched.
func TestWatchFolderSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"real1", "real2"} {
		watchWrite(t, filepath.Join(dir, v, "deskd.yaml"), "state_dir: ./"+v+"\n")
		watchWrite(t, filepath.Join(dir, v, "desks.d", "main.yaml"), "model: "+v+"\n")
	}
	current := filepath.Join(dir, "current")
	noErr(t, os.Symlink("real1", current))
	h := startWatcher(t, filepath.Join(current, "deskd.yaml"), filepath.Join(current, "desks.d"), dir)

	watchWrite(t, filepath.Join(dir, "real2", "deskd.yaml"), "state_dir: ./x\n")
	h.expectNone("edit of a folder nothing points to")

	noErr(t, os.Symlink("real2", current+".new"))
	noErr(t, os.Rename(current+".new", current))
	h.expectOne("current re-pointed to real2")
	want := []string{dir, filepath.Join(dir, "real2"), filepath.Join(dir, "real2", "desks.d")}
	if got := h.w.Watching(); !slices.Equal(got, want) {
		t.Errorf("Watching() = %v, want %v", got, want)
	}

	watchWrite(t, filepath.Join(dir, "real1", "deskd.yaml"), "state_dir: ./old\n")
	watchWrite(t, filepath.Join(dir, "real1", "desks.d", "main.yaml"), "model: old\n")
	h.expectNone("edit of the old target")
	h.write(filepath.Join(dir, "real2", "desks.d", "main.yaml"), "model: new\n", "edit of a desk file in the new target")
}

// TestWatchDeskFileSymlink: one desk file is a link to a file elsewhere.
func TestWatchDeskFileSymlink(t *testing.T) {
	dir, mainPath, desksDir := plainConfig(t)
	shared := filepath.Join(dir, "shared", "fx.yaml")
	watchWrite(t, shared, "model: a\n")
	noErr(t, os.Symlink("../shared/fx.yaml", filepath.Join(desksDir, "fx.yaml")))
	h := startWatcher(t, mainPath, desksDir, dir)

	h.write(shared, "model: b\n", "edit of a desk file's link target")
	watchWrite(t, filepath.Join(dir, "shared", "other.yaml"), "model: b\n")
	h.expectNone("another file beside the target")
}

func TestWatchChangesCoalesce(t *testing.T) {
	h, _, mainPath, _ := plainWatch(t)

	for i := range 2 {
		watchWrite(t, mainPath, fmt.Sprintf("state_dir: ./s%d\n", i))
		h.sync()
		h.armed(fmt.Sprintf("burst %d: the debounce timer was never armed", i))
		h.clk.Advance(testDebounce)
		h.sync() // the timer fired and its notification was offered
		if n := h.clk.Pending(); n != 0 {
			t.Fatalf("burst %d: %d timers still armed", i, n)
		}
	}
	select {
	case <-h.w.Changes():
	default:
		t.Fatal("no notification after two bursts")
	}
	h.expectNone("a second notification for two unread bursts")
}

func TestWatchStopsOnClose(t *testing.T) {
	_, mainPath, desksDir := plainConfig(t)
	w, err := NewWatcher(mainPath, desksDir, clock.NewFake(time.Unix(0, 0)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if w.debounce != DefaultDebounce {
		t.Errorf("debounce = %v, want DefaultDebounce %v", w.debounce, DefaultDebounce)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	noErr(t, w.Close())
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Close")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

func TestNewWatcherMissingFolder(t *testing.T) {
	dir := t.TempDir()
	_, err := NewWatcher(filepath.Join(dir, "nope", "deskd.yaml"), filepath.Join(dir, "desks.d"), clock.NewFake(time.Unix(0, 0)), 0)
	if err == nil {
		t.Fatal("NewWatcher with a missing main folder: no error")
	}
}

func TestWatchResolveLinks(t *testing.T) {
	dir := t.TempDir()
	dir, links := resolveLinks(dir) // t.TempDir may itself be under a link
	if len(links) > 0 {
		t.Logf("TempDir goes through %v", links)
	}
	watchWrite(t, filepath.Join(dir, "v1", "deskd.yaml"), "")
	noErr(t, os.Symlink("v1", filepath.Join(dir, "data")))
	noErr(t, os.Symlink("data/deskd.yaml", filepath.Join(dir, "main.yaml")))
	noErr(t, os.Symlink(filepath.Join(dir, "v1"), filepath.Join(dir, "abs")))
	noErr(t, os.Symlink("loop", filepath.Join(dir, "loop")))
	noErr(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	noErr(t, os.Symlink("../data", filepath.Join(dir, "sub", "up")))

	tests := []struct {
		name      string
		path      string
		want      string
		wantLinks []string
	}{
		{"no link", filepath.Join(dir, "v1", "deskd.yaml"), filepath.Join(dir, "v1", "deskd.yaml"), nil},
		{"link to a link", filepath.Join(dir, "main.yaml"), filepath.Join(dir, "v1", "deskd.yaml"),
			[]string{filepath.Join(dir, "main.yaml"), filepath.Join(dir, "data")}},
		{"folder link on the way", filepath.Join(dir, "data", "deskd.yaml"), filepath.Join(dir, "v1", "deskd.yaml"),
			[]string{filepath.Join(dir, "data")}},
		{"absolute target", filepath.Join(dir, "abs", "deskd.yaml"), filepath.Join(dir, "v1", "deskd.yaml"),
			[]string{filepath.Join(dir, "abs")}},
		{"relative target with ..", filepath.Join(dir, "sub", "up", "deskd.yaml"), filepath.Join(dir, "v1", "deskd.yaml"),
			[]string{filepath.Join(dir, "sub", "up"), filepath.Join(dir, "data")}},
		{"missing file", filepath.Join(dir, "data", "gone.yaml"), filepath.Join(dir, "v1", "gone.yaml"),
			[]string{filepath.Join(dir, "data")}},
		{"missing folder", filepath.Join(dir, "no", "such", "x.yaml"), filepath.Join(dir, "no", "such", "x.yaml"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, links := resolveLinks(tt.path)
			if got != tt.want || !slices.Equal(links, tt.wantLinks) {
				t.Errorf("resolveLinks(%s) = %s, %v; want %s, %v", tt.path, got, links, tt.want, tt.wantLinks)
			}
		})
	}

	t.Run("loop ends", func(t *testing.T) {
		_, links := resolveLinks(filepath.Join(dir, "loop"))
		if len(links) != maxLinks {
			t.Errorf("resolveLinks(loop) followed %d links, want %d", len(links), maxLinks)
		}
	})
}

// TestWatchDefaultDebounce: a watcher made with no debounce of its own
// reports a burst 50 ms (deskd's clock) after its last event, and one
// editor's save, however it writes, is one burst: a truncation and a
// write in chunks, or a temporary file renamed into place.
func TestWatchDefaultDebounce(t *testing.T) {
	const want = 50 * time.Millisecond
	dir, mainPath, desksDir := plainConfig(t)
	h := startWatcherDebounce(t, 0, want, mainPath, desksDir, dir)
	desk := filepath.Join(desksDir, "main.yaml")

	f, err := os.OpenFile(desk, os.O_WRONLY|os.O_TRUNC, 0)
	noErr(t, err)
	for _, chunk := range []string{"model: ", "other\n", "instructions: Trade.\n"} {
		_, err = f.WriteString(chunk)
		noErr(t, err)
	}
	noErr(t, f.Close())
	h.expectOne("a truncation and three chunks")

	tmp := filepath.Join(desksDir, ".main.yaml.tmp")
	watchWrite(t, tmp, "model: offline\n")
	noErr(t, os.Rename(tmp, desk))
	h.expectOne("a temporary file renamed into place")
}

// TestWatchHalfWrittenFileThenTheRest: a writer that stops mid-file for
// longer than the debounce gets a notification for half a file. Load
// refuses that half (the daemon keeps the last good config), and the rest
// of the write is one more burst, after which Load reads the whole file.
func TestWatchHalfWrittenFileThenTheRest(t *testing.T) {
	dir := t.TempDir()
	mainPath := filepath.Join(dir, "deskd.yaml")
	desksDir := filepath.Join(dir, "desks.d")
	desk := filepath.Join(desksDir, "main.yaml")
	watchWrite(t, mainPath, "state_dir: ./state\nmodels:\n  offline: {provider: scripted}\n")
	watchWrite(t, desk, "model: offline\n")
	if _, err := Load(mainPath); err != nil {
		t.Fatalf("Load before the edit: %v", err)
	}
	h := startWatcherDebounce(t, 0, DefaultDebounce, mainPath, desksDir, dir)

	f, err := os.OpenFile(desk, os.O_WRONLY|os.O_TRUNC, 0)
	noErr(t, err)
	t.Cleanup(func() { _ = f.Close() })
	_, err = f.WriteString("model: offline\nschedules:\n  - name: open\n    cron: \"15 9")
	noErr(t, err)
	h.expectOne("the first half")
	_, err = Load(mainPath)
	var ps Problems
	if !errors.As(err, &ps) || len(ps) == 0 || ps[0].File != desk {
		t.Fatalf("Load of half a desk file = %v, want a problem with %s", err, desk)
	}

	_, err = f.WriteString(" * * 1-5\"\n    text: Open.\n")
	noErr(t, err)
	noErr(t, f.Close())
	h.expectOne("the rest")
	c, err := Load(mainPath)
	if err != nil {
		t.Fatalf("Load of the whole file: %v", err)
	}
	if s := c.Desks["main"].Schedules; len(s) != 1 || s[0].Cron != "15 9 * * 1-5" {
		t.Errorf("schedules = %+v, want the one the whole file has", s)
	}
}

// TestWatchWaitsForATruncatedFile: a save that truncates a desk file and
// writes it more than a debounce later is still one reload of the whole
// file: while the file the burst touched is empty, the watcher waits
// another debounce; once it is written, the notification comes one
// debounce after the write.
func TestWatchWaitsForATruncatedFile(t *testing.T) {
	dir, mainPath, desksDir := plainConfig(t)
	h := startWatcherDebounce(t, 0, DefaultDebounce, mainPath, desksDir, dir)
	desk := filepath.Join(desksDir, "main.yaml")

	f, err := os.OpenFile(desk, os.O_WRONLY|os.O_TRUNC, 0)
	noErr(t, err)
	t.Cleanup(func() { _ = f.Close() })
	h.sync()
	for i := range 3 { // the writer stalls for three debounces
		h.armed(fmt.Sprintf("debounce %d: no timer armed", i))
		h.clk.Advance(DefaultDebounce)
		h.sync()
		h.notNotified(fmt.Sprintf("notified after %d debounces while the file was empty", i+1))
	}
	_, err = f.WriteString("model: other\n")
	noErr(t, err)
	noErr(t, f.Close())
	h.expectOne("the write after the truncation")
}

// TestWatchReportsAFileLeftEmpty: a file emptied on purpose is still
// reported, after maxEmptyWaits more debounces (Load then refuses it).
func TestWatchReportsAFileLeftEmpty(t *testing.T) {
	dir, mainPath, desksDir := plainConfig(t)
	h := startWatcherDebounce(t, 0, DefaultDebounce, mainPath, desksDir, dir)
	watchWrite(t, filepath.Join(desksDir, "main.yaml"), "")
	h.sync()
	for i := range maxEmptyWaits + 1 {
		h.armed(fmt.Sprintf("debounce %d: no timer armed", i))
		h.notNotified(fmt.Sprintf("notified after %d debounces, want %d", i, maxEmptyWaits+1))
		h.clk.Advance(DefaultDebounce)
		h.sync()
	}
	h.notified(fmt.Sprintf("no notification after %d debounces of an empty file", maxEmptyWaits+1))
	h.expectNone("after the notification of the empty file")
}
