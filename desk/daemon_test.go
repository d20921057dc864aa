package desk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// daemonMain is the main file of the daemon tests: two scripted models
// (a desk moved from one to the other shows the move in its turns), and a
// shutdown timeout no test reaches on the fake clock.
const daemonMain = `state_dir: state
timezone: Asia/Kolkata
shutdown_timeout: 5m
log: {level: info, format: json}
models:
  offline: {provider: scripted}
  other: {provider: scripted}
`

// daemonDesk is a desk file on the model named.
func daemonDesk(model string) string {
	return "model: " + model + "\ninstructions: You run this desk.\n"
}

// writeConfigFile writes text to dir/name as an editor's atomic save does
// (a hidden temporary file renamed into place), so that a watcher never
// reads half a file.
func writeConfigFile(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

// daemonConfig writes daemonMain (or main, if not empty) and one file per
// desk (name: text) into a new folder, and returns the folder.
func daemonConfig(t *testing.T, main string, desks map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if main == "" {
		main = daemonMain
	}
	writeConfigFile(t, dir, "deskd.yaml", main)
	for name, text := range desks {
		writeConfigFile(t, dir, filepath.Join("desks.d", name+".yaml"), text)
	}
	return dir
}

// daemonRun is a Daemon running in process on a fake clock, its signals
// coming from the test.
type daemonRun struct {
	t      *testing.T
	dir    string // the config folder
	clk    *clock.Fake
	d      *desk.Daemon
	sigs   chan os.Signal
	done   chan error
	events chan event.Event
	notes  chan string // what the daemon told its Notifier: "ready: ...", "status: ...", ...
	log    *syncBuffer
	front  *fakeFrontend
	levels chan zerolog.Level
	// seen is every event expectEvent has read, in order.
	seen []event.Event

	released atomic.Int32 // ReleaseSignals calls
	stopped  bool
}

// startDaemon runs the daemon of the config in dir and waits until it is
// ready. The test's cleanup stops it (SIGTERM) if the test has not.
func startDaemon(t *testing.T, dir string) *daemonRun {
	t.Helper()
	return startDaemonWith(t, dir, func(*config.Config) {})
}

// startDaemonWith is startDaemon on the config as edit leaves it (as
// deskd run's flags edit it).
func startDaemonWith(t *testing.T, dir string, edit func(*config.Config)) *daemonRun {
	t.Helper()
	return startDaemonOptions(t, dir, edit, func(*desk.DaemonOptions, *daemonRun) {})
}

// startDaemonOptions is startDaemonWith on the daemon's options as opts
// leaves them (a cluster's NATS connection, say); opts may keep the run,
// whose daemon is set before Run begins.
func startDaemonOptions(t *testing.T, dir string, edit func(*config.Config), opts func(*desk.DaemonOptions, *daemonRun)) *daemonRun {
	t.Helper()
	loaded, err := config.LoadKeeping(filepath.Join(dir, "deskd.yaml"), nil) // as deskd run loads it
	if err != nil {
		t.Fatal(err)
	}
	edit(loaded.Config)
	r := &daemonRun{
		t: t, dir: dir, clk: clock.NewFake(start), sigs: make(chan os.Signal, 8), done: make(chan error, 1),
		events: make(chan event.Event, 10000), notes: make(chan string, 1000), log: &syncBuffer{},
		front: &fakeFrontend{errs: make(chan error, 1)}, levels: make(chan zerolog.Level, 10),
	}
	bus := event.New()
	event.SubscribeAll(bus, func(e event.Event) { r.events <- e }) // ends when the daemon closes the bus
	o := desk.DaemonOptions{
		Config: loaded.Config, Rejected: loaded.Rejected, Clock: r.clk, Bus: bus, Log: zerolog.New(r.log), Level: levelFunc(func(l zerolog.Level) { r.levels <- l }),
		Notify: fakeNotifier{r.notes},
		Serve: func(_ context.Context, set *desk.Set, check func() desk.ConfigCheck) (desk.Frontend, error) {
			return r.front.serve(set, check), nil
		},
		ReleaseSignals: func() { r.released.Add(1) },
	}
	opts(&o, r)
	r.d, err = desk.NewDaemon(o)
	if err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.d.Run(t.Context(), r.sigs) }()
	t.Cleanup(func() {
		if !r.stopped {
			r.sigs <- syscall.SIGTERM
			r.wait()
		}
	})
	select {
	case <-r.d.Ready():
	case err := <-r.done:
		r.stopped = true
		t.Fatalf("the daemon stopped before it was ready: %v\n%s", err, r.log)
	case <-time.After(10 * time.Second):
		t.Fatalf("the daemon was not ready within 10s\n%s", r.log)
	}
	return r
}

