package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/termview"
	"github.com/deskd/deskd/memory/memorytest"
)

func TestSessionsList(t *testing.T) {
	s := newOpsDesk(t)
	out := runOpsOK(t, s, "sessions", "main")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("deskd sessions printed %d lines, want a heading and 2 sessions:\n%s", len(lines), out)
	}
	want := [][]string{
		{"SESSION", "DATE", "TURNS", "TOKENS", "STATE", "SCRIPTED", "TITLE"},
		{opsS1, "2026-03-02", "2", "723", "rolled", "over", "SCRIPTED", "Check", "the", "tape."},
		{opsS2, "2026-03-03", "1", "312", "active", "SCRIPTED", "Good", "morning.", "Plan", "the", "day."},
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d = %q, want the fields %q", i, lines[i], w)
		}
	}
}

func TestSessionsJSON(t *testing.T) {
	s := newOpsDesk(t)
	rows, out := sessionRowsJSON(t, s)
	if len(rows) != 2 {
		t.Fatalf("got %d sessions, want 2: %s", len(rows), out)
	}
	r := rows[0]
	// 40+90+60+120 in and 8+20+6+9 out for the turns, 200+30 for the
	// summary, 100+40 for the fold.
	if r.ID != opsS1 || r.Date != "2026-03-02" || r.Turns != 2 || r.Input != 610 || r.Output != 113 || r.Tokens != 723 ||
		r.State != "rolled over" || r.Checkpoints != 1 || !r.Scripted || r.TitleSource != "first message" {
		t.Errorf("session 1 = %+v", r)
	}
	if r := rows[1]; r.ID != opsS2 || r.Parent != opsS1 || r.State != "active" || r.Title != "Good morning. Plan the day." {
		t.Errorf("session 2 = %+v", r)
	}
}

func TestSessionStates(t *testing.T) {
	s := newOpsDesk(t)
	// The rollover of s1 degraded: its journal says so.
	if err := s.Folder.WriteJSON("rollover.json", map[string]any{"session": opsS1, "degraded": true, "done": true, "new_session": opsS2}); err != nil {
		t.Fatal(err)
	}
	rows, _ := sessionRowsJSON(t, s)
	if len(rows) != 2 || rows[0].State != "degraded" || rows[1].State != "active" {
		t.Errorf("states = %+v, want degraded then active", rows)
	}
}

func TestSessionsUnknownDesk(t *testing.T) {
	s := newOpsDesk(t)
	for _, name := range []string{"nosuch", "../desks/main", ".."} {
		code, _, errOut := runOps(t, s, "sessions", name)
		if code != 2 || !strings.Contains(errOut, fmt.Sprintf("no desk %q", name)) {
			t.Errorf("deskd sessions %s: exit %d, stderr %q; want 2 and the reason", name, code, errOut)
		}
	}
}

func TestSessionsOfDeskNoLongerConfigured(t *testing.T) {
	s := newOpsDesk(t)
	if err := os.Remove(filepath.Join(filepath.Dir(s.Config), "desks.d", "main.yaml")); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Dir(s.Config), filepath.Join("desks.d", "other.yaml"), "model: offline\ninstructions: x\n")
	code, out, errOut := runOps(t, s, "sessions", "main")
	if code != 0 || !strings.Contains(out, opsS1) {
		t.Errorf("deskd sessions of a desk removed from the config: exit %d, stderr %q, out %q; want its sessions", code, errOut, out)
	}
	bundle := filepath.Join(t.TempDir(), "a.tar.gz")
	if code, _, errOut := runOps(t, s, "audit", "main", "2026-03-02", "-o", bundle); code != 0 {
		t.Fatalf("deskd audit of a desk removed from the config: exit %d, stderr %s", code, errOut)
	}
	files := readBundle(t, bundle)
	if len(files) == 0 || !strings.Contains(files[0].data, "config: the desk is not in the config at export time; only the main file is included") {
		t.Errorf("the audit of a desk removed from the config does not say so")
	}
	for _, f := range files {
		if strings.Contains(f.name, "desks.d/") {
			t.Errorf("the audit of a desk removed from the config holds %s", f.name)
		}
	}
	code, _, errOut = runOps(t, s, "sessions", "other")
	if code != 1 || !strings.Contains(errOut, "desk other has no state folder yet") {
		t.Errorf("deskd sessions of a desk that never ran: exit %d, stderr %q", code, errOut)
	}
}

// TestSessionsListAFork: after deskd fork, `deskd sessions` says the new
// session was forked from the old one, and the old one is listed as forked
// into it, not as rolled over; `deskd show` marks the records the fork
// carries as copied, with the provenance they were written with.
func TestSessionsListAFork(t *testing.T) {
	s := newOpsSetup(t)
	d := memorytest.NewLive(t, s.Desk, "2026-03-02T04:00:00Z") // 09:30 IST
	d.Turn("t1", "Remember the gap at 22000.")
	parent := d.Router.SessionID()
	d.Clock.Advance(time.Hour)
	child, err := d.Router.Fork(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	d.Turn("t2", "And now?")

	rows, out := sessionRowsJSON(t, s)
	if len(rows) != 2 {
		t.Fatalf("%d sessions listed, want 2:\n%s", len(rows), out)
	}
	if p := rows[0]; p.ID != parent || p.State != "forked" || len(p.Forks) != 1 || p.Forks[0] != child || p.Turns != 1 {
		t.Errorf("the old session = %+v, want %s forked into %s, 1 turn", p, parent, child)
	}
	if c := rows[1]; c.ID != child || c.State != "active" || c.ForkedFrom != parent || c.Parent != parent || c.Turns != 1 {
		t.Errorf("the fork = %+v, want %s active, forked from %s, 1 turn of its own", c, child, parent)
	}

	_, out, _ = runOps(t, s, "sessions", "main")
	for _, want := range []string{"forked into " + child, "active, forked from " + parent} {
		if !strings.Contains(out, want) {
			t.Errorf("deskd sessions lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "rolled over") {
		t.Errorf("deskd sessions lists a fork as rolled over:\n%s", out)
	}

	_, out, _ = runOps(t, s, "show", "main", child)
	for _, want := range []string{
		"state: active, forked from " + parent,
		"--- 2026-03-02 09:31:00 IST  user · manual · trigger t1 · copied from " + parent + "\nRemember the gap at 22000.",
		"assistant · offline (scripted) SCRIPTED · ",
		"user · manual · trigger t2\nAnd now?",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("deskd show %s lacks %q:\n%s", child, want, out)
		}
	}
}

// sessionRowsJSON runs deskd sessions main --json (runOpsOK) and returns
// the rows it printed, decoded, and the output.
func sessionRowsJSON(t *testing.T, s *opsSetup) ([]termview.SessionRow, string) {
	t.Helper()
	out := runOpsOK(t, s, "sessions", "main", "--json")
	var rows []termview.SessionRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	return rows, out
}
