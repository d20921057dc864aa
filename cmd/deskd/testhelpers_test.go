package main

// Helpers for the end-to-end tests: build the deskd binary once, run it as
// a child process with a config in t.TempDir() (or in process:
// inprocess_test.go), follow its JSON log lines on stderr, and make sure it
// has ended before the test does; call its API (deskdProc.call, post,
// trigger), run the CLI in process (deskdCLI), follow its event stream
// (followSSE) and be its NOTIFY_SOCKET (listenSdNotify).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/logtest"
	"github.com/deskd/deskd/desk/mcptest"
	"github.com/deskd/deskd/desk/testport"
	"github.com/deskd/deskd/desk/testtmp"
	"github.com/deskd/deskd/memory/memorytest"
)

// The binary is built at most once per test binary, the first time an
// end-to-end test asks for it, and removed by TestMain.
var (
	buildOnce sync.Once
	buildDir  string
	buildPath string
	buildErr  error
)

// testClient is the tests' HTTP client. It keeps no connection once an
// answer is read: a test's daemons come and go on one address, and a
// pooled connection to one that has stopped would fail the next POST to
// its successor with EOF (a request with a body is not retried on a
// reused connection).
var testClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// farZone is the local time zone of the tests: far from Asia/Kolkata.
const farZone = "America/New_York"

func TestMain(m *testing.M) {
	// The MCP tests' stdio server is this binary, started again by deskd.
	if mcptest.ServeStdioIfAsked() {
		return
	}
	// The host's zone must not leak into trading dates: the daemons run in
	// this process see a zone far from Asia/Kolkata, as the binaries do
	// (startDeskdEnv sets TZ for them). It is set through TZ, for the whole
	// process from its first instruction, by starting the test binary
	// again: writing time.Local here would race with the goroutines that
	// read it from the start (nats-server's, embedded by the NATS tests).
	if os.Getenv("TZ") != farZone {
		if _, err := time.LoadLocation(farZone); err != nil {
			fmt.Fprintln(os.Stderr, "load "+farZone+":", err)
			os.Exit(2)
		}
		exe, err := os.Executable()
		if err == nil {
			env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TZ=") })
			err = syscall.Exec(exe, os.Args, append(env, "TZ="+farZone)) // returns only on failure
		}
		fmt.Fprintln(os.Stderr, "start the tests again with TZ="+farZone+":", err)
		os.Exit(2)
	}
	code := testtmp.Run(m) // the scratch folders on a tmpfs, once TZ is set
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// builtWithRace reports whether this test binary was built with -race; the
// daemon under test is then built with -race too, so that the end-to-end
// tests also hunt data races in the real process.
func builtWithRace() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// deskdBinary skips the test under -short, and otherwise returns the path
// of the deskd binary built from this package.
func deskdBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test of the built deskd binary: skipped under -short")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "deskd-e2e-")
		if buildErr != nil {
			return
		}
		buildPath = filepath.Join(buildDir, "deskd")
		// -buildvcs=auto overrides a GOFLAGS=-buildvcs=false of the
		// machine's go env, so that deskd version has a revision to show.
		args := []string{"build", "-buildvcs=auto", "-o", buildPath}
		if builtWithRace() {
			args = append(args, "-race")
		}
		args = append(args, ".")
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build deskd: %v", buildErr)
	}
	return buildPath
}

// pickFreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// below the ephemeral range, so that no outgoing connection takes it
// while a deskd restarts on it (testport.Free).
func pickFreePort(t *testing.T) int { return testport.Free(t) }

// writeTestFile writes text to dir/name, making folders as needed, and returns
// the file's path (memorytest.Write).
func writeTestFile(t testing.TB, dir, name, text string) string {
	t.Helper()
	return memorytest.Write(t, dir, name, text)
}

// replaceInFile replaces the first old in the file at path with new, and
// returns what the file held before. It fails the test if the file does
// not hold old.
func replaceInFile(t testing.TB, path, old, new string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before := string(b)
	if !strings.Contains(before, old) {
		t.Fatalf("no %q in %s:\n%s", old, path, before)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(before, old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return before
}

// writeTestFiles writes each file of files (name: text) into dir, as
// writeTestFile does.
func writeTestFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		writeTestFile(t, dir, name, text)
	}
}

