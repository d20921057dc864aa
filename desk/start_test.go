package desk_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// openUnder returns the files of this process's open descriptors that lie
// under dir (read from /proc/self/fd); the test is skipped where there is
// no /proc.
func openUnder(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	dir, err = filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil {
			continue // closed since it was listed (the ReadDir's own)
		}
		if strings.HasPrefix(target, dir+string(filepath.Separator)) {
			files = append(files, strings.TrimPrefix(target, dir+string(filepath.Separator)))
		}
	}
	slices.Sort(files)
	return files
}

// TestFirstStartHoldsOnlyTheLedgerOpen: a desk started for the first time
// creates its first session's file but keeps it closed until its first
// turn, so that an idle desk holds one descriptor, its ledger's; the turn
// then opens it and is answered; a rollover leaves the new session's file
// closed too.
func TestFirstStartHoldsOnlyTheLedgerOpen(t *testing.T) {
	d := desktest.New(t, desktest.Options{})
	ev := eventtest.Next[event.SessionStarted](d.Events)
	if ev.Reason != event.ReasonFirst {
		t.Fatalf("session.started = %+v, want a first session", ev)
	}
	if _, err := os.Stat(d.Folder.SessionPath(ev.Session)); err != nil {
		t.Fatalf("the first session's file was not created: %v", err)
	}
	if got := openUnder(t, d.Folder.Dir()); !slices.Equal(got, []string{triggers.LedgerFile}) {
		t.Errorf("a new idle desk holds open %v, want only its ledger %s", got, triggers.LedgerFile)
	}

	d.Submit(triggers.Trigger{ID: "a", Kind: triggers.Manual, Text: "Good morning"})
	done := eventtest.NextWhere(d.Events, func(e event.TurnCompleted) bool { return e.Trigger == "a" })
	if done.Session != ev.Session || done.Turn != 1 {
		t.Errorf("turn.completed = %+v, want turn 1 of %s", done, ev.Session)
	}
	records, err := d.Folder.ReadSession(ev.Session)
	if err != nil {
		t.Fatal(err)
	}
	var answered bool
	for _, rec := range records {
		if rec.Type == memory.RecordMessage && rec.Role == "assistant" && rec.Trigger == "a" {
			answered = true
		}
	}
	if !answered {
		t.Errorf("the session file holds no reply to a: %+v", records)
	}

	_, next, err := d.Desk.RollOver(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if next == ev.Session {
		t.Fatalf("RollOver kept session %s", next)
	}
	if got := openUnder(t, d.Folder.Dir()); !slices.Equal(got, []string{triggers.LedgerFile}) {
		t.Errorf("after a rollover the idle desk holds open %v, want only its ledger", got)
	}
}

// bareDaemon is a Daemon running in process on a fake clock, with no
// front end; ended is closed once Run has returned err.
type bareDaemon struct {
	d     *desk.Daemon
	ended chan struct{}
	err   error
	log   *syncBuffer
}

// runDaemon runs the daemon of the config in dir, without waiting for it
// to be ready. The test's cleanup stops it (SIGTERM) if it still runs.
func runDaemon(t *testing.T, dir string) *bareDaemon {
	t.Helper()
	cfg, err := config.Load(filepath.Join(dir, "deskd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b := &bareDaemon{ended: make(chan struct{}), log: &syncBuffer{}}
	b.d, err = desk.NewDaemon(desk.DaemonOptions{Config: cfg, Clock: clock.NewFake(start), Bus: event.New(), Log: zerolog.New(b.log)})
	if err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	go func() { b.err = b.d.Run(t.Context(), sigs); close(b.ended) }()
	t.Cleanup(func() {
		sigs <- syscall.SIGTERM
		select {
		case <-b.ended:
		case <-time.After(20 * time.Second):
			t.Errorf("the daemon did not stop within 20s\n%s", b.log)
		}
	})
	return b
}

// TestDaemonStartsManyDesks: many desks start together; each is in the
// set once the daemon is ready, and answers.
func TestDaemonStartsManyDesks(t *testing.T) {
	desks := map[string]string{}
	var names []string
	for i := range 24 {
		name := "d" + string(rune('a'+i))
		desks[name] = daemonDesk("offline")
		names = append(names, name)
	}
	r := startDaemon(t, daemonConfig(t, "", desks))
	if got := r.d.Set().Names(); !slices.Equal(got, names) {
		t.Errorf("Set().Names() = %v, want %v", got, names)
	}
	for _, name := range []string{names[0], names[len(names)-1]} {
		if c := r.turn(name, "t-"+name); c.Desk != name {
			t.Errorf("%s's turn = %+v", name, c)
		}
	}
}

// TestDaemonFailingDeskStopsTheStart: when desks fail to start, the daemon
// is never ready, logs each failure, and stops with the error of the first
// desk in name order that failed, whether it failed opening its folder or
// restoring its session.
func TestDaemonFailingDeskStopsTheStart(t *testing.T) {
	for _, tt := range []struct {
		name  string
		block func(t *testing.T, state string) // makes desk "b" fail
	}{
		{"a damaged state file", func(t *testing.T, state string) {
			if err := os.MkdirAll(filepath.Join(state, "desks", "b"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(state, "desks", "b", "state.json"), []byte("{not json"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"a file in place of its folder", func(t *testing.T, state string) {
			if err := os.WriteFile(filepath.Join(state, "desks", "b"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			desks := map[string]string{}
			for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
				desks[name] = daemonDesk("offline")
			}
			dir := daemonConfig(t, "", desks)
			state := filepath.Join(dir, "state")
			if err := os.MkdirAll(filepath.Join(state, "desks"), 0o755); err != nil {
				t.Fatal(err)
			}
			tt.block(t, state)
			// Desk h fails too, the other way: b's error is the one returned.
			if err := os.WriteFile(filepath.Join(state, "desks", "h"), nil, 0o644); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			b := runDaemon(t, dir)
			log := b.log
			select {
			case <-b.ended:
			case <-b.d.Ready():
				t.Fatalf("the daemon was ready with a desk that cannot start\n%s", log)
			case <-time.After(20 * time.Second):
				t.Fatalf("the daemon did not stop within 20s\n%s", log)
			}
			err := b.err
			if err == nil || !strings.Contains(err.Error(), "desk b") {
				t.Errorf("Run = %v, want desk b's error", err)
			}
			if !log.hasMessage("desk failed to start") || !strings.Contains(log.String(), `"desk":"b"`) {
				t.Errorf("no log line of b's failure\n%s", log)
			}
		})
	}
}
