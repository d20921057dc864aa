package main

// End-to-end tests: each runs deskd on a config in t.TempDir() and
// follows its JSON log lines. Most run the daemon in process on a fake
// clock (inprocess_test.go), moved to each instant the test waits for;
// those that need a real process (a second one on the lock, the real
// SIGINT, the version) build and run the binary, and are skipped under
// -short.

import (
	"bytes"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// istZone is the trading time zone of the tests' configs.
var istZone = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		panic(err)
	}
	return loc
}()

// TestE2EMidnightRollover runs a desk with an every-minute schedule across
// IST midnight: a turn at 23:59 in the first session, the rollover at the
// boundary (summary written, new session announced), and the 00:00 turn in
// the new session, whose first message carries the summary.
func TestE2EMidnightRollover(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	s := newE2ESetup(t, everyMinuteSchedule)
	d := startInProcess(t, "deskd", s.Config, istTime(t, "2026-03-01T23:58:57+05:30"))

	s1 := d.firstSession(t, deadline)
	d.deskStarted(t, deadline)

	// The 23:59 slot: a turn in the first session, of trading date 2026-03-01.
	d.at(t, "2026-03-01T23:59:00+05:30")
	turn1 := d.waitFor(t, deadline, "turn.completed in "+s1, isEvent("turn.completed", "session", s1))
	if at := parseTimeField(t, turn1, "at").In(istZone); at.Format("2006-01-02 15:04") != "2026-03-01 23:59" {
		t.Errorf("first turn at %v on deskd's clock, want during 2026-03-01 23:59 IST", at)
	}
	if turn1.Fields["scripted"] != true || turn1.Str("provider") != "scripted" {
		t.Errorf("turn.completed of the scripted model does not say so: %s", turn1.Raw)
	}

	// The boundary: summary, then the new session, and the 00:00 slot.
	d.at(t, "2026-03-02T00:00:00+05:30")
	summarized := d.waitFor(t, deadline, "session.summarized of "+s1, isEvent("session.summarized", "session", s1))
	if got := summarized.Str("trading_date"); got != "2026-03-01" {
		t.Errorf("session.summarized trading_date = %q, want 2026-03-01", got)
	}
	rolled := d.waitFor(t, deadline, "session.started reason daily_rollover",
		isEvent("session.started", "desk", "main", "reason", "daily_rollover"))
	s2 := rolled.Str("session")
	summaryFile := filepath.Join(s.DeskDir(), "summaries", "2026-03-01.md")
	if s2 == "" || s2 == s1 {
		t.Errorf("daily_rollover session = %q, want a new id (the old one is %s)", s2, s1)
	}
	if got := rolled.Str("previous"); got != s1 {
		t.Errorf("daily_rollover previous = %q, want %s", got, s1)
	}
	if got := rolled.Str("summary_path"); got != summaryFile {
		t.Errorf("daily_rollover summary_path = %q, want %s", got, summaryFile)
	}
	if at := parseTimeField(t, rolled, "at").In(istZone); at.Format("2006-01-02") != "2026-03-02" {
		t.Errorf("rollover at %v on deskd's clock, want on 2026-03-02 IST", at)
	}
	summary, err := os.ReadFile(summaryFile)
	if err != nil {
		d.fail(t, "the rollover was announced but its summary is not there: %v", err)
	}
	if strings.TrimSpace(string(summary)) == "" {
		t.Errorf("%s is empty", summaryFile)
	}

	// The 00:00 slot: the first turn of the new session.
	turn2 := d.waitFor(t, deadline, "turn.completed in "+s2, isEvent("turn.completed", "session", s2))
	if at := parseTimeField(t, turn2, "at").In(istZone); at.Format("2006-01-02 15:04") != "2026-03-02 00:00" {
		t.Errorf("second turn at %v on deskd's clock, want during 2026-03-02 00:00 IST", at)
	}
	if n := turn2.Num("turn"); n != 1 {
		t.Errorf("the 00:00 turn is turn %v of %s, want 1", n, s2)
	}
	d.terminate(t)

	// The session files.
	recs1, _ := readSessionRecords(t, s.SessionFile(s1))
	recs2, _ := readSessionRecords(t, s.SessionFile(s2))
	checkSessionHeader(t, s1, recs1, "2026-03-01", "")
	checkSessionHeader(t, s2, recs2, "2026-03-02", s1)
	if got := firstUserText(t, s1, recs1); got != "Check the tape." {
		t.Errorf("first user message of %s (no summary yet) = %q, want %q", s1, got, "Check the tape.")
	}
	checkFirstMessage(t, s2, recs2, "2026-03-01", string(summary), "Check the tape.")
	for id, recs := range map[string][]map[string]any{s1: recs1, s2: recs2} {
		n := 0
		for _, r := range recs {
			if r["role"] != "assistant" {
				continue
			}
			n++
			if r["scripted"] != true {
				t.Errorf("%s: an assistant record of the scripted model lacks \"scripted\":true: %v", id, r)
			}
		}
		if n == 0 {
			t.Errorf("%s has no assistant record", id)
		}
	}
}