// e2eSetup is one config in a temporary folder.
type e2eSetup struct {
	Config   string // the main file
	StateDir string // the state folder it names
	Desk     string // the one desk's name
}

// DeskDir returns the desk's folder in the state dir.
func (s e2eSetup) DeskDir() string { return filepath.Join(s.StateDir, "desks", s.Desk) }

// SessionFile returns the path of a session file of the desk.
func (s e2eSetup) SessionFile(id string) string {
	return filepath.Join(s.DeskDir(), "sessions", id+".jsonl")
}

// newE2ESetup writes deskd.yaml (state_dir relative to it, a free port, the
// offline scripted model) and desks.d/main.yaml with the given schedules
// block (YAML list items, or "" for none) into t.TempDir().
func newE2ESetup(t *testing.T, schedules string) e2eSetup {
	t.Helper()
	dir := t.TempDir()
	cfg := writeE2EMain(t, dir, "")
	desk := "model: offline\ninstructions: |\n  You run the main desk. Keep notes of what you learn.\n"
	if schedules != "" {
		desk += "schedules:\n" + schedules
	}
	writeTestFile(t, dir, filepath.Join("desks.d", "main.yaml"), desk)
	return e2eSetup{Config: cfg, StateDir: filepath.Join(dir, "state"), Desk: "main"}
}

// writeE2EMain writes newE2ESetup's dir/deskd.yaml (state_dir state
// relative to it, a free port, the offline scripted model), with
// moreModels (lines of the models block, each indented two spaces) after
// offline, and returns its path.
func writeE2EMain(t *testing.T, dir, moreModels string) string {
	t.Helper()
	return writeTestFile(t, dir, "deskd.yaml", fmt.Sprintf(`state_dir: state
timezone: Asia/Kolkata
rollover_at: "00:00"
listen: 127.0.0.1:%d
log: {level: info, format: json}
shutdown_timeout: 20s
models:
  offline: {provider: scripted}
`, pickFreePort(t))+moreModels)
}

// everyMinuteSchedule is a schedules block that fires "Check the tape." each minute.
const everyMinuteSchedule = `  - name: every-minute
    cron: "* * * * *"
    text: "Check the tape."
`

// stderrLine is one line deskd wrote to stderr.
type stderrLine struct {
	Raw    string
	Fields map[string]any // nil unless the line is a JSON object
}

// Str returns the string field key, or "".
func (l stderrLine) Str(key string) string {
	s, _ := l.Fields[key].(string)
	return s
}

// Num returns the numeric field key, or -1.
func (l stderrLine) Num(key string) float64 {
	if n, ok := l.Fields[key].(float64); ok {
		return n
	}
	return -1
}

// Event returns the bus topic of an event line, or "".
func (l stderrLine) Event() string { return l.Str("event") }

// lineRecorder is an io.Writer that splits what it is given into lines. Readers
// take a snapshot of the lines and a channel closed at the next change.
type lineRecorder struct {
	mu      sync.Mutex
	partial []byte
	lines   []stderrLine
	changed chan struct{}
}

func newLineRecorder() *lineRecorder { return &lineRecorder{changed: make(chan struct{})} }

func (w *lineRecorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.addLocked(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
		added = true
	}
	if added {
		w.notifyLocked()
	}
	return len(p), nil
}

// flush keeps a last line that had no '\n'.
func (w *lineRecorder) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.addLocked(string(w.partial))
		w.partial = nil
		w.notifyLocked()
	}
}

func (w *lineRecorder) addLocked(raw string) {
	l := stderrLine{Raw: raw}
	var fields map[string]any
	if json.Unmarshal([]byte(raw), &fields) == nil {
		l.Fields = fields
	}
	w.lines = append(w.lines, l)
}

