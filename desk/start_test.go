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
// names its first session but writes its file only at its first turn
// (issue 24 item 4), and its ledger's file is made by its first record, so
// that an idle desk holds no descriptor; the turn then creates the session
// file under the name the start announced, opens both and is answered; a
// rollover leaves the new session's file closed.
func TestFirstStartHoldsOnlyTheLedgerOpen(t *testing.T) {
	d := desktest.New(t, desktest.Options{})
	ev := eventtest.Next[event.SessionStarted](d.Events)
	if ev.Reason != event.ReasonFirst {
		t.Fatalf("session.started = %+v, want a first session", ev)
	}
	if _, err := os.Stat(d.Folder.SessionPath(ev.Session)); !os.IsNotExist(err) {
		t.Fatalf("the first session's file is there before its first turn (%v), want none yet", err)
	}
	if got := openUnder(t, d.Folder.Dir()); len(got) != 0 {
		t.Errorf("a new idle desk holds open %v, want nothing (its ledger %s is made by its first record)", got, triggers.LedgerFile)
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

// TestDaemonFailingDeskLeavesTheOthersRunning: desks that fail to start,
// whether opening their folder or restoring their session (a damaged
// rollover journal or notes record, which cannot be rebuilt), do not stop
// the daemon: it is ready with every other desk, which answers; each failed
// desk is in the set's failures and statuses with the file and the reason,
// announced as desk.failed, and its damaged file is left in place. Once
// the operator mends the file, a reload starts the desk.
func TestDaemonFailingDeskLeavesTheOthersRunning(t *testing.T) {
	for _, tt := range []struct {
		name  string
		file  string                           // the file named, under the state folder
		block func(t *testing.T, state string) // makes desk "b" fail
		mend  func(t *testing.T, state string)
	}{
		{"a damaged rollover journal", "desks/b/rollover.json", func(t *testing.T, state string) {
			writeFile(t, filepath.Join(state, "desks", "b", "rollover.json"), `{"session": "s-1", "trad`)
		}, func(t *testing.T, state string) {
			writeFile(t, filepath.Join(state, "desks", "b", "rollover.json"), `{}`)
		}},
		{"an empty notes record", "desks/b/folded-notes.json", func(t *testing.T, state string) {
			writeFile(t, filepath.Join(state, "desks", "b", "folded-notes.json"), "")
		}, func(t *testing.T, state string) {
			if err := os.Remove(filepath.Join(state, "desks", "b", "folded-notes.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a file in place of its folder", "desks/b", func(t *testing.T, state string) {
			if err := os.RemoveAll(filepath.Join(state, "desks", "b")); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(state, "desks", "b"), "")
		}, func(t *testing.T, state string) {
			if err := os.Remove(filepath.Join(state, "desks", "b")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			desks := map[string]string{}
			names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
			for _, name := range names {
				desks[name] = daemonDesk("offline")
			}
			dir := daemonConfig(t, "", desks)
			state := filepath.Join(dir, "state")
			if err := os.MkdirAll(filepath.Join(state, "desks", "b"), 0o755); err != nil {
				t.Fatal(err)
			}
			tt.block(t, state)
			// Desk h fails too, the other way.
			writeFile(t, filepath.Join(state, "desks", "h"), "")
			r := startDaemon(t, dir)
			running := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "b" || n == "h" })
			if got := r.d.Set().Names(); !slices.Equal(got, running) {
				t.Errorf("Set().Names() = %v, want %v", got, running)
			}
			failed := r.d.Set().Failed()
			if len(failed) != 2 {
				t.Fatalf("Set().Failed() = %v, want b and h", failed)
			}
			if want := filepath.Join(state, tt.file); failed["b"].File != want || !strings.Contains(failed["b"].Reason, want) {
				t.Errorf("b's failure = %+v, want the file %s and a reason naming it", failed["b"], want)
			}
			if h := failed["h"]; !strings.Contains(h.Reason, "desk h") {
				t.Errorf("h's failure = %+v, want a reason naming the desk", h)
			}
			var statuses []string
			for _, st := range r.d.Set().Statuses() {
				statuses = append(statuses, st.Name+"="+string(st.State))
				if st.State == desk.StateFailed && (st.Failed == nil || st.Failed.Reason == "") {
					t.Errorf("the failed desk %s's status has no failure: %+v", st.Name, st)
				}
			}
			if len(statuses) != len(names) || statuses[1] != "b=failed" || statuses[7] != "h=failed" || statuses[0] == "a=failed" {
				t.Errorf("Set().Statuses() = %v, want every desk, b and h failed", statuses)
			}
			ev := expectEvent(r, func(e event.DeskFailed) bool { return e.Desk == "b" })
			if ev.File != failed["b"].File || ev.Reason != failed["b"].Reason {
				t.Errorf("desk.failed = %+v, want b's failure %+v", ev, failed["b"])
			}
			if _, err := os.Lstat(filepath.Join(state, tt.file)); err != nil {
				t.Errorf("the damaged file is gone: %v", err)
			}
			for _, name := range []string{"a", "j"} {
				if c := r.turn(name, "t-"+name); c.Desk != name {
					t.Errorf("%s's turn = %+v", name, c)
				}
			}

			tt.mend(t, state)
			r.signal(syscall.SIGHUP)
			expectEvent(r, func(e event.DeskStarted) bool { return e.Desk == "b" })
			expectEvent[event.ConfigReloaded](r, nil) // after b is in the set
			if c := r.turn("b", "t-b"); c.Desk != "b" {
				t.Errorf("b's turn after the reload = %+v", c)
			}
			if _, still := r.d.Set().Failed()["b"]; still {
				t.Errorf("b is still failed once it started: %v", r.d.Set().Failed())
			}
			r.stop()
		})
	}
}

// TestDaemonRebuildsADamagedStateFile: a desk whose state file is cut in
// half or empty (a power cut) starts on its session as it was, rebuilt
// from the session files, and answers; the damaged file is set aside
// (state.json.damaged-<time>), never deleted, and file.rebuilt announced.
func TestDaemonRebuildsADamagedStateFile(t *testing.T) {
	for _, tt := range []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"cut in half", func(b []byte) []byte { return b[:len(b)/2] }},
		{"empty", func([]byte) []byte { return nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := daemonConfig(t, "", map[string]string{"a": daemonDesk("offline"), "b": daemonDesk("offline")})
			r := startDaemon(t, dir)
			first := r.turn("b", "t-1")
			r.turn("b", "t-2")
			db, _ := r.d.Set().Get("b")
			spent := db.Status().Spend
			r.stop()

			path := filepath.Join(dir, "state", "desks", "b", memory.StateFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			damaged := tt.damage(b)
			writeFile(t, path, string(damaged))

			r = startDaemon(t, dir)
			ev := expectEvent(r, func(e event.FileRebuilt) bool { return e.Desk == "b" })
			if ev.Path != path || ev.Session != first.Session || !strings.HasPrefix(ev.SetAside, path+memory.DamagedSuffix) {
				t.Errorf("file.rebuilt = %+v, want %s rebuilt on session %s, set aside beside it", ev, path, first.Session)
			}
			if kept, err := os.ReadFile(ev.SetAside); err != nil || string(kept) != string(damaged) {
				t.Errorf("the file set aside holds %q (%v), want the damaged %q", kept, err, damaged)
			}
			d, ok := r.d.Set().Get("b")
			if !ok {
				t.Fatalf("b is not running: failed %v", r.d.Set().Failed())
			}
			if st := d.Status(); st.Session != first.Session || st.Exchanges != 2 || st.Spend.DayTokens != spent.DayTokens || spent.DayTokens == 0 {
				t.Errorf("b's status = session %s, %d exchanges, %d tokens spent today; want %s, 2, %d",
					st.Session, st.Exchanges, st.Spend.DayTokens, first.Session, spent.DayTokens)
			}
			if c := r.turn("b", "t-3"); c.Session != first.Session || c.Turn != 3 {
				t.Errorf("b's next turn = %+v, want turn 3 of %s", c, first.Session)
			}
			r.stop()
		})
	}
}

// TestDaemonForgetsAFailedDeskRemoved: a desk that failed to start is no
// longer listed once its file is removed and the config reloaded.
func TestDaemonForgetsAFailedDeskRemoved(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"a": daemonDesk("offline"), "b": daemonDesk("offline")})
	writeFile(t, filepath.Join(dir, "state", "desks", "b", memory.RolloverFile), "")
	r := startDaemon(t, dir)
	if _, failed := r.d.Set().Failed()["b"]; !failed {
		t.Fatalf("b did not fail: %v", r.d.Set().Failed())
	}
	if err := os.Remove(filepath.Join(dir, "desks.d", "b.yaml")); err != nil {
		t.Fatal(err)
	}
	r.signal(syscall.SIGHUP)
	r.expectNote("reloading")
	r.expectNote("ready")
	if failed := r.d.Set().Failed(); len(failed) != 0 {
		t.Errorf("Set().Failed() = %v once b's file is removed, want none", failed)
	}
	if st := r.d.Set().Statuses(); len(st) != 1 || st[0].Name != "a" {
		t.Errorf("Set().Statuses() = %+v, want only a", st)
	}
	r.stop()
}

// writeFile writes text to path, making its folder.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