// istTime parses an RFC3339 instant of a test.
func istTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// checkFirstMessage checks, byte for byte, that the first user message of
// a new session is the previous session's summary followed by the trigger.
func checkFirstMessage(t *testing.T, id string, recs []map[string]any, date, summary, text string) {
	t.Helper()
	want := "[This is the first message of a new session. Summary of your previous session, from " + date + ":]\n" +
		strings.TrimRight(summary, "\n") +
		"\n[End of the summary. Your lasting lessons are in Memory.md. The message follows.]\n\n" + text
	if got := firstUserText(t, id, recs); got != want {
		t.Errorf("first user message of %s:\n got: %q\nwant: %q", id, got, want)
	}
}

// checkSessionHeader checks the first record of a session file.
func checkSessionHeader(t *testing.T, id string, recs []map[string]any, date, parent string) {
	t.Helper()
	if len(recs) == 0 {
		t.Fatalf("session %s: empty file", id)
	}
	h := recs[0]
	if h["type"] != "header" || h["session"] != id || h["desk"] != "main" || h["trading_date"] != date {
		t.Errorf("session %s header = %v, want type header, session %s, desk main, trading_date %s", id, h, id, date)
	}
	if got, _ := h["parent"].(string); got != parent {
		t.Errorf("session %s header parent = %q, want %q", id, got, parent)
	}
}

// firstUserText returns the text of the session's first user message.
func firstUserText(t *testing.T, id string, recs []map[string]any) string {
	t.Helper()
	for _, r := range recs {
		if r["role"] == "user" {
			s, _ := r["text"].(string)
			return s
		}
	}
	t.Fatalf("session %s has no user message", id)
	return ""
}