func (w *lineRecorder) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// snapshot returns the lines so far and a channel closed when more come.
// The returned slice is never written to again.
func (w *lineRecorder) snapshot() ([]stderrLine, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lines[:len(w.lines):len(w.lines)], w.changed
}

func (w *lineRecorder) String() string {
	lines, _ := w.snapshot()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// dumpLines is how many of a daemon's last lines a failing test prints:
// CI shows the tail of the run, and a whole log above the failure's
// message would push that message out of it.
const dumpLines = 40

// tail returns the last n lines, after a line that counts those left
// out.
func (w *lineRecorder) tail(n int) string {
	lines, _ := w.snapshot()
	var b strings.Builder
	if len(lines) > n {
		fmt.Fprintf(&b, "(%d earlier lines left out)\n", len(lines)-n)
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		b.WriteString(l.Raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// deskdProc is one deskd process started by a test.
type deskdProc struct {
	name   string
	cmd    *exec.Cmd
	stderr *lineRecorder
	stdout *lineRecorder
	exited chan struct{} // closed once the process has ended and its output is read
	next   int           // waitFor's cursor into stderr's lines
	dumped bool          // the log was already printed in a failure
	in     *inProcess    // set when the daemon runs in this process (inprocess_test.go), cmd nil
	addr   string        // http://host:port of the first TCP listener, once waitReady has seen "deskd ready"
}

// signal sends sig to deskd: to the process, or on the channel of an
// in-process daemon.
func (d *deskdProc) signal(sig os.Signal) error {
	if d.in != nil {
		d.in.sigs <- sig
		return nil
	}
	return d.cmd.Process.Signal(sig)
}

// exitCode is deskd's exit code once it has exited (-1 if a signal ended
// the process).
func (d *deskdProc) exitCode() int {
	if d.in != nil {
		return d.in.code
	}
	return d.cmd.ProcessState.ExitCode()
}

// state describes how deskd ended, for failure messages.
func (d *deskdProc) state() string {
	if d.in != nil {
		return fmt.Sprintf("exit %d: %v", d.in.code, d.in.err)
	}
	return fmt.Sprint(d.cmd.ProcessState)
}

// kill ends deskd at once: the process with SIGKILL; an in-process daemon
// through its context.
func (d *deskdProc) kill() {
	if d.in != nil {
		d.in.cancel()
		return
	}
	_ = d.cmd.Process.Kill()
}

// startDeskd starts the binary with args. The process is tied to the
// test: when the test ends it is sent SIGTERM, killed if it has not
// exited 15s later, and waited for, before the test returns.
func startDeskd(t testing.TB, name string, args ...string) *deskdProc {
	t.Helper()
	return startDeskdEnv(t, name, nil, args...)
}

// startDeskdEnv is startDeskd with more environment variables for the
// process (NAME=value).
func startDeskdEnv(t testing.TB, name string, env []string, args ...string) *deskdProc {
	t.Helper()
	bin := deskdBinary(t)
	d := &deskdProc{name: name, stderr: newLineRecorder(), stdout: newLineRecorder(), exited: make(chan struct{})}
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	cmd.Stdout, cmd.Stderr = d.stdout, d.stderr
	// The host's zone must not leak into trading dates: run under a zone
	// far from Asia/Kolkata.
	cmd.Env = append(append(os.Environ(), "TZ=America/New_York"), env...)
	d.cmd = cmd
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = cmd.Wait() // the exit status is read from cmd.ProcessState
		d.stderr.flush()
		d.stdout.flush()
		close(d.exited)
	}()
	t.Cleanup(func() {
		// t.Context() is cancelled by now: cmd.Cancel has sent SIGTERM.
		<-d.exited
		if t.Failed() && !d.dumped {
			t.Logf("%s stderr, the end:\n%s", d.name, d.stderr.tail(dumpLines))
		}
		d.checkRaces(t)
	})
	return d
}

// Pid returns the process id.
func (d *deskdProc) Pid() int { return d.cmd.Process.Pid }

// checkRaces fails the test if the race detector reported in the daemon.
func (d *deskdProc) checkRaces(t testing.TB) {
	t.Helper()
	if s := d.stderr.String(); strings.Contains(s, "WARNING: DATA RACE") {
		t.Errorf("%s: the race detector reported a data race:\n%s", d.name, raceReports(s))
	}
}

// raceReports returns the race detector's reports in a daemon's stderr,
// each from its WARNING line to the line of '=' that ends it, without the
// log lines around them.
func raceReports(stderr string) string {
	var b strings.Builder
	in := false
	for line := range strings.Lines(stderr) {
		if strings.HasPrefix(line, "WARNING: DATA RACE") {
			in = true
		}
		if in {
			b.WriteString(line)
		}
		if in && strings.HasPrefix(line, "==================") {
			in = false
		}
	}
	return b.String()
}

// unexpectedLine reports lines that end a wait early: failures the tests never
// expect, a panic, or a data race.
func unexpectedLine(l stderrLine) bool {
	switch l.Event() {
	case "turn.failed", "turn.interrupted", "rollover.failed", "trigger.dropped", "config.rejected":
		return true
	}
	return l.Str("level") == "error" || l.Str("level") == "fatal" || l.Str("level") == "panic" ||
		strings.HasPrefix(l.Raw, "panic:") || strings.HasPrefix(l.Raw, "fatal error:") ||
		strings.Contains(l.Raw, "WARNING: DATA RACE")
}

// fail ends the test with why, and the lines the daemon wrote so far.
func (d *deskdProc) fail(t testing.TB, format string, args ...any) {
	t.Helper()
	d.dumped = true
	why := fmt.Sprintf(format, args...)
	// The reason again after the lines, which CI's tail of the output shows.
	t.Fatalf("%s: %s\nstderr so far, the end:\n%sstdout so far, the end:\n%s%s: %s", d.name, why, d.stderr.tail(dumpLines), d.stdout.tail(dumpLines), d.name, why)
}

// waitFor returns the first line after the previous match that satisfies
// match. It fails the test at deadline, when the process exits first, or
// when an unexpectedLine comes first.
func (d *deskdProc) waitFor(t testing.TB, deadline time.Time, what string, match func(stderrLine) bool) stderrLine {
	t.Helper()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		lines, changed := d.stderr.snapshot()
		for ; d.next < len(lines); d.next++ {
			l := lines[d.next]
			if match(l) {
				d.next++
				return l
			}
			if unexpectedLine(l) {
				d.fail(t, "waiting for %s, got a failure first: %s", what, l.Raw)
			}
		}
		select {
		case <-changed:
		case <-d.exited:
			if lines, _ := d.stderr.snapshot(); len(lines) > d.next {
				continue // read what came with the exit
			}
			d.fail(t, "waiting for %s: deskd exited (%s)", what, d.state())
		case <-timer.C:
			d.fail(t, "waiting for %s: no such line by the deadline, %s", what, deadline.Format(time.RFC3339))
		}
	}
}

// count returns how many lines so far satisfy match.
func (d *deskdProc) count(match func(stderrLine) bool) int {
	lines, _ := d.stderr.snapshot()
	n := 0
	for _, l := range lines {
		if match(l) {
			n++
		}
	}
	return n
}

// wait waits for the process to exit and returns its exit code (-1 if a
// signal ended it). If it has not exited by timeout, it is killed and the
// test fails.
func (d *deskdProc) wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-d.exited:
	case <-timer.C:
		d.kill()
		<-d.exited
		d.fail(t, "did not exit within %v; killed", timeout)
	}
	return d.exitCode()
}

