package main

// End-to-end tests of live reload, systemd notification, shutdown, pause
// and metrics. Edits applied without a restart (a new schedule fires, a new
// desk starts, a removed desk stops), an invalid edit refused while the old
// config runs on, an atomic rename save, a symlink swap of the config
// folder, SIGHUP, a pause across a restart, and GET /metrics read by the
// Prometheus text parser run the daemon in process on a fake clock
// (inprocess_test.go): after each edit, debounced moves the clock past the
// watcher's debounce while the test waits for the reload, and at moves it
// to each slot. What needs the real process runs the built binary: the
// sd_notify messages on a NOTIFY_SOCKET (the process's environment), and
// SIGTERM during a turn, a second SIGTERM and the shutdown timeout (real
// signals, and the process's exit).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/metrics/metricstest"
	"github.com/deskd/deskd/router/routertest"
	"github.com/deskd/deskd/triggers"
)

// waitEach waits until every matcher has matched a line after the cursor,
// in any order (events logged by different goroutines may come in either
// order), and moves the cursor past the last of them. tolerate, if set,
// accepts lines that would otherwise end the wait as failures.
func (d *deskdProc) waitEach(t *testing.T, deadline time.Time, tolerate func(stderrLine) bool, matchers map[string]func(stderrLine) bool) map[string]stderrLine {
	t.Helper()
	found := map[string]stderrLine{}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	start, last := d.next, d.next
	for {
		lines, changed := d.stderr.snapshot()
		for i := start; i < len(lines); i++ {
			l := lines[i]
			hit := false
			for what, m := range matchers {
				if _, done := found[what]; !done && m(l) {
					found[what], hit = l, true
					last = max(last, i+1)
					break
				}
			}
			if !hit && unexpectedLine(l) && (tolerate == nil || !tolerate(l)) {
				d.fail(t, "waiting for %v, got a failure first: %s", keys(matchers, found), l.Raw)
			}
		}
		start = len(lines)
		if len(found) == len(matchers) {
			d.next = last
			return found
		}
		select {
		case <-changed:
		case <-d.exited:
			if lines, _ := d.stderr.snapshot(); len(lines) > start {
				continue
			}
			d.fail(t, "waiting for %v: deskd exited (%s)", keys(matchers, found), d.state())
		case <-timer.C:
			d.fail(t, "waiting for %v: not all seen by the deadline", keys(matchers, found))
		}
	}
}

