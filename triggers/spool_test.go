package triggers_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/deskd/deskd/desk/clock"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/triggers"
)

// spoolHarness runs a Spool for desk "main" on a fake clock.
type spoolHarness struct {
	dir      string
	clk      *clock.Fake
	taken    chan string
	rejected chan string
	mu       sync.Mutex
	ids      map[string]string // file -> id submitted
	full     bool
}

func runSpool(t *testing.T, before func(inbox string)) *spoolHarness {
	t.Helper()
	h := &spoolHarness{
		dir: t.TempDir(), clk: clock.NewFake(t0), taken: make(chan string, 100), rejected: make(chan string, 100),
		ids: map[string]string{},
	}
	sp := &triggers.Spool{
		Dir: h.dir, Desks: []string{"main"}, Clock: h.clk, IncompleteAfter: time.Minute,
		Submit: func(desk, file string, r triggers.Request) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.full {
				return fmt.Errorf("desk %s: %w", desk, triggers.ErrQueueFull)
			}
			if r.Text == "refuse me" {
				return errors.New("desk refused it")
			}
			h.ids[file] = r.ID
			return nil
		},
		Taken:    func(desk, file string) { h.taken <- file },
		Rejected: func(desk, file, reason string) { h.rejected <- file + ": " + reason },
		Failed:   func(desk, file string, err error) { t.Errorf("spool failed on %s: %v", file, err) },
	}
	if before != nil { // files already there when the spool opens
		if err := os.MkdirAll(h.inbox(), 0o755); err != nil {
			t.Fatal(err)
		}
		before(h.inbox())
	}
	if err := sp.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); sp.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

func (h *spoolHarness) inbox() string { return filepath.Join(h.dir, "main") }

// drop writes a file the way feeds should: under a dot name, renamed in.
func (h *spoolHarness) drop(t *testing.T, name, body string) {
	t.Helper()
	tmp := filepath.Join(h.inbox(), "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(h.inbox(), name)); err != nil {
		t.Fatal(err)
	}
}