// stop sends sig and returns the exit code (see wait).
func (d *deskdProc) stop(t testing.TB, sig os.Signal, timeout time.Duration) int {
	t.Helper()
	if err := d.signal(sig); err != nil {
		d.fail(t, "send %v: %v", sig, err)
	}
	return d.wait(t, timeout)
}

// stopCleanly sends sig and fails the test unless deskd exits 0 and logs
// "deskd stopped".
func (d *deskdProc) stopCleanly(t testing.TB, sig os.Signal) {
	t.Helper()
	if code := d.stop(t, sig, 30*time.Second); code != 0 {
		d.fail(t, "exit status %d after %v, want 0", code, sig)
	}
	if d.count(logMessage("deskd stopped")) != 1 {
		d.fail(t, "no \"deskd stopped\" line after %v", sig)
	}
	lines, _ := d.stderr.snapshot()
	for _, l := range lines {
		if l.Fields == nil {
			d.fail(t, "a stderr line that is not JSON (log.format is json): %q", l.Raw)
		}
	}
}

// terminate sends SIGTERM and fails the test unless deskd stops cleanly
// (stopCleanly): the usual end of a test's daemon.
func (d *deskdProc) terminate(t testing.TB) {
	t.Helper()
	d.stopCleanly(t, syscall.SIGTERM)
}

