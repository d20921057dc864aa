package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/termview"
)

func TestRename(t *testing.T) {
	s := newOpsDesk(t)
	// A unique prefix names the session; the title's words are joined.
	out := runOpsOK(t, s, "rename", "main", opsS1[:18], "Budget", "day:", "NIFTY gap")
	if want := opsS1 + ": Budget day: NIFTY gap\n"; out != want {
		t.Errorf("deskd rename printed %q, want %q", out, want)
	}
	_, out, _ = runOps(t, s, "sessions", "main", "--json")
	var rows []termview.SessionRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if rows[0].Title != "Budget day: NIFTY gap" || rows[0].TitleSource != "operator" {
		t.Errorf("after rename: title %q from %s, want the operator's", rows[0].Title, rows[0].TitleSource)
	}
	if rows[1].TitleSource != "first message" {
		t.Errorf("the other session's title changed too: %+v", rows[1])
	}
	_, out, _ = runOps(t, s, "show", "main", opsS1)
	if !strings.Contains(out, "title: Budget day: NIFTY gap\n") {
		t.Errorf("deskd show does not carry the new title:\n%s", out)
	}
}

func TestRenameRefused(t *testing.T) {
	s := newOpsDesk(t)
	checkRefusals(t, s, []opsRefusal{
		{"unknown session", []string{"rename", "main", "nosuch", "x"}, 2, `no session "nosuch"`},
		{"ambiguous prefix", []string{"rename", "main", "20260302T", "x"}, 2, "names 2 sessions"},
		{"two lines", []string{"rename", "main", opsS1, "one\ntwo"}, 2, "control character"},
		{"blank", []string{"rename", "main", opsS1, " "}, 2, "empty title"},
	})
	if _, ok, err := s.Folder.SessionTitle(opsS1); ok || err != nil {
		t.Errorf("a refused rename stored a title (ok %v, err %v)", ok, err)
	}
}
