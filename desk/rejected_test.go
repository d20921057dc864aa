package desk_test

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/event"
)

// badCron is a desk file whose schedule does not parse.
const badCron = "model: offline\ninstructions: x\nschedules:\n  - {name: open, cron: \"nope\", text: Open.}\n"

// rejectionsOf returns the desks and fields of the daemon's current rejections.
func rejectionsOf(r *daemonRun) []string {
	var out []string
	for _, rj := range r.d.Set().ConfigRejections() {
		out = append(out, rj.Desk+":"+rj.Field)
	}
	return out
}

// statusRejected returns desk name's Status().ConfigRejected.
func statusRejected(t *testing.T, r *daemonRun, name string) *desk.ConfigRejected {
	t.Helper()
	d, ok := r.d.Set().Get(name)
	if !ok {
		t.Fatalf("desk %s is not running", name)
	}
	return d.Status().ConfigRejected
}

// TestDaemonBadDeskFileKeepsItsDeskAndAppliesTheOthers: in one reload, a
// bad fx.yaml keeps fx on its old config while main's edit applies; fx's
// status says since when, which file, field and reason, across reloads,
// until a fix clears it (config.reloaded's cleared).
func TestDaemonBadDeskFileKeepsItsDeskAndAppliesTheOthers(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"fx": daemonDesk("offline"), "main": daemonDesk("offline")})
	r := startDaemon(t, dir)
	t0 := r.clk.Now()
	fxFile := filepath.Join(dir, "desks.d", "fx.yaml")
	writeConfigFile(t, dir, "desks.d/fx.yaml", badCron)
	writeConfigFile(t, dir, "desks.d/main.yaml", daemonDesk("other"))
	// check-config --diff says both: main's change would apply, fx's file
	// would be refused.
	if chk := r.d.Check(); len(chk.Changes) != 1 || chk.Changes[0].What != "desk main: model changed from offline to other" ||
		len(chk.Problems) != 1 || !strings.Contains(chk.Problems[0], "fx.yaml") {
		t.Errorf("Check() = %+v, want main's change and fx's problem", chk)
	}
	r.signal(syscall.SIGHUP)
	rej := expectEvent(r, func(event.ConfigRejected) bool { return true })
	if rej.Desk != "fx" || rej.Path != fxFile || rej.Field != "schedules[0].cron" {
		t.Errorf("config.rejected = %+v, want fx's file and field", rej)
	}
	e := expectEvent(r, func(event.ConfigReloaded) bool { return true })
	if !slices.Equal(e.Changes, []string{"desk main: model changed from offline to other"}) || len(e.Cleared) != 0 {
		t.Errorf("config.reloaded = %+v, want main's change alone", e)
	}
	if c := r.turn("main", "m1"); c.Model != "other" {
		t.Errorf("main ran on %s, want its edit (other) applied", c.Model)
	}
	if c := r.turn("fx", "f1"); c.Model != "offline" {
		t.Errorf("fx ran on %s, want its last good model offline", c.Model)
	}
	want := desk.ConfigRejected{Since: t0, File: fxFile, Field: "schedules[0].cron", Reason: rej.Reason}
	if got := statusRejected(t, r, "fx"); got == nil || *got != want {
		t.Errorf("fx status config_rejected = %+v, want %+v", got, want)
	}
	if got := statusRejected(t, r, "main"); got != nil {
		t.Errorf("main status config_rejected = %+v, want none", got)
	}
	if !r.log.hasMessage("desk file refused: the desk runs on its last good config; the other desks' edits were applied") {
		t.Errorf("no log line of the refusal\n%s", r.log)
	}

	// Still bad at the next reload: the same since. (Moving the clock may
	// also fire the watcher's debounce of the edits: another reload.)
	r.clk.Advance(time.Minute)
	r.signal(syscall.SIGHUP)
	expectEvent(r, func(event.ConfigReloaded) bool { return true })
	if got := statusRejected(t, r, "fx"); got == nil || !got.Since.Equal(t0) {
		t.Errorf("fx config_rejected after a second reload = %+v, want since %v", got, t0)
	}

	// A fix clears it, and is applied.
	writeConfigFile(t, dir, "desks.d/fx.yaml", daemonDesk("other"))
	r.signal(syscall.SIGHUP)
	e = expectEvent(r, func(e event.ConfigReloaded) bool { return len(e.Cleared) > 0 })
	if !slices.Equal(e.Cleared, []string{"fx"}) || !slices.Equal(e.Changes, []string{"desk fx: model changed from offline to other"}) {
		t.Errorf("config.reloaded after the fix = %+v, want fx's change and fx cleared", e)
	}
	if got := statusRejected(t, r, "fx"); got != nil {
		t.Errorf("fx config_rejected after the fix = %+v", got)
	}
	if got := rejectionsOf(r); len(got) != 0 {
		t.Errorf("rejections after the fix = %v", got)
	}
	r.stop()
}