// beginStop sends SIGTERM and waits for the "deskd stopping" line: the
// graceful stop has begun (running turns may finish; the API answers 503).
func (d *deskdProc) beginStop(t testing.TB, deadline time.Time) {
	t.Helper()
	if err := d.signal(syscall.SIGTERM); err != nil {
		d.fail(t, "send SIGTERM: %v", err)
	}
	d.waitFor(t, deadline, "deskd stopping", func(l stderrLine) bool { return strings.HasPrefix(l.Str("message"), "deskd stopping") })
}

// cutStopShort begins the graceful stop (beginStop) and sends a second
// SIGTERM, which cancels the running turns at once.
func (d *deskdProc) cutStopShort(t testing.TB, deadline time.Time) {
	t.Helper()
	d.beginStop(t, deadline)
	if err := d.signal(syscall.SIGTERM); err != nil {
		d.fail(t, "send a second SIGTERM: %v", err)
	}
}

// isEvent matches an event line of the topic whose string fields equal the
// given key, value pairs.
func isEvent(topic string, kv ...string) func(stderrLine) bool {
	return func(l stderrLine) bool {
		if l.Event() != topic {
			return false
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if l.Str(kv[i]) != kv[i+1] {
				return false
			}
		}
		return true
	}
}

// logMessage matches a line whose "message" is msg.
func logMessage(msg string) func(stderrLine) bool {
	return func(l stderrLine) bool { return l.Str("message") == msg }
}

// readSessionRecords returns the JSON lines of a session file, each decoded, and
// the file's raw content.
func readSessionRecords(t *testing.T, path string) ([]map[string]any, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read session file: %v", err)
	}
	var recs []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s line %d is not JSON (%v): %q", path, i+1, err, line)
		}
		recs = append(recs, r)
	}
	return recs, data
}

// parseTimeField parses an RFC3339 time field of a log line.
func parseTimeField(t *testing.T, l stderrLine, key string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, l.Str(key))
	if err != nil {
		t.Fatalf("field %s of %s: %v", key, l.Raw, err)
	}
	return at
}

// waitReady waits (60s) for the "deskd ready" line, wherever it is in the
// log (the cursor of waitFor does not move), and returns the
// http://host:port of deskd's first TCP listener, which call, post and
// trigger use. It fails the test if deskd exits first.
func (d *deskdProc) waitReady(t testing.TB) string {
	t.Helper()
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
	for {
		lines, changed := d.stderr.snapshot()
		for _, l := range lines {
			if l.Str("message") != "deskd ready" {
				continue
			}
			addrs, _ := l.Fields["listen"].([]any)
			for _, a := range addrs {
				if s, _ := a.(string); s != "" && !strings.HasPrefix(s, "unix:") {
					d.addr = "http://" + s
					return d.addr
				}
			}
			d.fail(t, "no TCP address in %s", l.Raw)
		}
		select {
		case <-changed:
		case <-d.exited:
			if more, _ := d.stderr.snapshot(); len(more) > len(lines) {
				continue // read what came with the exit
			}
			d.fail(t, "exited before deskd ready (%s)", d.state())
		case <-timeout.C:
			d.fail(t, "no deskd ready within 60s")
		}
	}
}