// TestE2ERestartResumesSession stops deskd and starts it again on the same
// state: a desk that wrote nothing shows the same session again (first
// again: nothing of it was saved, issue 24 item 4); once its first turn
// has written it, the desk resumes it.
func TestE2ERestartResumesSession(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	s := newE2ESetup(t, "")

	d0, id := startFirstSession(t, deadline, s, "2026-03-02T08:50:00+05:30")
	d0.terminate(t)
	if _, err := os.Lstat(s.DeskDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an idle desk's run left its folder (%v), want none", err)
	}
	d1, again := startFirstSession(t, deadline, s, "2026-03-02T09:00:00+05:30")
	if again != id {
		t.Errorf("an idle desk's restart shows session %s, want %s again", again, id)
	}
	if code, _ := d1.post(t, `{"text": "Good morning", "id": "t1", "kind": "manual"}`); code != http.StatusAccepted {
		d1.fail(t, "POST a trigger: %d", code)
	}
	d1.waitFor(t, deadline, "turn.completed in "+id, isEvent("turn.completed", "session", id))
	d1.terminate(t)

	d2 := startInProcess(t, "second deskd", s.Config, istTime(t, "2026-03-02T09:10:00+05:30"))
	if resumed := d2.resumes(t, deadline, "after a restart", id); resumed.Str("previous") != "" {
		t.Errorf("after a restart: %s\nwant no previous session", resumed.Raw)
	}
	d2.deskStarted(t, deadline)
	d2.terminate(t)
	if n := d2.count(isEvent("session.started")); n != 1 {
		t.Errorf("the second run announced %d sessions, want 1", n)
	}
	entries, err := os.ReadDir(filepath.Join(s.DeskDir(), "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != id+".jsonl" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("session files after a restart = %v, want only %s.jsonl", names, id)
	}
}

// TestE2ESecondDeskdRefused starts a second deskd on a state dir that one
// already runs on: it exits non-zero and names the holder.
func TestE2ESecondDeskdRefused(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	s := newE2ESetup(t, everyMinuteSchedule)

	d1 := startDeskStarted(t, deadline, "first deskd", s, "2026-03-02T10:00:30+05:30")

	d2 := startDeskd(t, "second deskd", "run", "--config", s.Config, "--clock-start", "2026-03-02T10:00:30+05:30")
	if code := d2.wait(t, 30*time.Second); code <= 0 {
		d2.fail(t, "exit status %d, want a failure: another deskd (pid %d) holds the state dir", code, d1.Pid())
	}
	holder := "pid " + strconv.Itoa(d1.Pid()) + " on "
	if out := d2.stderr.String(); !strings.Contains(out, holder) || !strings.Contains(out, s.StateDir) {
		d2.fail(t, "stderr does not name the state dir %s and its holder (%q)", s.StateDir, holder)
	}
	if d2.count(isEvent("desk.started")) != 0 {
		d2.fail(t, "the refused deskd started a desk")
	}
	select {
	case <-d1.exited:
		d1.fail(t, "the first deskd exited when the second was refused")
	default:
	}
	d1.terminate(t)
}

// TestE2ESIGINTStopsCleanly: Ctrl-C stops deskd like SIGTERM does.
func TestE2ESIGINTStopsCleanly(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	d := startDeskStarted(t, deadline, "deskd", newE2ESetup(t, everyMinuteSchedule), "2026-03-02T11:00:30+05:30")
	d.stopCleanly(t, syscall.SIGINT)
	if d.count(isEvent("desk.stopped", "desk", "main")) != 1 {
		t.Errorf("no desk.stopped event after SIGINT")
	}
}

// TestE2EVersion: deskd version and deskd --version print the same line:
// the name, the module version, the VCS revision the binary was built
// from as go version -m reads it (a build in a git clone records it; one
// in a git worktree does not, and the line says so) and the Go version.
func TestE2EVersion(t *testing.T) {
	bin := deskdBinary(t)
	t.Parallel()
	// What the build recorded, read by the go command itself.
	info, err := exec.CommandContext(t.Context(), "go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	m := regexp.MustCompile(`(?m)^\s*build\s+vcs\.revision=([0-9a-f]+)$`).FindSubmatch(info)
	var lines []string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("deskd %s: %v\n%s", args[0], err, stderr.String())
		}
		lines = append(lines, string(out))
	}
	if lines[0] != lines[1] {
		t.Errorf("deskd version printed %q, deskd --version %q: want the same", lines[0], lines[1])
	}
	switch {
	case !strings.HasPrefix(lines[0], "deskd "):
		t.Errorf("deskd version printed %q, want it to start with \"deskd \"", lines[0])
	case m == nil && !strings.Contains(lines[0], "no VCS revision recorded"):
		t.Errorf("deskd version printed %q for a build without a revision, want it to say none was recorded", lines[0])
	case m != nil && !strings.Contains(lines[0], ", revision "+string(m[1][:12])):
		t.Errorf("deskd version printed %q, want the build's revision %s", lines[0], m[1][:12])
	}
	if want := runtime.Version() + "\n"; !strings.HasSuffix(lines[0], want) {
		t.Errorf("deskd version printed %q, want it to end with the Go version %q", lines[0], want)
	}
}

// TestE2ECheckConfig: check-config accepts a good config, and reports every
// problem of a bad one, across files, as "file: field: reason".
func TestE2ECheckConfig(t *testing.T) {
	t.Parallel()
	checkConfig := func(path string) (string, int) {
		t.Helper()
		var out bytes.Buffer // stdout and stderr, as the binary's combined output
		code := run(t.Context(), []string{"check-config", "--config", path}, &out, &out)
		return out.String(), code
	}

	good := newE2ESetup(t, everyMinuteSchedule)
	if out, code := checkConfig(good.Config); code != 0 {
		t.Errorf("check-config of a good config: exit status %d, want 0\n%s", code, out)
	}

	dir := t.TempDir()
	mainFile := writeTestFile(t, dir, "deskd.yaml", "state_dir: state\nlisten: 127.0.0.1:7317\n"+
		"models:\n  offline: {provider: scripted}\nstate_dirr: typo\n")
	deskFile := writeTestFile(t, dir, filepath.Join("desks.d", "main.yaml"), "model: offline\nschedules:\n"+
		"  - name: open\n    cron: \"61 9 * * 1-5\"\n    text: \"Open.\"\n")
	out, code := checkConfig(mainFile)
	if code == 0 {
		t.Errorf("check-config of a config with two problems: exit status 0, want non-zero\n%s", out)
	}
	for _, want := range []string{mainFile + ": state_dirr: ", deskFile + ": schedules[0].cron: "} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, want) && len(line) > len(want) {
				found = true
			}
		}
		if !found {
			t.Errorf("check-config output has no line %q<reason>:\n%s", want, out)
		}
	}
}

