package main

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/memory"
)

func TestShowDefaultsToActiveSession(t *testing.T) {
	s := newOpsDesk(t)
	out := runOpsOK(t, s, "show", "main")
	if !strings.Contains(out, "session "+opsS2) || !strings.Contains(out, "Good morning. Plan the day.") {
		t.Errorf("deskd show main did not show the active session %s:\n%s", opsS2, out)
	}
	// What the text says of the carried summary, with and without --full,
	// is transcript's (TestWriteTextFoldsTheCarriedSummary); here, that
	// the flag reaches it.
	if !strings.Contains(out, "; --full prints it]") {
		t.Errorf("deskd show main should fold the summary the first message carries:\n%s", out)
	}
	_, full, _ := runOps(t, s, "show", "main", "--full")
	if !strings.Contains(full, "[summary of the previous session, from 2026-03-02:]\n"+opsSummary+"[end of the summary]\n") {
		t.Errorf("deskd show --full does not print the carried summary:\n%s", full)
	}
}

func TestShowNoSessions(t *testing.T) {
	s := newOpsSetup(t)
	code, _, errOut := runOps(t, s, "show", "main")
	if code != 1 || !strings.Contains(errOut, "desk main has no sessions") {
		t.Errorf("deskd show on an empty desk: exit %d, stderr %q", code, errOut)
	}
}

func TestShowEscapesControlCharacters(t *testing.T) {
	s := newOpsSetup(t)
	s.session(t, memory.Record{Session: "s1", Date: "2026-03-02", At: utcTime(t, "2026-03-02T03:30:00Z")},
		memory.Record{Type: memory.RecordMessage, Role: "user", Text: "\x1b[2JWipe\rthe screen", Trigger: "t"},
		memory.Record{Type: memory.RecordMessage, Role: "assistant", Text: "ok\tdone", Trigger: "t"},
	)
	for _, args := range [][]string{{"show", "main"}, {"sessions", "main"}} {
		out := runOpsOK(t, s, args...)
		if strings.ContainsAny(out, "\x1b\r") {
			t.Errorf("deskd %v printed control characters: %q", args, out)
		}
		if !strings.Contains(out, `\u001b[2JWipe`) {
			t.Errorf("deskd %v does not show the escaped text: %q", args, out)
		}
	}
	_, out, _ := runOps(t, s, "show", "main")
	if !strings.Contains(out, `Wipe\u000dthe screen`) || !strings.Contains(out, "ok\tdone") {
		t.Errorf("deskd show should escape the carriage return and keep the tab: %q", out)
	}
}