// URL returns the http://host:port of deskd's API (waitReady's).
func (d *deskdProc) URL(t testing.TB) string {
	t.Helper()
	if d.addr == "" {
		return d.waitReady(t)
	}
	return d.addr
}

// call sends a request to deskd's API, with the bearer token if one is
// given, and returns the status and the body. It fails the test if there
// is no answer within 60s (a long poll on a fake clock only ends when what
// it waits for happens).
func (d *deskdProc) call(t testing.TB, method, path, token, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, d.URL(t)+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		d.fail(t, "%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		d.fail(t, "%s %s: read the answer: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

// httpDo sends a request to url and returns the status and the body. It
// fails the test if there is no whole answer within 60s.
func httpDo(t testing.TB, method, url, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the answer: %v", method, url, err)
	}
	return resp.StatusCode, string(b)
}

// post sends a trigger to desk main without a token and returns the status
// and the answer.
func (d *deskdProc) post(t testing.TB, body string) (int, httpapi.TriggerResponse) {
	t.Helper()
	status, text := d.call(t, http.MethodPost, "/v1/desks/main/triggers", "", body)
	var out httpapi.TriggerResponse
	_ = json.Unmarshal([]byte(text), &out)
	return status, out
}

// trigger long-polls a trigger of desk main (?wait=30s: on deskd's clock,
// so in process until it is final) and returns it; it fails the test
// unless the answer is 200.
func (d *deskdProc) trigger(t testing.TB, id string) map[string]any {
	t.Helper()
	status, text := d.call(t, http.MethodGet, "/v1/desks/main/triggers/"+id+"?wait=30s", "", "")
	var out map[string]any
	_ = json.Unmarshal([]byte(text), &out)
	if status != http.StatusOK {
		d.fail(t, "GET trigger %s = %d %s", id, status, text)
	}
	return out
}

// deskdCLI runs a deskd command in process (run, as main does, without
// signals) and returns its exit code and what it wrote, stdout and stderr
// in the order written. The command ends if it runs past 60s.
func deskdCLI(t testing.TB, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var out syncBuffer
	code := run(ctx, args, &out, &out)
	return code, out.String()
}

// syncBuffer is what a command wrote, written from several goroutines.
type syncBuffer = logtest.Buffer

// sseFollower follows deskd's event stream (GET /v1/events), from the
// moment followSSE returns.
type sseFollower struct {
	events chan httpapi.Event // closed when the stream ends
	seen   []httpapi.Event    // what next has read, for failure messages
}

// followSSE opens GET /v1/events (with query, e.g. "?desk=main", and the
// bearer token if one is given) on deskd's API at base (http://host:port),
// fails the test unless deskd answers 200 with an event stream, and
// follows it until the test ends. Events published after followSSE
// returns are on the stream (the stream's cursor is taken before deskd
// answers).
func followSSE(t testing.TB, base, query, token string) *sseFollower {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/v1/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/events%s: %v", query, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		t.Fatalf("GET /v1/events%s = %d %s %s, want 200 text/event-stream", query, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	f := &sseFollower{events: make(chan httpapi.Event, 10000)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(f.events)
		_ = httpapi.ReadEvents(resp.Body, func(e httpapi.Event) {
			select {
			case f.events <- e:
			default: // nobody reads any more: drop
			}
		}, func(string) {}) // comments: a ping, events missed
	}()
	t.Cleanup(func() { resp.Body.Close(); <-done })
	return f
}

// next returns the next event of topic whose data contains text, failing
// the test if the stream ends first or none comes within 30s.
func (f *sseFollower) next(t testing.TB, topic, text string) httpapi.Event {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case e, ok := <-f.events:
			if !ok {
				t.Fatalf("the event stream ended before a %s event with %q; it carried %v", topic, text, f.seen)
			}
			f.seen = append(f.seen, e)
			if e.Topic == topic && strings.Contains(e.Data, text) {
				return e
			}
		case <-timeout.C:
			t.Fatalf("no %s event with %q within 30s; the stream carried %v", topic, text, f.seen)
		}
	}
}

