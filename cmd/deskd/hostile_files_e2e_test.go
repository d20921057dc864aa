package main

// End-to-end tests of hostile files (issue 10, items 1 to 3): a FIFO in a
// spool folder or in desks.d must not hold deskd up (in process), and
// SIGTERM must end deskd within its shutdown deadline whatever a goroutine
// is doing (the binary: the process exits at the hard deadline).

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/memory/durable/faultfs"
)

// TestHostileFilesE2EInboxFIFO: a FIFO in the inbox at the start and one
// made while deskd runs are each moved to rejected/ with a reason; a good
// file after them is still taken and answered; SIGTERM then stops deskd
// cleanly and promptly.
func TestHostileFilesE2EInboxFIFO(t *testing.T) {
	s := newE2ESetup(t, "")
	inbox := filepath.Join(s.StateDir, "inbox", s.Desk)
	faultfs.Mkfifo(t, filepath.Join(inbox, "early.json"))
	d := startInProcess(t, "deskd", s.Config, istTime(t, "2026-03-02T10:00:00+05:30"))
	deadline := time.Now().Add(60 * time.Second)
	// The FIFO there at the start is refused at start. Its event is logged
	// by the bus's own goroutine, so it may come before or after "deskd
	// ready": wait for the event first, then for ready.
	d.waitFor(t, deadline, "inbox.rejected of early.json", isEvent("inbox.rejected", "file", "early.json"))
	if d.count(logMessage("deskd ready")) == 0 {
		d.waitFor(t, deadline, "deskd ready", logMessage("deskd ready"))
	}

	faultfs.Mkfifo(t, filepath.Join(inbox, "live.json"))
	rej := d.waitFor(t, deadline, "inbox.rejected of live.json", isEvent("inbox.rejected", "file", "live.json"))
	if !strings.Contains(rej.Str("reason"), "named pipe (FIFO), not a regular file") {
		t.Errorf("the reason for live.json is %q, want it to say it is a named pipe", rej.Str("reason"))
	}
	tmp := filepath.Join(inbox, ".good.json")
	if err := os.WriteFile(tmp, []byte(`{"text": "NIFTY 22000", "id": "feed-good"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(inbox, "good.json")); err != nil {
		t.Fatal(err)
	}
	d.waitFor(t, deadline, "trigger.queued of feed-good", isEvent("trigger.queued", "trigger", "feed-good"))
	d.waitFor(t, deadline, "turn.completed", isEvent("turn.completed"))

	for _, name := range []string{"early.json", "live.json"} {
		fi, err := os.Lstat(filepath.Join(inbox, "rejected", name))
		if err != nil || fi.Mode().Type() != os.ModeNamedPipe {
			t.Errorf("rejected/%s: %v, %v; want the FIFO there", name, fi, err)
		}
		b, err := os.ReadFile(filepath.Join(inbox, "rejected", name+".reason"))
		if err != nil || !strings.Contains(string(b), "named pipe (FIFO)") {
			t.Errorf("rejected/%s.reason = %q, %v", name, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(inbox, "processed", "good.json")); err != nil {
		t.Errorf("processed/good.json: %v", err)
	}
	d.stopCleanly(t, syscall.SIGTERM) // within 30s, exit 0, "deskd stopped"
}

// TestHostileFilesE2ECheckConfigFIFO: check-config with a FIFO in desks.d
// exits non-zero at once, naming the file and what it is; it does not wait
// on the FIFO.
func TestHostileFilesE2ECheckConfigFIFO(t *testing.T) {
	s := newE2ESetup(t, "")
	fifo := filepath.Join(filepath.Dir(s.Config), "desks.d", "pipe.yaml")
	faultfs.Mkfifo(t, fifo)
	var out bytes.Buffer // stdout and stderr, as the binary's combined output
	done := make(chan int, 1)
	go func() { done <- run(t.Context(), []string{"check-config", "--config", s.Config}, &out, &out) }()
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		// check-config is stuck opening the FIFO: give it a writer, which
		// closes at once, so that its read ends and the goroutine with it.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = w.Close()
		}
		select {
		case <-done:
			t.Fatalf("check-config did not end within 30s (it waits on the FIFO %s); output:\n%s", fifo, out.String())
		case <-time.After(10 * time.Second):
			t.Fatalf("check-config did not end within 30s, nor once the FIFO %s had a writer", fifo)
		}
	}
	if code == 0 {
		t.Fatalf("check-config: exit status 0, want a non-zero exit; output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), fifo) || !strings.Contains(out.String(), "named pipe (FIFO), not a regular file") {
		t.Errorf("check-config output does not name %s as a named pipe:\n%s", fifo, out.String())
	}
}

// TestHostileFilesE2EShutdownDeadline: SIGTERM ends deskd by the shutdown
// deadline (shutdown_timeout + 10s) even when a turn is stuck where no
// cancellation reaches it. The turn here is stuck opening the desk's
// Memory.md, which is a FIFO with no writer: the memory package reads it
// with a plain open, which waits for a writer for ever. At the deadline
// deskd logs what was still running and exits non-zero. (If reading
// Memory.md ever stops waiting on a FIFO, this test sees a clean stop and
// fails: give it another stuck turn.)
func TestHostileFilesE2EShutdownDeadline(t *testing.T) {
	t.Parallel()
	s := newE2ESetup(t, "")
	text, err := os.ReadFile(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Config, []byte(strings.Replace(string(text), "shutdown_timeout: 20s", "shutdown_timeout: 1s", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(s.DeskDir(), "Memory.md")
	faultfs.Mkfifo(t, fifo)
	start := istTime(t, "2026-03-02T10:00:00+05:30")
	d := startInProcess(t, "deskd", s.Config, start)
	t.Cleanup(func() {
		// The stuck read of the turn outlives the daemon in this process: a
		// writer that opens and closes the FIFO ends it.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			_ = f.Close()
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	d.waitFor(t, deadline, "deskd ready", logMessage("deskd ready"))
	inbox := filepath.Join(s.StateDir, "inbox", s.Desk)
	if err := os.WriteFile(filepath.Join(inbox, ".stuck.json"), []byte(`{"text": "NIFTY 22000", "id": "stuck-1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(inbox, ".stuck.json"), filepath.Join(inbox, "stuck.json")); err != nil {
		t.Fatal(err)
	}
	d.waitFor(t, deadline, "turn.started of stuck-1", isEvent("turn.started", "trigger", "stuck-1"))

	if err := d.signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.waitFor(t, deadline, "deskd stopping", func(l stderrLine) bool { return strings.HasPrefix(l.Str("message"), "deskd stopping") })
	// The turn gets shutdown_timeout (1s), then is cancelled, which a read
	// of a FIFO does not hear; the whole shutdown has 1s + 10s.
	select {
	case <-d.exited:
		d.fail(t, "deskd ended before its shutdown deadline (%s)", d.state())
	default:
	}
	d.advanceTo(t, start.Add(time.Second))    // the turn's shutdown_timeout, armed when the desks are told to stop
	d.advanceTo(t, start.Add(11*time.Second)) // the deadline
	code := d.wait(t, 30*time.Second)
	if code == 0 {
		d.fail(t, "exit status 0: the turn was not stuck (see the test's comment)")
	}
	var last stderrLine
	if d.count(func(l stderrLine) bool {
		if l.Str("message") == "deskd did not stop by the shutdown deadline: exiting without finishing the shutdown" {
			last = l
			return true
		}
		return false
	}) != 1 {
		d.fail(t, "exit status %d, but no line saying the shutdown deadline passed", code)
	}
	if !strings.Contains(last.Str("still_running"), "waiting for the desks to stop") || last.Str("goroutines") == "" {
		t.Errorf("the deadline's line says still_running %q and %d bytes of goroutines; want the desks' step and the stacks",
			last.Str("still_running"), len(last.Str("goroutines")))
	}
	if d.count(logMessage("deskd stopped")) != 0 {
		t.Error(`"deskd stopped" was logged, but the shutdown did not finish`)
	}
	if at := parseTimeField(t, last, "clock"); at.Before(start.Add(11 * time.Second)) {
		t.Errorf("the deadline passed at %v on deskd's clock, before shutdown_timeout 1s + 10s after SIGTERM", at)
	}
}
