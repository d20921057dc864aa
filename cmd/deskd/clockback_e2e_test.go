package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// rollsOverAt sets d's clock to at and waits for desk main's daily
// rollover from session prev; it returns the new session's id.
func rollsOverAt(t *testing.T, d *deskdProc, deadline time.Time, at, prev string) string {
	t.Helper()
	d.at(t, at)
	return d.waitFor(t, deadline, "session.started reason daily_rollover",
		isEvent("session.started", "desk", "main", "reason", "daily_rollover", "previous", prev)).Str("session")
}

// TestE2EClockBehindKeepsTheSession rolls a desk over at 00:00 IST on
// 2 December, then restarts deskd with its clock at 23:00 IST on
// 1 December (--clock-start before the session's date): the desk keeps the
// session of 2 December, summarises nothing and warns once; its turns go
// to that session. Going forward again, 2 December opens no new session,
// and 3 December opens one, the only rollover of the second run.
func TestE2EClockBehindKeepsTheSession(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(90 * time.Second)
	s := newE2ESetup(t, "")

	d1, s1 := startFirstSession(t, deadline, s, "2026-12-01T23:59:00+05:30")
	postAnswered(t, d1, "a", s1)
	s2 := rollsOverAt(t, d1, deadline, "2026-12-02T00:00:00+05:30", s1)
	postAnswered(t, d1, "b", s2)
	d1.terminate(t)

	// An hour before the session's date begins.
	d2 := startInProcess(t, "second deskd", s.Config, istTime(t, "2026-12-01T23:00:00+05:30"))
	// The warning is logged as the desk starts; the events, through the
	// bus, may come before or after it: they are counted once deskd has
	// stopped.
	behind := func(l stderrLine) bool {
		return l.Str("level") == "warn" && strings.Contains(l.Str("message"), "before the trading date 2026-12-02 of session "+s2)
	}
	warn := d2.waitFor(t, deadline, "the warning of a clock behind the session", behind)
	for _, want := range []string{"desk main", "2026-12-01T23:00:00+05:30", "trading date 2026-12-01", "keeps session " + s2} {
		if !strings.Contains(warn.Str("message"), want) {
			t.Errorf("warning %q does not say %q", warn.Str("message"), want)
		}
	}
	postAnswered(t, d2, "c", s2)
	postAnswered(t, d2, "d", s2)
	if n := d2.count(behind); n != 1 {
		t.Errorf("%d warnings of a clock behind the session, want 1", n)
	}

	// Forward again: 2 December is the session's own date.
	d2.at(t, "2026-12-02T00:00:00+05:30")
	postAnswered(t, d2, "e", s2)
	s3 := rollsOverAt(t, d2, deadline, "2026-12-03T00:00:00+05:30", s2)
	postAnswered(t, d2, "f", s3)
	d2.terminate(t)

	if n := d2.count(isEvent("session.started", "reason", "resumed", "session", s2)); n != 1 {
		t.Errorf("the second run resumed session %s %d times, want once", s2, n)
	}
	if n := d2.count(isEvent("session.summarized")); n != 1 {
		t.Errorf("the second run summarised %d sessions, want 1 (%s, at 3 December)", n, s2)
	}
	if n := d2.count(isEvent("session.started", "reason", "daily_rollover")); n != 1 {
		t.Errorf("the second run rolled over %d times, want 1", n)
	}
	recs3, _ := readSessionRecords(t, s.SessionFile(s3))
	checkSessionHeader(t, s3, recs3, "2026-12-03", s2)
	if got, want := dirNames(t, filepath.Join(s.DeskDir(), "sessions"), ".jsonl"), []string{s1, s2, s3}; !slices.Equal(got, sortedStrings(want)) {
		t.Errorf("sessions = %v, want %v", got, want)
	}
	if got, want := dirNames(t, filepath.Join(s.DeskDir(), "summaries"), ".md"), []string{"2026-12-01", "2026-12-02"}; !slices.Equal(got, want) {
		t.Errorf("summaries = %v, want %v", got, want)
	}
	// The turns with the clock behind were not told of a new trading day.
	recs2, _ := readSessionRecords(t, s.SessionFile(s2))
	for _, r := range recs2 {
		if text, _ := r["text"].(string); r["role"] == "user" && strings.Contains(text, "a new trading day") && (r["trigger"] == "c" || r["trigger"] == "d") {
			t.Errorf("turn %v with the clock behind was recorded as %q", r["trigger"], text)
		}
	}
}

// postAnswered posts manual trigger id to desk main and waits until it is
// answered, in session.
func postAnswered(t *testing.T, d *deskdProc, id, session string) {
	t.Helper()
	if status, a := d.post(t, `{"text": "Check the book.", "kind": "manual", "id": "`+id+`"}`); status != 202 || a.ID != id {
		d.fail(t, "POST trigger %s = %d %+v", id, status, a)
	}
	got := d.trigger(t, id)
	if got["state"] != "answered" || got["session"] != session {
		t.Errorf("trigger %s = %v, want answered in session %s", id, got, session)
	}
}

// dirNames returns the names in dir that end in ext, without it, sorted.
func dirNames(t *testing.T, dir, ext string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ext); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func sortedStrings(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