// sdNotifyListener is a NOTIFY_SOCKET, as systemd makes one: a unixgram
// socket at path whose datagrams the test reads in order.
type sdNotifyListener struct {
	path string
	msgs chan string
	read []string // every datagram next or nextWith returned or passed over
}

// listenSdNotify listens on a new NOTIFY_SOCKET until the test ends. Give
// its path to deskd: NOTIFY_SOCKET=path in a binary's environment
// (startDeskdEnv), or t.Setenv for a notifier in this process.
func listenSdNotify(t testing.TB) *sdNotifyListener {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	n := &sdNotifyListener{path: path, msgs: make(chan string, 10000)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				return
			}
			select {
			case n.msgs <- string(buf[:k]):
			default: // nobody reads any more: drop
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return n
}

// next returns the next datagram, failing the test if none comes within 30s.
func (n *sdNotifyListener) next(t testing.TB) string {
	t.Helper()
	return n.nextWith(t)
}

// nextWith returns the next datagram that has a line starting with one of
// wanted (any datagram if none is given), passing over the others;
// it fails the test if none comes within 30s.
func (n *sdNotifyListener) nextWith(t testing.TB, wanted ...string) string {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case m := <-n.msgs:
			n.read = append(n.read, m)
			if len(wanted) == 0 {
				return m
			}
			for _, line := range strings.Split(m, "\n") {
				for _, w := range wanted {
					if strings.HasPrefix(line, w) {
						return m
					}
				}
			}
		case <-timeout.C:
			t.Fatalf("no sd_notify datagram with %q within 30s; got:\n%s", wanted, strings.Join(n.read, "\n---\n"))
			return ""
		}
	}
}

// received returns every datagram read so far, in order.
func (n *sdNotifyListener) received() []string { return slices.Clone(n.read) }

// deskStarted waits for desk main's desk.started event.
func (d *deskdProc) deskStarted(t testing.TB, deadline time.Time) {
	t.Helper()
	d.waitFor(t, deadline, "desk.started", isEvent("desk.started", "desk", "main"))
}

// firstSession waits for desk main's first session (session.started,
// reason first) and returns its id, failing the test if it has none.
func (d *deskdProc) firstSession(t testing.TB, deadline time.Time) string {
	t.Helper()
	first := d.waitFor(t, deadline, "session.started reason first", isEvent("session.started", "desk", "main", "reason", "first"))
	id := first.Str("session")
	if id == "" {
		d.fail(t, "session.started without a session id: %s", first.Raw)
	}
	return id
}

// resumes waits for desk main's next session.started and reports an
// error (when says at which start) unless it resumes session id; it
// returns the line.
func (d *deskdProc) resumes(t testing.TB, deadline time.Time, when, id string) stderrLine {
	t.Helper()
	l := d.waitFor(t, deadline, "session.started", isEvent("session.started", "desk", "main"))
	if l.Str("reason") != "resumed" || l.Str("session") != id {
		t.Errorf("%s: %s\nwant session.started reason resumed, session %s", when, l.Raw, id)
	}
	return l
}

// startFirstSession runs deskd in process on s ("first deskd", its clock
// at the RFC3339 instant at) and waits for desk main's first session and
// then its desk.started; it returns the daemon and the session's id.
func startFirstSession(t *testing.T, deadline time.Time, s e2eSetup, at string) (*deskdProc, string) {
	t.Helper()
	d := startInProcess(t, "first deskd", s.Config, istTime(t, at))
	id := d.firstSession(t, deadline)
	d.deskStarted(t, deadline)
	return d, id
}

// startDeskStarted runs the deskd binary on s (run --config, its clock
// starting at the RFC3339 instant clockStart) and waits for desk main's
// desk.started.
func startDeskStarted(t *testing.T, deadline time.Time, name string, s e2eSetup, clockStart string) *deskdProc {
	t.Helper()
	d := startDeskd(t, name, "run", "--config", s.Config, "--clock-start", clockStart)
	d.deskStarted(t, deadline)
	return d
}