// wait waits for Run to return, and returns its error.
func (r *daemonRun) wait() error {
	r.t.Helper()
	select {
	case err := <-r.done:
		r.stopped = true
		return err
	case <-time.After(20 * time.Second):
		r.t.Fatalf("the daemon did not stop within 20s\n%s", r.log)
		return nil
	}
}

// signal sends sig to the daemon.
func (r *daemonRun) signal(sig os.Signal) { r.sigs <- sig }

// stop sends SIGTERM and checks that the daemon stops cleanly, with
// "deskd stopped" its last line.
func (r *daemonRun) stop() {
	r.t.Helper()
	r.signal(syscall.SIGTERM)
	if err := r.wait(); err != nil {
		r.t.Fatalf("Run = %v, want nil\n%s", err, r.log)
	}
	if last := r.log.lastMessage(); last != "deskd stopped" {
		r.t.Errorf("the last log line is %q, want \"deskd stopped\"\n%s", last, r.log)
	}
}

// expectEvent reads the run's events until one of type E that ok
// accepts, and returns it, failing the test after 10s. Every event read
// is kept in r.seen.
func expectEvent[E event.Event](r *daemonRun, ok func(E) bool) E {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-r.events:
			r.seen = append(r.seen, e)
			if x, is := e.(E); is && (ok == nil || ok(x)) {
				return x
			}
		case <-deadline:
			var zero E
			r.t.Fatalf("no %s event within 10s\n%s", zero.Topic(), r.log)
			return zero
		}
	}
}

// expectNote waits for the daemon to tell its Notifier a message that
// starts with prefix, and returns it.
func (r *daemonRun) expectNote(prefix string) string {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case n := <-r.notes:
			if strings.HasPrefix(n, prefix) {
				return n
			}
		case <-deadline:
			r.t.Fatalf("no notification %q within 10s\n%s", prefix, r.log)
			return ""
		}
	}
}

// stoppedDesks returns the desks of the desk.stopped events read so far
// (r.seen), with their reasons.
func (r *daemonRun) stoppedDesks() []string {
	var out []string
	for _, e := range r.seen {
		if s, ok := e.(event.DeskStopped); ok {
			out = append(out, s.Desk+": "+s.Reason)
		}
	}
	return out
}

// submit submits a manual trigger to the running desk name.
func (r *daemonRun) submit(name, id, text string) {
	r.t.Helper()
	d, ok := r.d.Set().Get(name)
	if !ok {
		r.t.Fatalf("desk %s is not in the set %v", name, r.d.Set().Names())
	}
	if _, err := d.Submit(triggers.Trigger{ID: id, Kind: triggers.Manual, Text: text, Source: "test"}); err != nil {
		r.t.Fatalf("Submit %s to %s: %v", id, name, err)
	}
}

// turn submits a trigger to desk name and returns its completed turn.
func (r *daemonRun) turn(name, id string) event.TurnCompleted {
	r.t.Helper()
	r.submit(name, id, "Check the tape.")
	return expectEvent(r, func(e event.TurnCompleted) bool { return e.Trigger == id })
}

// fakeNotifier sends what the daemon tells systemd to notes, as
// "<kind>: <status>".
type fakeNotifier struct{ notes chan<- string }

func (n fakeNotifier) note(kind, status string) error { n.notes <- kind + ": " + status; return nil }

func (n fakeNotifier) Ready(s string) error     { return n.note("ready", s) }
func (n fakeNotifier) Reloading(s string) error { return n.note("reloading", s) }
func (n fakeNotifier) Stopping(s string) error  { return n.note("stopping", s) }
func (n fakeNotifier) Status(s string) error    { return n.note("status", s) }
func (n fakeNotifier) Watchdog(context.Context, func() bool) error {
	return errors.New("no watchdog in these tests")
}