// TestE2ETornSessionLine: a session file whose last line a crash cut short
// is repaired at start: the fragment is set aside once, announced once, and
// the desk resumes the same session.
func TestE2ETornSessionLine(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	// One slot a day, at 10:01 IST: the first deskd answers it, and the
	// later starts (10:30, 10:40) find no slot since, so no turn can race
	// their SIGTERM. (An every-minute schedule would fire the slot missed
	// at each start, since it is within run_within.)
	s := newE2ESetup(t, "  - name: at-ten-one\n    cron: \"1 10 * * *\"\n    text: \"Check the tape.\"\n")

	// A session with one exchange, at the 10:01 slot.
	d1, id := startFirstSession(t, deadline, s, "2026-03-02T10:00:57+05:30")
	d1.at(t, "2026-03-02T10:01:00+05:30")
	d1.waitFor(t, deadline, "turn.completed in "+id, isEvent("turn.completed", "session", id))
	d1.terminate(t)

	// A crash mid-write: half a record, no newline.
	path := s.SessionFile(id)
	_, good := readSessionRecords(t, path)
	const frag = `{"type":"message","at":"2026-03-02T04:31:00Z","role":"assistant","text":"[scripted] Rec`
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(frag); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	// The next start repairs it (no slot came due since 10:01: no turn comes).
	d2 := startInProcess(t, "second deskd", s.Config, istTime(t, "2026-03-02T10:30:05+05:30"))
	torn := d2.waitFor(t, deadline, "session.torn", isEvent("session.torn", "desk", "main", "session", id, "path", path))
	if got := torn.Num("offset"); got != float64(len(good)) {
		t.Errorf("session.torn offset = %v, want %d (the end of the last good line)", got, len(good))
	}
	if got := torn.Num("bytes"); got != float64(len(frag)) {
		t.Errorf("session.torn bytes = %v, want %d", got, len(frag))
	}
	d2.resumes(t, deadline, "after the repair", id)
	d2.deskStarted(t, deadline)
	d2.terminate(t)
	if n := d2.count(isEvent("session.torn")); n != 1 {
		t.Errorf("session.torn logged %d times, want once", n)
	}

	if _, data := readSessionRecords(t, path); string(data) != string(good) {
		t.Errorf("session file after the repair:\n%s\nwant it cut back to:\n%s", data, good)
	}
	saved, err := filepath.Glob(path + ".torn-*")
	if err != nil {
		t.Fatal(err)
	}
	if len(saved) != 1 {
		t.Fatalf("files %s.torn-* = %v, want one", path, saved)
	}
	if saved[0] != torn.Str("saved_to") {
		t.Errorf("session.torn saved_to = %q, but the fragment is in %s", torn.Str("saved_to"), saved[0])
	}
	if b, err := os.ReadFile(saved[0]); err != nil || string(b) != frag {
		t.Errorf("%s = %q (%v), want the fragment %q", saved[0], b, err, frag)
	}

	// The file is clean now: the next start finds nothing to repair.
	d3 := startInProcess(t, "third deskd", s.Config, istTime(t, "2026-03-02T10:40:05+05:30"))
	d3.resumes(t, deadline, "third run", id)
	d3.deskStarted(t, deadline)
	d3.terminate(t)
	if n := d3.count(isEvent("session.torn")); n != 0 {
		t.Errorf("third run: session.torn logged %d times, want 0 (the file was repaired)", n)
	}
	if saved, _ := filepath.Glob(path + ".torn-*"); len(saved) != 1 {
		t.Errorf("files %s.torn-* after the third run = %v, want still one", path, saved)
	}
}