// TestDaemonBadMainFileKeepsADeskFilesRejection: a desk file refused
// stays refused, since when it first was, through a later reload that a
// bad main file refuses whole (which did not look at the desk file again).
func TestDaemonBadMainFileKeepsADeskFilesRejection(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"fx": daemonDesk("offline"), "main": daemonDesk("offline")})
	r := startDaemon(t, dir)
	writeConfigFile(t, dir, "desks.d/fx.yaml", badCron)
	r.signal(syscall.SIGHUP)
	expectEvent(r, func(event.ConfigReloaded) bool { return true })
	first := statusRejected(t, r, "fx")
	if first == nil {
		t.Fatal("fx's bad file is not shown as refused")
	}
	r.clk.Advance(time.Minute)
	writeConfigFile(t, dir, "deskd.yaml", daemonMain+"listen: [\n") // not YAML: no desk file is read
	r.signal(syscall.SIGHUP)
	r.expectNote("ready: config rejected (")
	if got := rejectionsOf(r); len(got) != 2 || !strings.HasPrefix(got[0], ":") || got[1] != "fx:schedules[0].cron" {
		t.Errorf("rejections after the bad main file = %v, want the main file's and fx's", got)
	}
	if got := statusRejected(t, r, "fx"); got == nil || !got.Since.Equal(first.Since) {
		t.Errorf("fx's rejection after the whole refusal = %+v, want it kept since %v", got, first.Since)
	}
	if r.log.hasMessage("desk fx: its file is no longer refused: its rejection is cleared") {
		t.Error("the log says fx's file is no longer refused; it still is")
	}
	r.stop()
}

// TestDaemonBadMainFileRefusesEveryDesk: a problem in the main file
// refuses the whole reload, a good desk edit included; the rejection is
// the main file's (desk ""), and a fix clears it.
func TestDaemonBadMainFileRefusesEveryDesk(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"main": daemonDesk("offline")})
	r := startDaemon(t, dir)
	writeConfigFile(t, dir, "deskd.yaml", daemonMain+"typo: 1\n")
	writeConfigFile(t, dir, "desks.d/main.yaml", daemonDesk("other"))
	r.signal(syscall.SIGHUP)
	rej := expectEvent(r, func(event.ConfigRejected) bool { return true })
	if rej.Desk != "" || rej.Path != filepath.Join(dir, "deskd.yaml") {
		t.Errorf("config.rejected = %+v, want the main file's, desk \"\"", rej)
	}
	r.expectNote("ready: config rejected (")
	if c := r.turn("main", "m1"); c.Model != "offline" {
		t.Errorf("main ran on %s: its edit was applied despite the bad main file", c.Model)
	}
	if got := rejectionsOf(r); !slices.Equal(got, []string{":typo"}) {
		t.Errorf("rejections = %v, want the main file's", got)
	}
	if got := statusRejected(t, r, "main"); got != nil {
		t.Errorf("main status config_rejected = %+v: its own file is good", got)
	}
	if !r.log.hasMessage("config rejected whole: a problem that is not one desk file's alone (the main file, a calendar, a misnamed file, a model route) " +
		"governs every desk, so nothing was applied; the last good config keeps running") {
		t.Errorf("no log line saying why nothing was applied\n%s", r.log)
	}
	writeConfigFile(t, dir, "deskd.yaml", daemonMain)
	r.signal(syscall.SIGHUP)
	if e := expectEvent(r, func(event.ConfigReloaded) bool { return true }); !slices.Equal(e.Cleared, []string{""}) {
		t.Errorf("config.reloaded after the fix = %+v, want the main file cleared", e)
	}
	if c := r.turn("main", "m2"); c.Model != "other" {
		t.Errorf("main ran on %s after the fix, want other", c.Model)
	}
	r.stop()
}

// TestDaemonBadFirstDeskFileIsNotStarted: a desk whose very first file is
// bad is not started, at the start and on a reload, and says so; the
// other desks run; the fix starts it.
func TestDaemonBadFirstDeskFileIsNotStarted(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"main": daemonDesk("offline"), "fx": badCron})
	r := startDaemon(t, dir)
	if got := r.d.Set().Names(); !slices.Equal(got, []string{"main"}) {
		t.Errorf("desks running = %v, want main alone", got)
	}
	if rej := expectEvent(r, func(event.ConfigRejected) bool { return true }); rej.Desk != "fx" {
		t.Errorf("config.rejected at the start = %+v, want fx's", rej)
	}
	if got := rejectionsOf(r); !slices.Equal(got, []string{"fx:schedules[0].cron"}) {
		t.Errorf("rejections = %v", got)
	}
	if !r.log.hasMessage("desk file refused: the desk has no good config yet, so it is not started; the other desks' edits were applied") {
		t.Errorf("no log line saying fx is not started\n%s", r.log)
	}
	for _, when := range []string{"at the start", "after a reload"} {
		if got := r.expectNote("ready: "); got != "ready: running 1 desk: main; desk files refused: fx (not started)" {
			t.Errorf("ready %s = %q", when, got)
		}
		if when == "at the start" {
			r.signal(syscall.SIGHUP) // still bad
		}
	}
	writeConfigFile(t, dir, "desks.d/fx.yaml", daemonDesk("offline"))
	r.signal(syscall.SIGHUP)
	expectEvent(r, func(e event.DeskStarted) bool { return e.Desk == "fx" })
	if e := expectEvent(r, func(event.ConfigReloaded) bool { return true }); !slices.Equal(e.Cleared, []string{"fx"}) {
		t.Errorf("config.reloaded after the fix = %+v", e)
	}
	r.turn("fx", "f1")
	r.stop()
}