// levelFunc is a desk.LevelSetter.
type levelFunc func(zerolog.Level)

func (f levelFunc) Set(l zerolog.Level) { f(l) }

// fakeFrontend is a front end that records what the daemon does with it,
// and what the set held at each step.
type fakeFrontend struct {
	errs chan error

	mu           sync.Mutex
	set          *desk.Set
	check        func() desk.ConfigCheck
	servedDesks  []string // the set when Serve was called
	refusedAlive int      // the desks still running when Refuse was called
	stoppedAlive int      // the desks still running when Stop was called
	calls        []string
}

func (f *fakeFrontend) serve(set *desk.Set, check func() desk.ConfigCheck) *fakeFrontend {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set, f.check, f.servedDesks = set, check, set.Names()
	f.calls = append(f.calls, "serve")
	return f
}

// alive counts the desks of the set whose loop has not returned.
func (f *fakeFrontend) alive() int {
	n := 0
	for _, d := range f.set.List() {
		select {
		case <-d.Done():
		default:
			n++
		}
	}
	return n
}

func (f *fakeFrontend) Refuse() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refusedAlive = f.alive()
	f.calls = append(f.calls, "refuse")
}

func (f *fakeFrontend) Stop(time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stoppedAlive = f.alive()
	f.calls = append(f.calls, "stop")
	return nil
}

func (f *fakeFrontend) Errs() <-chan error { return f.errs }

// syncBuffer is a log buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lastMessage returns the message of the last log line.
func (s *syncBuffer) lastMessage() string {
	lines := strings.Split(strings.TrimSpace(s.String()), "\n")
	var l struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &l)
	return l.Message
}

// hasMessage reports whether a log line has the message msg.
func (s *syncBuffer) hasMessage(msg string) bool {
	return strings.Contains(s.String(), fmt.Sprintf("%q:%q", "message", msg))
}

// TestDaemonStartsAndStopsInOrder: the daemon starts every desk before
// its front end, says so to systemd, runs turns, and on SIGTERM refuses
// triggers while the desks still run, stops them, stops the front end
// only then, unlocks the state folder and logs "deskd stopped" last.
func TestDaemonStartsAndStopsInOrder(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"fx": daemonDesk("offline"), "rates": daemonDesk("offline")})
	r := startDaemon(t, dir)
	if got := r.expectNote("status: "); got != "status: starting 2 desks: fx, rates" {
		t.Errorf("first notification %q", got)
	}
	if got := r.expectNote("ready: "); got != "ready: running 2 desks: fx, rates" {
		t.Errorf("ready notification %q", got)
	}
	if got := r.front.servedDesks; !slices.Equal(got, []string{"fx", "rates"}) {
		t.Errorf("the front end was started with the desks %v, want both started first", got)
	}
	if got := r.d.Set().Names(); !slices.Equal(got, []string{"fx", "rates"}) {
		t.Errorf("Set().Names() = %v", got)
	}
	if c := r.turn("fx", "t1"); c.Desk != "fx" || c.Model != "offline" || !c.Scripted {
		t.Errorf("fx's turn = %+v", c)
	}
	if _, err := memory.LockStateDir(filepath.Join(dir, "state"), start); err == nil {
		t.Error("a second lock of the state folder succeeded while the daemon runs")
	}

	r.stop()
	if got := r.expectNote("stopping: "); !strings.Contains(got, "no new triggers") {
		t.Errorf("stopping notification %q", got)
	}
	stopped := map[string]string{}
	for len(stopped) < 2 {
		e := expectEvent(r, func(event.DeskStopped) bool { return true })
		stopped[e.Desk] = e.Reason
	}
	for name, reason := range stopped {
		if !strings.Contains(reason, "deskd is shutting down") {
			t.Errorf("desk %s stopped: %q", name, reason)
		}
	}
	f := r.front
	if !slices.Equal(f.calls, []string{"serve", "refuse", "stop"}) || f.refusedAlive != 2 || f.stoppedAlive != 0 {
		t.Errorf("front end calls %v, desks running at Refuse %d and at Stop %d; want serve, refuse with 2 running, stop with none",
			f.calls, f.refusedAlive, f.stoppedAlive)
	}
	lock, err := memory.LockStateDir(filepath.Join(dir, "state"), start)
	if err != nil {
		t.Fatalf("the state folder is still locked after the daemon stopped: %v", err)
	}
	_ = lock.Release()
	if r.released.Load() != 0 {
		t.Error("one signal made the daemon let go of the signals")
	}
	for _, msg := range []string{"deskd starting", "deskd stopping: the API refuses triggers, schedules stop, running turns get the shutdown timeout"} {
		if !r.log.hasMessage(msg) {
			t.Errorf("no log line %q\n%s", msg, r.log)
		}
	}
}