// TestE2ERestartAfterBoundary: deskd was down over IST midnight. At start
// it resumes yesterday's session, rolls it over at once (summary, new
// session), and the first turn of the new session carries the summary.
func TestE2ERestartAfterBoundary(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(60 * time.Second)
	s := newE2ESetup(t, everyMinuteSchedule)

	// A turn at the 23:59 slot, then deskd is down over midnight.
	d1, s1 := startFirstSession(t, deadline, s, "2026-03-01T23:58:57+05:30")
	d1.at(t, "2026-03-01T23:59:00+05:30")
	d1.waitFor(t, deadline, "turn.completed in "+s1, isEvent("turn.completed", "session", s1))
	d1.terminate(t)

	d2 := startInProcess(t, "second deskd", s.Config, istTime(t, "2026-03-02T09:00:57+05:30"))
	d2.resumes(t, deadline, "after a restart", s1)
	rolled := d2.waitFor(t, deadline, "session.started reason daily_rollover",
		isEvent("session.started", "desk", "main", "reason", "daily_rollover", "previous", s1))
	s2 := rolled.Str("session")
	summaryFile := filepath.Join(s.DeskDir(), "summaries", "2026-03-01.md")
	if got := rolled.Str("summary_path"); got != summaryFile {
		t.Errorf("daily_rollover summary_path = %q, want %s", got, summaryFile)
	}
	// The rollover comes at start, before any turn. (The turn of the
	// missed slot follows at once: count only the lines before the
	// rollover's.)
	lines, _ := d2.stderr.snapshot()
	before := 0
	for _, l := range lines {
		if l.Raw == rolled.Raw {
			break
		}
		if l.Event() == "turn.started" {
			before++
		}
	}
	if before != 0 {
		t.Errorf("%d turns started before the rollover, want 0", before)
	}
	// The first turn of the new session: the 09:00 slot, missed 57s before
	// the start, is within run_within and fires at once (no clock to move).
	d2.waitFor(t, deadline, "turn.completed in "+s2, isEvent("turn.completed", "session", s2))
	d2.terminate(t)

	summary, err := os.ReadFile(summaryFile)
	if err != nil {
		t.Fatal(err)
	}
	recs2, _ := readSessionRecords(t, s.SessionFile(s2))
	checkSessionHeader(t, s2, recs2, "2026-03-02", s1)
	checkFirstMessage(t, s2, recs2, "2026-03-01", string(summary), "Check the tape.")
}

// TestE2EDeskStartFailureIsReported: a desk that cannot start (its
// rollover journal is damaged, which cannot be rebuilt) is reported at
// error level, naming the desk and the file, when it happens; deskd does
// not stop for it (under systemd that was a restart loop with every desk
// down): it is ready, and stops cleanly. (The other desks run:
// TestDamagedFilesE2E.)
func TestE2EDeskStartFailureIsReported(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(30 * time.Second)
	s := newE2ESetup(t, "")
	journal := filepath.Join(s.DeskDir(), "rollover.json")
	writeTestFile(t, s.DeskDir(), "rollover.json", "{not json\n")

	d := startInProcess(t, "deskd", s.Config, istTime(t, "2026-03-02T09:00:00+05:30"))
	d.waitReady(t)
	failed := d.waitFor(t, deadline, "an error naming "+journal, func(l stderrLine) bool {
		return strings.Contains(l.Raw, journal) && l.Str("level") == "error"
	})
	if failed.Str("desk") != "main" || failed.Event() != "desk.failed" {
		t.Errorf("the error line is not main's desk.failed: %s", failed.Raw)
	}
	d.terminate(t)
}

// TestE2EStoppedIsLastLine: "deskd stopped" is the daemon's last word:
// every event of the shutdown (desk.stopped) is logged before it.
//
// It runs in process: what it checks is the order of the daemon's own
// lines, which runDaemon writes; the binary writes nothing after them
// (main only exits).
func TestE2EStoppedIsLastLine(t *testing.T) {
	t.Parallel()
	s := newE2ESetup(t, "")
	// The order is a race in the daemon: try a few times.
	for i := range 5 {
		d := startInProcess(t, "deskd run "+strconv.Itoa(i+1), s.Config, istTime(t, "2026-03-02T09:00:00+05:30"))
		d.deskStarted(t, time.Now().Add(30*time.Second))
		d.terminate(t)
		lines, _ := d.stderr.snapshot()
		if last := lines[len(lines)-1]; last.Str("message") != "deskd stopped" {
			d.fail(t, "the last line is %s, want \"deskd stopped\"", last.Raw)
		}
	}
}