func (h *spoolHarness) id(file string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ids[file]
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestSpool: files present at start and files renamed in are taken and
// moved to processed/; bad ones go to rejected/ beside a .reason.
func TestSpool(t *testing.T) {
	h := runSpool(t, func(inbox string) {
		if err := os.WriteFile(filepath.Join(inbox, "early.json"), []byte(`{"text": "before the start", "id": "e-1"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	expect(t, h.taken, "taken", "early.json")
	if h.id("early.json") != "e-1" || !exists(filepath.Join(h.inbox(), "processed", "early.json")) {
		t.Errorf("early.json: id %q, in processed: %v", h.id("early.json"), exists(filepath.Join(h.inbox(), "processed", "early.json")))
	}

	h.drop(t, "tick.json", `{"text": "NIFTY 22000", "key": "NIFTY"}`)
	expect(t, h.taken, "taken", "tick.json")
	if id := h.id("tick.json"); !strings.HasPrefix(id, "inbox-tick-") {
		t.Errorf("a file without id got id %q, want inbox-tick-<hash>", id)
	}

	h.drop(t, "bad.json", `{"text": "x", "kind": "urgent"}`)
	expect(t, h.rejected, "rejected", `bad.json: kind "urgent"`)
	reason, err := os.ReadFile(filepath.Join(h.inbox(), "rejected", "bad.json.reason"))
	if err != nil || !strings.Contains(string(reason), "urgent") || !exists(filepath.Join(h.inbox(), "rejected", "bad.json")) {
		t.Errorf("rejected/bad.json.reason = %q, %v", reason, err)
	}
	h.drop(t, "refused.json", `{"text": "refuse me"}`)
	expect(t, h.rejected, "rejected", "refused.json: desk refused it")

	// The same name again does not overwrite the first in processed/.
	h.drop(t, "tick.json", `{"text": "NIFTY 22010", "key": "NIFTY"}`)
	expect(t, h.taken, "taken", "tick.json")
	if !exists(filepath.Join(h.inbox(), "processed", "tick-2.json")) {
		t.Error("the second tick.json is not processed/tick-2.json")
	}
	if others, _ := filepath.Glob(filepath.Join(h.inbox(), "*.json")); len(others) != 0 {
		t.Errorf("left in the inbox: %v", others)
	}
}

// TestSpoolSameFileSameID: a file taken again (a crash before it was
// moved) gets the same id, so the desk's ledger queues it once.
func TestSpoolSameFileSameID(t *testing.T) {
	body := `{"text": "NIFTY 22000"}`
	var first string
	for range 2 {
		h := runSpool(t, func(inbox string) {
			if err := os.WriteFile(filepath.Join(inbox, "a.json"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		})
		expect(t, h.taken, "taken", "a.json")
		if first == "" {
			first = h.id("a.json")
		} else if id := h.id("a.json"); id != first {
			t.Errorf("the same file got ids %q and %q", first, id)
		}
	}
}

// TestSpoolFullQueue: a file that finds the queue full stays in the inbox
// and is taken at a later scan.
func TestSpoolFullQueue(t *testing.T) {
	h := runSpool(t, nil)
	h.mu.Lock()
	h.full = true
	h.mu.Unlock()
	h.drop(t, "wait.json", `{"text": "later"}`)
	h.drop(t, "marker.json", `{"text": "x", "kind": "bogus"}`) // handled after wait.json
	expect(t, h.rejected, "rejected", "marker.json")
	if !exists(filepath.Join(h.inbox(), "wait.json")) {
		t.Fatal("wait.json left the inbox while the queue was full")
	}
	h.mu.Lock()
	h.full = false
	h.mu.Unlock()
	h.rescanning(t, func() { expect(t, h.taken, "taken", "wait.json") })
}

// TestSpoolIncomplete: a file that is not complete JSON waits; one that
// stays so is rejected after IncompleteAfter.
func TestSpoolIncomplete(t *testing.T) {
	h := runSpool(t, nil)
	h.drop(t, "cut.json", `{"text": "half`)
	h.drop(t, "marker.json", `{"text": "x", "kind": "bogus"}`)
	expect(t, h.rejected, "rejected", "marker.json")
	if !exists(filepath.Join(h.inbox(), "cut.json")) {
		t.Fatal("cut.json was moved at once")
	}
	h.rescanning(t, func() {
		expect(t, h.rejected, "rejected", "cut.json: bad JSON: the body ends before the JSON value does, and stayed so")
	})
}

// rescanning runs wait (which waits for what the spool does), moving the
// clock past each rescan the spool arms meanwhile. An fsnotify event still
// on its way re-arms the rescan, so a single move of the clock could land
// between the two and the rescan would never come.
func (h *spoolHarness) rescanning(t *testing.T, wait func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			at := h.clk.Now().Add(triggers.DefaultRescan)
			if h.clk.WaitTimerAt(ctx, at) != nil {
				return
			}
			h.clk.Set(at)
		}
	}()
	defer func() { cancel(); <-done }()
	wait()
}

// checkRejected checks that name was moved to rejected/ (as what lstat
// says: mode type) with a .reason file that says reason.
func checkRejected(t *testing.T, h *spoolHarness, name string, mode os.FileMode, reason string) string {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(h.inbox(), "rejected", name))
	if err != nil || fi.Mode().Type() != mode {
		t.Errorf("rejected/%s: %v, %v; want it there, of type %v", name, fi, err, mode)
	}
	if _, err := os.Lstat(filepath.Join(h.inbox(), name)); err == nil {
		t.Errorf("%s is still in the inbox", name)
	}
	b, err := os.ReadFile(filepath.Join(h.inbox(), "rejected", name+triggers.ReasonSuffix))
	if err != nil || !strings.Contains(string(b), reason) {
		t.Errorf("rejected/%s%s = %q, %v; want it to say %q", name, triggers.ReasonSuffix, b, err, reason)
	}
	return string(b)
}

// TestSpoolFIFOAtStart: a FIFO in the inbox when the spool opens is
// refused with a reason (not skipped for ever), and the files after it
// are still taken.
func TestSpoolFIFOAtStart(t *testing.T) {
	h := runSpool(t, func(inbox string) {
		faultfs.Mkfifo(t, filepath.Join(inbox, "early-pipe.json"))
	})
	expect(t, h.rejected, "rejected", "early-pipe.json: the file is a named pipe (FIFO), not a regular file")
	checkRejected(t, h, "early-pipe.json", os.ModeNamedPipe, "named pipe (FIFO)")
	h.drop(t, "after.json", `{"text": "after the pipe", "id": "after-1"}`)
	expect(t, h.taken, "taken", "after.json")
}

// TestSpoolFIFOLive: a FIFO made in the inbox while the spool runs is
// refused with a reason at once (it is never opened for a blocking read),
// and the files after it are still taken.
func TestSpoolFIFOLive(t *testing.T) {
	h := runSpool(t, nil)
	faultfs.Mkfifo(t, filepath.Join(h.inbox(), "pipe.json"))
	expect(t, h.rejected, "rejected", "pipe.json: the file is a named pipe (FIFO), not a regular file")
	checkRejected(t, h, "pipe.json", os.ModeNamedPipe, "named pipe (FIFO)")
	h.drop(t, "after.json", `{"text": "after the pipe", "id": "after-1"}`)
	expect(t, h.taken, "taken", "after.json")
	if id := h.id("after.json"); id != "after-1" {
		t.Errorf("after.json submitted with id %q, want after-1", id)
	}
}

// outsideFiles writes, outside the inbox, a valid trigger file and one
// that stands for /etc/passwd, and returns their paths.
func outsideFiles(t *testing.T) (valid, secret string) {
	t.Helper()
	outside := t.TempDir()
	valid = filepath.Join(outside, "valid.json")
	secret = filepath.Join(outside, "passwd")
	if err := os.WriteFile(valid, []byte(`{"text": "outside the inbox", "id": "outside-1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return valid, secret
}

// checkLinkRejected checks that the link name was refused as a link: it is
// in rejected/ as a link, the reason quotes nothing of its target, which
// was not queued and stays where it was.
func checkLinkRejected(t *testing.T, h *spoolHarness, name, target string) {
	t.Helper()
	reason := checkRejected(t, h, name, os.ModeSymlink, "symbolic link")
	for _, leak := range []string{"root", "'r'", "outside", filepath.Dir(target)} {
		if strings.Contains(reason, leak) {
			t.Errorf("the reason for %s quotes %q: %q", name, leak, reason)
		}
	}
	if id := h.id(name); id != "" {
		t.Errorf("%s: its target was queued, id %q", name, id)
	}
	if fi, err := os.Lstat(target); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the target %s: %v, %v; want it left where it was", target, fi, err)
	}
}

// TestSpoolSymlinkAtStart: a symbolic link in the inbox when the spool
// opens is refused with a reason (not skipped for ever) and moved to
// rejected/ as the link it is; its target is never read.
func TestSpoolSymlinkAtStart(t *testing.T) {
	valid, secret := outsideFiles(t)
	h := runSpool(t, func(inbox string) {
		for name, target := range map[string]string{"early-link.json": valid, "early-passwd.json": secret} {
			if err := os.Symlink(target, filepath.Join(inbox, name)); err != nil {
				t.Fatal(err)
			}
		}
	})
	expect(t, h.rejected, "rejected", "early-", "early-")
	checkLinkRejected(t, h, "early-link.json", valid)
	checkLinkRejected(t, h, "early-passwd.json", secret)
}

// TestSpoolSymlinkLive: a symbolic link made in the inbox while the spool
// runs gets the same: refused with a reason, its target never read (not
// queued, not quoted in the reason: a target that is not JSON used to give
// its first byte away in "invalid character").
func TestSpoolSymlinkLive(t *testing.T) {
	valid, secret := outsideFiles(t)
	h := runSpool(t, nil)
	for _, tt := range []struct{ name, target string }{{"link.json", valid}, {"passwd.json", secret}} {
		if err := os.Symlink(tt.target, filepath.Join(h.inbox(), tt.name)); err != nil {
			t.Fatal(err)
		}
		expect(t, h.rejected, "rejected", tt.name+": the file is a symbolic link (not followed)")
		checkLinkRejected(t, h, tt.name, tt.target)
	}
}

// TestSpoolOversized: a file larger than MaxBody is refused from its size
// before it is read. The file is a sparse 1 TiB: a spool that read it
// whole first (os.ReadFile sizes its buffer from the file) would try to
// allocate 1 TiB and die; one that reads through the limit reads at most
// MaxBody+1 bytes.
func TestSpoolOversized(t *testing.T) {
	h := runSpool(t, func(inbox string) {
		f, err := os.Create(filepath.Join(inbox, "huge.json"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(1 << 40); err != nil {
			t.Skipf("no sparse 1 TiB file here: %v", err)
		}
	})
	want := fmt.Sprintf("the file is larger than %d bytes", triggers.MaxBody)
	expect(t, h.rejected, "rejected", "huge.json: "+want)
	checkRejected(t, h, "huge.json", 0, want)

	h.drop(t, "just-over.json", `{"text": "`+strings.Repeat("x", triggers.MaxBody)+`"}`)
	expect(t, h.rejected, "rejected", "just-over.json: "+want)
}