// keys lists the matchers not found yet.
func keys(matchers map[string]func(stderrLine) bool, found map[string]stderrLine) []string {
	var out []string
	for k := range matchers {
		if _, ok := found[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// reloaded matches a config.reloaded line whose changes include each of want.
func reloaded(want ...string) func(stderrLine) bool {
	return func(l stderrLine) bool {
		if l.Event() != "config.reloaded" {
			return false
		}
		changes, _ := l.Fields["changes"].([]any)
		for _, w := range want {
			if !slices.ContainsFunc(changes, func(c any) bool { return c == w }) {
				return false
			}
		}
		return true
	}
}

// isRejection accepts the lines of a refused reload.
func isRejection(l stderrLine) bool {
	return l.Event() == "config.rejected" || strings.HasPrefix(l.Str("message"), "config rejected whole: ") ||
		strings.HasPrefix(l.Str("message"), "desk file refused: ")
}

// apiAddr returns http://host:port from the "deskd ready" line.
func apiAddr(t *testing.T, ready stderrLine) string {
	t.Helper()
	addrs, _ := ready.Fields["listen"].([]any)
	for _, a := range addrs {
		if s, _ := a.(string); s != "" && !strings.HasPrefix(s, "unix:") {
			return "http://" + s
		}
	}
	t.Fatalf("no TCP address in %s", ready.Raw)
	return ""
}

// saveByRename saves text to path as editors that write a temporary file
// and rename it over the original do.
func saveByRename(t *testing.T, path, text string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// slotID is the trigger id of a schedule's slot, at hh:mm on 2026-03-02 IST.
func slotID(schedule string, hh, mm int) string {
	return triggers.SlotID(schedule, time.Date(2026, 3, 2, hh, mm, 0, 0, istZone))
}

// fxDesk is a second desk file.
const fxDesk = "model: offline\ninstructions: You run the FX desk.\n"

// TestE2EReloadLive: edits take effect without a restart. An atomic rename
// save adds a schedule, which fires; a new desk file starts a desk; a
// removed desk file stops that desk (its files stay) while the other runs on.
func TestE2EReloadLive(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(120 * time.Second)
	s := newE2ESetup(t, "")
	desksDir := filepath.Join(filepath.Dir(s.Config), "desks.d")
	mainFile := filepath.Join(desksDir, "main.yaml")
	d := startInProcess(t, "deskd", s.Config, istTime(t, "2026-03-02T10:00:40+05:30"))
	addr := apiAddr(t, d.waitFor(t, deadline, "deskd ready", logMessage("deskd ready")))

	// A new schedule, saved by rename, fires at its first slot.
	old, err := os.ReadFile(mainFile)
	if err != nil {
		t.Fatal(err)
	}
	saveByRename(t, mainFile, string(old)+"schedules:\n"+everyMinuteSchedule)
	d.debounced(t, func() {
		d.waitFor(t, deadline, "config.reloaded: schedule added", reloaded(`desk main: schedule every-minute added ("* * * * *")`))
	})
	d.at(t, "2026-03-02T10:01:00+05:30")
	done := d.waitFor(t, deadline, "the new schedule's turn", isEvent("turn.completed", "desk", "main", "trigger", slotID("every-minute", 10, 1)))
	if at := parseTimeField(t, done, "at").In(istZone); at.Format("15:04") != "10:01" {
		t.Errorf("the new schedule's turn ran at %v, want 10:01 IST", at)
	}

	// A new desk file starts a desk, which takes triggers.
	writeTestFile(t, desksDir, "fx.yaml", fxDesk)
	d.debounced(t, func() {
		d.waitEach(t, deadline, nil, map[string]func(stderrLine) bool{
			"config.reloaded: fx added": reloaded("desk fx: desk added"),
			"desk.started fx":           isEvent("desk.started", "desk", "fx"),
		})
	})
	if code, body := httpDo(t, "POST", addr+"/v1/desks/fx/triggers", `{"text": "EURINR?", "id": "fx1"}`); code != 202 {
		t.Fatalf("POST a trigger to the new desk = %d %s", code, body)
	}
	d.waitFor(t, deadline, "fx's turn", isEvent("turn.completed", "desk", "fx", "trigger", "fx1"))

	// Removing it stops it; its files stay; main runs on.
	if err := os.Remove(filepath.Join(desksDir, "fx.yaml")); err != nil {
		t.Fatal(err)
	}
	var got map[string]stderrLine
	d.debounced(t, func() {
		got = d.waitEach(t, deadline, nil, map[string]func(stderrLine) bool{
			"config.reloaded: fx removed": reloaded("desk fx: desk removed"),
			"desk.stopped fx":             isEvent("desk.stopped", "desk", "fx"),
			"files stay":                  logMessage("desk stopped; its files stay"),
		})
	})
	if r := got["desk.stopped fx"].Str("reason"); !strings.Contains(r, "removed") {
		t.Errorf("desk.stopped reason = %q, want it to say the file was removed", r)
	}
	if _, err := os.Stat(filepath.Join(s.StateDir, "desks", "fx", "state.json")); err != nil {
		t.Errorf("the removed desk's files: %v", err)
	}
	if code, _ := httpDo(t, "GET", addr+"/v1/desks/fx", ""); code != 404 {
		t.Errorf("GET the removed desk = %d, want 404", code)
	}
	if code, body := httpDo(t, "POST", addr+"/v1/desks/main/triggers", `{"text": "still there?", "id": "m1"}`); code != 202 {
		t.Fatalf("POST to main = %d %s", code, body)
	}
	d.waitFor(t, deadline, "main's turn", isEvent("turn.completed", "desk", "main", "trigger", "m1"))
	d.terminate(t)
	if n := d.count(isEvent("desk.stopped", "desk", "fx")); n != 1 {
		t.Errorf("desk.stopped of fx %d times, want 1", n)
	}
}

// TestE2EReloadRejected: an invalid edit of a desk file is refused with
// config.rejected (path, field, reason, desk) and an error line; the desk
// keeps its old config (its schedule still fires); check-config reports
// the same problem; the corrected file is then taken.
func TestE2EReloadRejected(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(120 * time.Second)
	s := newE2ESetup(t, everyMinuteSchedule)
	mainFile := filepath.Join(filepath.Dir(s.Config), "desks.d", "main.yaml")
	good, err := os.ReadFile(mainFile)
	if err != nil {
		t.Fatal(err)
	}
	d := startInProcess(t, "deskd", s.Config, istTime(t, "2026-03-02T10:00:45+05:30"))
	d.waitFor(t, deadline, "deskd ready", logMessage("deskd ready"))

	bad := strings.Replace(string(good), `cron: "* * * * *"`, `cron: "61 * * * *"`, 1)
	writeTestFile(t, filepath.Dir(mainFile), "main.yaml", bad)
	var got map[string]stderrLine
	d.debounced(t, func() {
		got = d.waitEach(t, deadline, isRejection, map[string]func(stderrLine) bool{
			"config.rejected": isEvent("config.rejected", "path", mainFile, "field", "schedules[0].cron", "desk", "main"),
			"the error line":  logMessage("desk file refused: the desk runs on its last good config; the other desks' edits were applied"),
		})
	})
	if rej := got["config.rejected"]; rej.Str("reason") == "" || rej.Str("level") != "error" {
		t.Errorf("config.rejected = %s, want a reason, at error level", rej.Raw)
	}
	if got["the error line"].Str("level") != "error" {
		t.Errorf("the rejection line is not at error level: %s", got["the error line"].Raw)
	}
	// The old schedule fires on.
	d.at(t, "2026-03-02T10:01:00+05:30")
	d.waitEach(t, deadline, isRejection, map[string]func(stderrLine) bool{
		"the old schedule's turn": isEvent("turn.completed", "desk", "main", "trigger", slotID("every-minute", 10, 1)),
	})
	if n := d.count(func(l stderrLine) bool {
		c, _ := l.Fields["changes"].([]any)
		return l.Event() == "config.reloaded" && len(c) > 0
	}); n != 0 {
		t.Errorf("%d config.reloaded with changes after a refused edit, want 0", n)
	}

	// check-config says the same, and so does --diff against the daemon.
	code, out := deskdCLI(t, "check-config", "--config", s.Config)
	if code != 2 || !strings.Contains(out, mainFile+": schedules[0].cron: ") {
		t.Errorf("check-config = %d\n%s", code, out)
	}
	code, out = deskdCLI(t, "check-config", "--diff", "--config", s.Config)
	if code != 2 || !strings.Contains(out, mainFile+": schedules[0].cron: ") || !strings.Contains(out, "would be refused") {
		t.Errorf("check-config --diff = %d\n%s", code, out)
	}

	// The corrected file is taken.
	fixed := strings.Replace(string(good), `text: "Check the tape."`, `text: "Check the tape and the book."`, 1)
	writeTestFile(t, filepath.Dir(mainFile), "main.yaml", fixed)
	d.debounced(t, func() {
		d.waitEach(t, deadline, isRejection, map[string]func(stderrLine) bool{
			"config.reloaded": reloaded("desk main: schedule every-minute text changed"),
		})
	})
	d.terminate(t)
}

// TestE2EReloadSymlinkSwap: the config folder is swapped by re-pointing a
// symlink, as Kubernetes does (..data): the new folder's files are taken.
func TestE2EReloadSymlinkSwap(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	mainYAML := fmt.Sprintf("state_dir: %s\nlisten: 127.0.0.1:%d\nlog: {level: info, format: json}\nmodels:\n  offline: {provider: scripted}\n", state, pickFreePort(t))
	deskYAML := "model: offline\ninstructions: You run the main desk.\n"
	for _, v := range []string{"..v1", "..v2"} {
		writeTestFile(t, dir, filepath.Join(v, "deskd.yaml"), mainYAML)
		writeTestFile(t, dir, filepath.Join(v, "desks.d", "main.yaml"), deskYAML)
	}
	writeTestFile(t, dir, filepath.Join("..v2", "desks.d", "fx.yaml"), fxDesk)
	// dir/deskd.yaml -> ..data/deskd.yaml, dir/desks.d -> ..data/desks.d,
	// dir/..data -> ..v1.
	for _, link := range [][2]string{{"..v1", "..data"}, {filepath.Join("..data", "deskd.yaml"), "deskd.yaml"},
		{filepath.Join("..data", "desks.d"), "desks.d"}} {
		if err := os.Symlink(link[0], filepath.Join(dir, link[1])); err != nil {
			t.Fatal(err)
		}
	}
	d := startInProcess(t, "deskd", filepath.Join(dir, "deskd.yaml"), istTime(t, "2026-03-02T10:00:05+05:30"))
	d.waitFor(t, deadline, "deskd ready", logMessage("deskd ready"))

	// Swap ..data to ..v2 atomically: a new link renamed over the old.
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink("..v2", tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	d.debounced(t, func() {
		d.waitEach(t, deadline, nil, map[string]func(stderrLine) bool{
			"config.reloaded: fx added": reloaded("desk fx: desk added"),
			"desk.started fx":           isEvent("desk.started", "desk", "fx"),
		})
	})
	d.terminate(t)
}

// TestE2EReloadSIGHUPAndLogLevel: SIGHUP reloads what no watch sees (an
// instructions_file), and a reload changes the log level at once: at warn,
// a turn's info lines are not written; back at info, they are.
func TestE2EReloadSIGHUPAndLogLevel(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	s := newE2ESetup(t, "")
	desksDir := filepath.Join(filepath.Dir(s.Config), "desks.d")
	writeTestFile(t, desksDir, "main.md", "You run the main desk.\n")
	writeTestFile(t, desksDir, "main.yaml", "model: offline\ninstructions_file: main.md\n")
	d := startInProcess(t, "deskd", s.Config, istTime(t, "2026-03-02T10:00:05+05:30"))
	addr := apiAddr(t, d.waitFor(t, deadline, "deskd ready", logMessage("deskd ready")))

	writeTestFile(t, desksDir, "main.md", "You run the main desk. Be brief.\n")
	if err := d.signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	d.waitFor(t, deadline, "config.reloaded after SIGHUP", reloaded("desk main: instructions changed"))

	// Follow the event stream: at warn, config.reloaded is not logged.
	events := followSSE(t, addr, "", "")
	mainYAML := replaceInFile(t, s.Config, "level: info", "level: warn")
	d.debounced(t, func() { events.next(t, "config.reloaded", "log level changed from info to warn") })
	if code, body := httpDo(t, "POST", addr+"/v1/desks/main/triggers", `{"text": "quiet", "id": "quiet"}`); code != 202 {
		t.Fatalf("POST = %d %s", code, body)
	}
	if code, body := httpDo(t, "GET", addr+"/v1/desks/main/triggers/quiet?wait=30s", ""); code != 200 || !strings.Contains(body, `"answered"`) {
		t.Fatalf("GET quiet = %d %s", code, body)
	}
	writeTestFile(t, filepath.Dir(s.Config), "deskd.yaml", mainYAML)
	d.debounced(t, func() {
		d.waitFor(t, deadline, "config.reloaded back at info", reloaded("log level changed from warn to info"))
	})
	for what, m := range map[string]func(stderrLine) bool{
		"the warn reload":    reloaded("log level changed from info to warn"),
		"quiet's turn":       isEvent("turn.completed", "trigger", "quiet"),
		"quiet's queue line": isEvent("trigger.queued", "trigger", "quiet"),
	} {
		if n := d.count(m); n != 0 {
			t.Errorf("%s was logged at level warn (%d lines)", what, n)
		}
	}
	if code, body := httpDo(t, "POST", addr+"/v1/desks/main/triggers", `{"text": "loud", "id": "loud"}`); code != 202 {
		t.Fatalf("POST = %d %s", code, body)
	}
	d.waitFor(t, deadline, "loud's turn, logged at info", isEvent("turn.completed", "trigger", "loud"))
	d.terminate(t)
}

// TestE2ESystemdNotify: deskd under a NOTIFY_SOCKET and a watchdog tells
// systemd READY=1 once its desk has started, pings the watchdog, sends
// RELOADING=1 (with MONOTONIC_USEC) and READY=1 around a reload, and
// STOPPING=1 at shutdown, in that order, with STATUS= lines.
func TestE2ESystemdNotify(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	s := newE2ESetup(t, "")
	n := listenSdNotify(t)
	d := startDeskdEnv(t, "deskd", []string{"NOTIFY_SOCKET=" + n.path, "WATCHDOG_USEC=400000"},
		"run", "--config", s.Config, "--clock-start", "2026-03-02T10:00:05+05:30")
	ready := n.nextWith(t, "READY=1")
	if !strings.Contains(ready, "STATUS=running 1 desk: main") {
		t.Errorf("READY datagram = %q, want a STATUS= naming the desk", ready)
	}
	d.deskStarted(t, deadline)
	for range 3 {
		n.nextWith(t, "WATCHDOG=1")
	}
	if err := d.signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	reloading := n.nextWith(t, "RELOADING=1", "READY=1", "STOPPING=1")
	if !strings.HasPrefix(reloading, "RELOADING=1\nMONOTONIC_USEC=") || !strings.Contains(reloading, "STATUS=reloading the config: SIGHUP") {
		t.Errorf("after SIGHUP: %q, want RELOADING=1, MONOTONIC_USEC and a STATUS=", reloading)
	}
	again := n.nextWith(t, "RELOADING=1", "READY=1", "STOPPING=1")
	if !strings.HasPrefix(again, "READY=1") {
		t.Errorf("after RELOADING=1: %q, want READY=1", again)
	}
	d.waitFor(t, deadline, "config.reloaded", isEvent("config.reloaded"))
	if err := d.signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopping := n.nextWith(t, "RELOADING=1", "READY=1", "STOPPING=1")
	if !strings.HasPrefix(stopping, "STOPPING=1") || !strings.Contains(stopping, "STATUS=stopping") {
		t.Errorf("after SIGTERM: %q, want STOPPING=1 with a STATUS=", stopping)
	}
	if code := d.wait(t, 30*time.Second); code != 0 {
		d.fail(t, "exit status %d, want 0", code)
	}
	var states []string
	for _, m := range n.received() {
		for _, line := range strings.Split(m, "\n") {
			if line == "READY=1" || line == "RELOADING=1" || line == "STOPPING=1" {
				states = append(states, line)
			}
		}
	}
	if want := []string{"READY=1", "RELOADING=1", "READY=1", "STOPPING=1"}; !slices.Equal(states, want) {
		t.Errorf("sd_notify states = %q, want %q", states, want)
	}
}

// TestE2EPauseSurvivesRestart: deskd pause stops a desk's turns; its
// scheduled slot is claimed and waits in the queue; the pause survives a
// restart and status shows who paused it, when and why; deskd resume runs
// what waited.
func TestE2EPauseSurvivesRestart(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(120 * time.Second)
	s := newE2ESetup(t, everyMinuteSchedule)
	d1 := startInProcess(t, "first deskd", s.Config, istTime(t, "2026-03-02T10:00:45+05:30"))
	d1.waitFor(t, deadline, "deskd ready", logMessage("deskd ready"))
	me := operator()
	code, out := deskdCLI(t, "pause", "main", "--reason", "risk check", "--config", s.Config)
	if code != 0 || !strings.Contains(out, "desk main paused by "+me) {
		t.Fatalf("deskd pause = %d\n%s", code, out)
	}
	d1.waitFor(t, deadline, "desk.paused", isEvent("desk.paused", "desk", "main", "by", me, "reason", "risk check"))
	slot := slotID("every-minute", 10, 1)
	d1.at(t, "2026-03-02T10:01:00+05:30")
	d1.waitFor(t, deadline, "the 10:01 slot queued", isEvent("trigger.queued", "desk", "main", "trigger", slot))
	d1.terminate(t)
	if n := d1.count(isEvent("turn.started")); n != 0 {
		t.Errorf("%d turns started while the desk was paused", n)
	}

	d2 := startInProcess(t, "second deskd", s.Config, istTime(t, "2026-03-02T10:01:30+05:30"))
	d2.waitFor(t, deadline, "the paused warning", func(l stderrLine) bool {
		return l.Str("message") == "desk is paused: it runs no turn until deskd resume" && l.Str("by") == me && l.Str("reason") == "risk check"
	})
	d2.waitFor(t, deadline, "deskd ready", logMessage("deskd ready"))
	code, out = deskdCLI(t, "status", "--json", "--config", s.Config)
	var st httpapi.DesksResponse
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Desks) != 1 {
		t.Fatalf("deskd status --json = %d\n%s", code, out)
	}
	if p := st.Desks[0].Paused; st.Desks[0].State != "paused" || p == nil || p.By != me || p.Reason != "risk check" ||
		p.At.In(istZone).Format("15:04") != "10:00" || st.Desks[0].QueueDepth < 1 {
		t.Errorf("status after a restart = %+v (paused %+v)", st.Desks[0], p)
	}
	code, out = deskdCLI(t, "resume", "main", "--config", s.Config)
	if code != 0 || !strings.Contains(out, "desk main resumed (it was paused by "+me) {
		t.Fatalf("deskd resume = %d\n%s", code, out)
	}
	resumed := d2.waitFor(t, deadline, "desk.resumed", isEvent("desk.resumed", "desk", "main", "by", me))
	// The fake clock stands still, so the turn and the resume may share an
	// instant: the turn is after the resume in the log, and not before it
	// on deskd's clock.
	started := d2.waitFor(t, deadline, "the slot's turn started", isEvent("turn.started", "desk", "main", "trigger", slot))
	done := d2.waitFor(t, deadline, "the slot's turn", isEvent("turn.completed", "desk", "main", "trigger", slot))
	if parseTimeField(t, started, "at").Before(parseTimeField(t, resumed, "at")) || parseTimeField(t, done, "at").Before(parseTimeField(t, resumed, "at")) {
		t.Errorf("the waiting turn ran before the desk was resumed")
	}
	if n := d2.count(isEvent("turn.started")); n != 1 {
		t.Errorf("%d turns started in the second run, want 1 (the slot's, after the resume)", n)
	}
	d2.terminate(t)
	if _, err := os.Stat(filepath.Join(s.DeskDir(), desk.PauseFile)); err != nil {
		t.Errorf("the pause file: %v", err)
	}
}

// TestE2EMetrics: GET /metrics is read by the Prometheus text parser and
// counts turns and reloads; queue depth and next slot are there.
func TestE2EMetrics(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	s := newE2ESetup(t, everyMinuteSchedule)
	d := startInProcess(t, "deskd", s.Config, istTime(t, "2026-03-02T10:00:55+05:30"))
	addr := apiAddr(t, d.waitFor(t, deadline, "deskd ready", logMessage("deskd ready")))
	d.at(t, "2026-03-02T10:01:00+05:30")
	d.waitFor(t, deadline, "a turn", isEvent("turn.completed", "desk", "main"))
	if err := d.signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	d.waitFor(t, deadline, "config.reloaded", isEvent("config.reloaded"))

	// The metrics count the events on a subscriber of their own, which may
	// come to config.reloaded a moment after the log: scrape until the
	// reload is counted (or the deadline).
	var fams map[string]*dto.MetricFamily
	for {
		code, body := httpDo(t, "GET", addr+"/metrics", "")
		if code != 200 {
			t.Fatalf("GET /metrics = %d", code)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		var err error
		if fams, err = parser.TextToMetricFamilies(strings.NewReader(body)); err != nil {
			t.Fatalf("parse /metrics: %v\n%s", err, body)
		}
		if v, _ := metricstest.Value(fams, "deskd_config_reloads_total"); v >= 1 || time.Now().After(deadline) {
			break
		}
	}
	checks := []struct {
		name   string
		labels []string
		ok     func(float64) bool
		want   string
	}{
		{"deskd_turns_total", []string{"desk", "main", "model", "offline (scripted)", "outcome", "completed"}, func(v float64) bool { return v >= 1 }, ">= 1"},
		{"deskd_config_reloads_total", nil, func(v float64) bool { return v == 1 }, "1"},
		{"deskd_queue_depth", []string{"desk", "main"}, func(v float64) bool { return v == 0 }, "0"},
		{"deskd_next_slot_timestamp_seconds", []string{"desk", "main"}, func(v float64) bool {
			return v == float64(time.Date(2026, 3, 2, 10, 2, 0, 0, istZone).Unix())
		}, "10:02 IST"},
	}
	for _, c := range checks {
		v, ok := metricstest.Value(fams, c.name, c.labels...)
		if !ok || !c.ok(v) {
			t.Errorf("%s%v = %v (present %v), want %s", c.name, c.labels, v, ok, c.want)
		}
	}
	d.terminate(t)
}

// TestE2ECheckConfigDiff: check-config --diff asks the running deskd what a
// reload would change: a setting that needs a restart stays listed after
// the reload; with no daemon it says so.
func TestE2ECheckConfigDiff(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	s := newE2ESetup(t, "")
	d := startInProcess(t, "deskd", s.Config, istTime(t, "2026-03-02T10:00:05+05:30"))
	d.waitFor(t, deadline, "deskd ready", logMessage("deskd ready"))
	code, out := deskdCLI(t, "check-config", "--diff", "--config", s.Config)
	if code != 0 || !strings.Contains(out, "no changes against the running deskd") {
		t.Errorf("check-config --diff, nothing changed = %d\n%s", code, out)
	}
	replaceInFile(t, s.Config, "shutdown_timeout: 20s", "shutdown_timeout: 25s")
	const change = "shutdown_timeout changed from 20s to 25s (takes effect after a restart)"
	d.debounced(t, func() { d.waitFor(t, deadline, "config.reloaded", reloaded(change)) })
	code, out = deskdCLI(t, "check-config", "--diff", "--config", s.Config)
	if code != 0 || strings.TrimSpace(out) != change {
		t.Errorf("check-config --diff = %d\n%s\nwant exit 0 and %q", code, out, change)
	}
	d.terminate(t)
	code, out = deskdCLI(t, "check-config", "--diff", "--config", s.Config)
	if code != 1 || !strings.Contains(out, "no running deskd answered") {
		t.Errorf("check-config --diff with deskd stopped = %d\n%s", code, out)
	}
}

// openAIConfig writes a config of one desk "main" whose model is the fake
// Chat Completions server llm, and returns the main file's path.
func openAIConfig(t *testing.T, llm *routertest.Server, shutdownTimeout string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := writeTestFile(t, dir, "deskd.yaml", fmt.Sprintf(`state_dir: state
listen: 127.0.0.1:%d
log: {level: info, format: json}
shutdown_timeout: %s
models:
  llm: %s
`, pickFreePort(t), shutdownTimeout, openAIModel(llm)))
	writeTestFile(t, dir, filepath.Join("desks.d", "main.yaml"), "model: llm\ninstructions: You run the main desk.\n")
	return cfg
}

// startOpenAIDeskd runs deskd on cfg (openAIConfig) and waits for "deskd
// ready". It skips the test while the openai provider is not in this
// build.
func startOpenAIDeskd(t *testing.T, cfg string) (*deskdProc, string) {
	t.Helper()
	d := startDeskdEnv(t, "deskd", []string{"DESKD_E2E_KEY=test-key"}, "run", "--config", cfg, "--clock-start", "2026-03-02T10:00:05+05:30")
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
	for {
		lines, changed := d.stderr.snapshot()
		for _, l := range lines {
			if l.Str("message") == "deskd ready" {
				return d, apiAddr(t, l)
			}
		}
		select {
		case <-changed:
		case <-d.exited:
			if s := d.stderr.String(); strings.Contains(s, "not available in this build") {
				t.Skipf("the openai provider is not wired into deskd yet:\n%s", s)
			}
			d.fail(t, "exited before deskd ready (%s)", d.state())
		case <-timeout.C:
			d.fail(t, "no deskd ready within 60s")
		}
	}
}

// isInterruption accepts the lines of a turn cut off at shutdown.
func isInterruption(l stderrLine) bool {
	return l.Event() == "turn.interrupted" || l.Str("message") == "second signal: running turns are cancelled now and recorded interrupted"
}

// TestE2ESIGTERMDuringTurn: SIGTERM while a turn is with the model: the API
// answers 503 at once, the turn finishes and is answered, and deskd exits
// 0 with "deskd stopped" last; the next deskd finds the trigger answered.
func TestE2ESIGTERMDuringTurn(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	deadline := time.Now().Add(90 * time.Second)
	h := startHeldTurn(t, "30s", "h1")
	d, addr, llm := h.d, h.addr, h.llm
	d.beginStop(t, deadline)
	if code, body := httpDo(t, "GET", addr+"/healthz", ""); code != 503 || !strings.Contains(body, "deskd is shutting down") {
		t.Errorf("GET /healthz while stopping = %d %s, want 503", code, body)
	}
	if code, body := httpDo(t, "POST", addr+"/v1/desks/main/triggers", `{"text": "late", "id": "late"}`); code != 503 ||
		!strings.Contains(body, `"error": "deskd is shutting down"`) {
		t.Errorf("POST a trigger while stopping = %d %s, want 503 deskd is shutting down", code, body)
	}
	h.release <- struct{}{}
	d.waitFor(t, deadline, "h1's turn", isEvent("turn.completed", "desk", "main", "trigger", "h1"))
	d.stopCleanlyAfterSignal(t)
	if n := userCount(llm, "late"); n != 0 {
		t.Errorf("a trigger sent while stopping reached the model %d times", n)
	}

	_, addr2 := startOpenAIDeskd(t, h.cfg)
	code, body := httpDo(t, "GET", addr2+"/v1/desks/main/triggers/h1", "")
	if code != 200 || !strings.Contains(body, `"state": "answered"`) || !strings.Contains(body, `"reply": "noted"`) {
		t.Errorf("h1 after the restart = %d %s, want answered", code, body)
	}
	if code, _ := httpDo(t, "GET", addr2+"/v1/desks/main/triggers/late", ""); code != 404 {
		t.Errorf("the trigger refused while stopping is known after the restart (%d)", code)
	}
}

// TestE2ESecondSIGTERM: a second SIGTERM during the shutdown cancels the
// running turn at once; it is recorded interrupted, and deskd exits 0.
func TestE2ESecondSIGTERM(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	deadline := time.Now().Add(90 * time.Second)
	h := startHeldTurn(t, "5m", "h2")
	h.d.cutStopShort(t, deadline)
	h.d.endsInterrupted(t, deadline, "h2", "second signal")
}

// TestE2EShutdownTimeout: a turn still running when shutdown_timeout
// passes is cancelled and recorded interrupted; deskd exits 0.
func TestE2EShutdownTimeout(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	deadline := time.Now().Add(90 * time.Second)
	h := startHeldTurn(t, "1s", "h3")
	if err := h.d.signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h.d.endsInterrupted(t, deadline, "h3", "shutdown timeout of 1s passed")
}

// heldTurn is a deskd binary whose one turn the fake model holds.
type heldTurn struct {
	d       *deskdProc
	addr    string             // http://host:port of d's API
	llm     *routertest.Server // the fake model, holding "HOLD the book"
	release chan<- struct{}    // a send lets the held turn answer
	cfg     string             // the config's main file
}

// startHeldTurn runs deskd (startOpenAIDeskd) on a config of the fake
// model (newFakeLLM, openAIConfig) with the shutdown timeout given, posts
// "HOLD the book" as trigger id, and returns once the model holds that
// turn.
func startHeldTurn(t *testing.T, shutdownTimeout, id string) heldTurn {
	t.Helper()
	h := heldTurn{}
	h.llm, h.release = newFakeLLM(t, "HOLD")
	h.cfg = openAIConfig(t, h.llm, shutdownTimeout)
	h.d, h.addr = startOpenAIDeskd(t, h.cfg)
	if code, body := httpDo(t, "POST", h.addr+"/v1/desks/main/triggers", `{"text": "HOLD the book", "id": "`+id+`"}`); code != 202 {
		t.Fatalf("POST = %d %s", code, body)
	}
	h.llm.Await(t, routertest.UserContains("HOLD the book"))
	return h
}

// endsInterrupted waits for the turn of trigger id to be recorded
// interrupted with a reason that contains reason (the lines of a turn cut
// off at shutdown do not end the wait), then for the clean exit that the
// signals already sent began (stopCleanlyAfterSignal).
func (d *deskdProc) endsInterrupted(t *testing.T, deadline time.Time, id, reason string) {
	t.Helper()
	got := d.waitEach(t, deadline, isInterruption, map[string]func(stderrLine) bool{
		"turn.interrupted": isEvent("turn.interrupted", "desk", "main", "trigger", id),
	})
	if r := got["turn.interrupted"].Str("reason"); !strings.Contains(r, reason) {
		t.Errorf("turn.interrupted reason = %q, want one with %q", r, reason)
	}
	d.stopCleanlyAfterSignal(t)
}

// stopCleanlyAfterSignal waits for the exit that a signal already sent
// began, and checks it as stopCleanly does: status 0, "deskd stopped" the
// last line, every line JSON.
func (d *deskdProc) stopCleanlyAfterSignal(t *testing.T) {
	t.Helper()
	if code := d.wait(t, 60*time.Second); code != 0 {
		d.fail(t, "exit status %d, want 0", code)
	}
	lines, _ := d.stderr.snapshot()
	if len(lines) == 0 || lines[len(lines)-1].Str("message") != "deskd stopped" {
		d.fail(t, "the last line is not \"deskd stopped\"")
	}
	for _, l := range lines {
		if l.Fields == nil {
			d.fail(t, "a stderr line that is not JSON: %q", l.Raw)
		}
	}
}