// TestDaemonSIGHUPAppliesAChangedDeskFile: SIGHUP reloads; a changed desk
// takes its new settings between turns, without a restart; Check, before,
// says what the reload will change.
func TestDaemonSIGHUPAppliesAChangedDeskFile(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"main": daemonDesk("offline")})
	r := startDaemon(t, dir)
	if c := r.turn("main", "before"); c.Model != "offline" {
		t.Fatalf("the turn before the edit ran on %s", c.Model)
	}
	writeConfigFile(t, dir, "desks.d/main.yaml", daemonDesk("other"))
	chk := r.d.Check()
	if len(chk.Problems) != 0 || len(chk.Changes) != 1 || chk.Changes[0].What != "desk main: model changed from offline to other" ||
		chk.Config != filepath.Join(dir, "deskd.yaml") {
		t.Errorf("Check() before the reload = %+v", chk)
	}

	r.signal(syscall.SIGHUP)
	r.expectNote("reloading: reloading the config: SIGHUP")
	e := expectEvent(r, func(event.ConfigReloaded) bool { return true })
	if !slices.Equal(e.Changes, []string{"desk main: model changed from offline to other"}) {
		t.Errorf("config.reloaded changes = %q", e.Changes)
	}
	r.expectNote("ready: running 1 desk: main")
	if c := r.turn("main", "after"); c.Model != "other" {
		t.Errorf("the turn after the reload ran on %s, want the new model other", c.Model)
	}
	if chk := r.d.Check(); len(chk.Changes) != 0 || len(chk.Problems) != 0 {
		t.Errorf("Check() after the reload = %+v, want nothing to change", chk)
	}
	if got := r.stoppedDesks(); len(got) > 0 {
		t.Errorf("desks stopped for the reload: %q, want the change taken without a restart", got)
	}
	r.stop()
}

// TestDaemonReloadKeepsTheStateDirFlag: with deskd run --state-dir, a
// reload keeps the folder of the flag and does not report the file's
// state_dir as a change waiting for a restart.
func TestDaemonReloadKeepsTheStateDirFlag(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"main": daemonDesk("offline")})
	flag := t.TempDir()
	r := startDaemonWith(t, dir, func(c *config.Config) { c.StateDir, c.StateDirOverridden = flag, true })
	writeConfigFile(t, dir, "desks.d/main.yaml", daemonDesk("other"))
	if chk := r.d.Check(); len(chk.Changes) != 1 || chk.Changes[0].What != "desk main: model changed from offline to other" {
		t.Errorf("Check() = %+v, want the model change alone", chk)
	}
	r.signal(syscall.SIGHUP)
	e := expectEvent(r, func(event.ConfigReloaded) bool { return true })
	if !slices.Equal(e.Changes, []string{"desk main: model changed from offline to other"}) {
		t.Errorf("config.reloaded changes = %q, want the model change alone", e.Changes)
	}
	if c := r.turn("main", "after"); c.Model != "other" {
		t.Errorf("the turn after the reload ran on %s, want other", c.Model)
	}
	if _, err := os.Stat(filepath.Join(flag, "desks", "main")); err != nil {
		t.Errorf("the desk's folder is not under the flag's state folder: %v", err)
	}
	r.stop()
}

// TestDaemonReloadsOnFileChange: an edit of the config files is reloaded
// once the watcher's debounce has passed on deskd's clock; a log level
// change takes effect at once.
func TestDaemonReloadsOnFileChange(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"main": daemonDesk("offline")})
	r := startDaemon(t, dir)
	writeConfigFile(t, dir, "deskd.yaml", strings.Replace(daemonMain, "level: info", "level: debug", 1))
	// The watcher arms its debounce on deskd's clock once fsnotify has
	// told it: move the clock by a debounce while no reload comes.
	var e event.ConfigReloaded
	deadline := time.After(10 * time.Second)
	for reloaded := false; !reloaded; {
		select {
		case ev := <-r.events:
			e, reloaded = ev.(event.ConfigReloaded)
		case <-time.After(20 * time.Millisecond):
			r.clk.Advance(config.DefaultDebounce)
		case <-deadline:
			t.Fatalf("no config.reloaded within 10s of the edit\n%s", r.log)
		}
	}
	if !slices.Equal(e.Changes, []string{"log level changed from info to debug"}) {
		t.Errorf("config.reloaded changes = %q", e.Changes)
	}
	select {
	case l := <-r.levels:
		if l != zerolog.DebugLevel {
			t.Errorf("the log level was set to %v, want debug", l)
		}
	default:
		t.Error("the reload did not set the log level")
	}
	r.stop()
}

// TestDaemonRemovedDeskStops: a desk whose file is removed stops after
// its running turn and leaves the set; its files stay; the others run on.
func TestDaemonRemovedDeskStops(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"fx": daemonDesk("offline"), "rates": daemonDesk("offline")})
	r := startDaemon(t, dir)
	r.turn("rates", "r1")
	if err := os.Remove(filepath.Join(dir, "desks.d", "rates.yaml")); err != nil {
		t.Fatal(err)
	}
	r.signal(syscall.SIGHUP)
	s := expectEvent(r, func(e event.DeskStopped) bool { return e.Desk == "rates" })
	if !strings.Contains(s.Reason, "desk file was removed") {
		t.Errorf("desk.stopped reason = %q", s.Reason)
	}
	e := expectEvent(r, func(event.ConfigReloaded) bool { return true })
	if !slices.Equal(e.Changes, []string{"desk rates: desk removed"}) {
		t.Errorf("config.reloaded changes = %q", e.Changes)
	}
	if got := r.d.Set().Names(); !slices.Equal(got, []string{"fx"}) {
		t.Errorf("the set after the removal = %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "desks", "rates", triggers.LedgerFile)); err != nil {
		t.Errorf("the removed desk's ledger: %v, want it kept", err)
	}
	r.turn("fx", "f1")
	r.stop()
}

// TestDaemonRestartsOneDesk: a change a running desk cannot take (its
// rollover) restarts that desk alone, on the new config; the other desk
// runs on untouched.
func TestDaemonRestartsOneDesk(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"fx": daemonDesk("offline"), "rates": daemonDesk("offline")})
	r := startDaemon(t, dir)
	r.expectNote("ready: ")
	writeConfigFile(t, dir, "desks.d/rates.yaml", daemonDesk("other")+"rollover: off\n")
	r.signal(syscall.SIGHUP)
	s := expectEvent(r, func(e event.DeskStopped) bool { return true })
	if s.Desk != "rates" || !strings.Contains(s.Reason, "restarting to apply a config change") {
		t.Fatalf("desk.stopped = %+v, want rates restarting", s)
	}
	if st := expectEvent(r, func(e event.DeskStarted) bool { return true }); st.Desk != "rates" || st.Model != "other" {
		t.Errorf("desk.started = %+v, want rates on other", st)
	}
	r.expectNote("status: running 2 desks: fx, rates") // the restart is over
	if !r.log.hasMessage("desk restarted on its new config") {
		t.Errorf("no log line of the restart\n%s", r.log)
	}
	if c := r.turn("rates", "r1"); c.Model != "other" {
		t.Errorf("rates' turn after the restart ran on %s", c.Model)
	}
	r.turn("fx", "f1")
	if got := r.stoppedDesks(); !slices.Equal(got, []string{"rates: " + s.Reason}) {
		t.Errorf("desks stopped by the reload: %q, want rates alone", got)
	}
	r.stop()
}

// TestDaemonRejectedConfigKeepsTheLastGood: a desk file that does not
// validate is refused with its file, field and reason; its desk keeps
// running on its last good config.
func TestDaemonRejectedConfigKeepsTheLastGood(t *testing.T) {
	dir := daemonConfig(t, "", map[string]string{"main": daemonDesk("offline")})
	r := startDaemon(t, dir)
	r.expectNote("ready: ")
	deskFile := filepath.Join(dir, "desks.d", "main.yaml")
	writeConfigFile(t, dir, "desks.d/main.yaml", daemonDesk("missing"))
	if chk := r.d.Check(); len(chk.Problems) != 1 || !strings.HasPrefix(chk.Problems[0], deskFile+": model: ") || len(chk.Changes) != 0 {
		t.Errorf("Check() = %+v, want the one problem", chk)
	}
	r.signal(syscall.SIGHUP)
	rej := expectEvent(r, func(event.ConfigRejected) bool { return true })
	if rej.Path != deskFile || rej.Field != "model" || !strings.Contains(rej.Reason, "missing") || rej.Desk != "main" {
		t.Errorf("config.rejected = %+v", rej)
	}
	if got := r.expectNote("ready: "); got != "ready: running 1 desk: main; desk files refused: main (on its last good config)" {
		t.Errorf("ready notification after the rejection %q", got)
	}
	if c := r.turn("main", "after"); c.Model != "offline" {
		t.Errorf("the turn after the rejection ran on %s, want the old offline", c.Model)
	}
	// A fix is taken by the next reload.
	writeConfigFile(t, dir, "desks.d/main.yaml", daemonDesk("other"))
	r.signal(syscall.SIGHUP)
	if e := expectEvent(r, func(event.ConfigReloaded) bool { return true }); !slices.Equal(e.Changes, []string{"desk main: model changed from offline to other"}) {
		t.Errorf("config.reloaded after the fix = %q", e.Changes)
	}
	r.stop()
}

// holdingModel is a Chat Completions server whose every request waits
// until it is cancelled: a turn that runs until the daemon cuts it short.
type holdingModel struct {
	srv      *httptest.Server
	arrivals chan struct{}
}

func newHoldingModel(t *testing.T) *holdingModel {
	m := &holdingModel{arrivals: make(chan struct{}, 100)}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server notices a closed connection once the body is read
		m.arrivals <- struct{}{}
		<-r.Context().Done()
	}))
	t.Cleanup(func() {
		m.srv.CloseClientConnections()
		m.srv.Close()
	})
	return m
}

// TestDaemonSecondSignalCutsTheTurnShort: the first SIGTERM lets a
// running turn go on (shutdown_timeout is 5m, never reached on the fake
// clock); the second cuts it short, recorded interrupted, and the daemon
// lets go of the signals so that a third would end the process.
func TestDaemonSecondSignalCutsTheTurnShort(t *testing.T) {
	m := newHoldingModel(t)
	t.Setenv("DESKD_TEST_KEY", "test-key")
	main := strings.Replace(daemonMain, "  other: {provider: scripted}\n",
		fmt.Sprintf("  held: {provider: openai, base_url: %q, model: fake, api_key_env: DESKD_TEST_KEY, timeout: 60s}\n", m.srv.URL+"/v1"), 1)
	dir := daemonConfig(t, main, map[string]string{"main": daemonDesk("held")})
	r := startDaemon(t, dir)
	r.submit("main", "hold", "Hold the book.")
	select {
	case <-m.arrivals:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn never reached the model")
	}
	r.signal(syscall.SIGTERM)
	r.expectNote("stopping: ")
	select {
	case err := <-r.done:
		r.stopped = true
		t.Fatalf("the daemon stopped (%v) with a turn running, before shutdown_timeout", err)
	default:
	}
	r.signal(syscall.SIGTERM)
	in := expectEvent(r, func(e event.TurnInterrupted) bool { return e.Trigger == "hold" })
	if !strings.Contains(in.Reason, "second signal") {
		t.Errorf("turn.interrupted reason = %q", in.Reason)
	}
	if err := r.wait(); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if n := r.released.Load(); n != 1 {
		t.Errorf("ReleaseSignals called %d times, want once", n)
	}
	if !r.log.hasMessage("second signal: running turns are cancelled now and recorded interrupted") || r.log.lastMessage() != "deskd stopped" {
		t.Errorf("log:\n%s", r.log)
	}
	l, err := triggers.OpenLedger(filepath.Join(dir, "state", "desks", "main", triggers.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if it, ok := l.Get("hold"); !ok || it.State != triggers.StateInterrupted {
		t.Errorf("the ledger has the held trigger %+v, %v; want it interrupted", it, ok)
	}
}
