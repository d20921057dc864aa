package main

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestForkCarriesTheSession: deskd fork starts a new session through the
// running daemon; the desk's next turn goes on with the old context and no
// summary, and the new session names the old one as its parent.
func TestForkCarriesTheSession(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	cli := cliWith(t, "--addr", h.URL())
	if code, out, errs := cli("trigger", "main", "Remember the gap at 22000", "--id", "f1", "--wait", "--timeout", "10s"); code != 0 {
		t.Fatalf("trigger = %d %s%s", code, out, errs)
	}
	before := h.Desk.Status()
	code, out, errs := cli("fork", "main")
	if code != 0 || !strings.Contains(out, "desk main: session "+before.Session+" -> ") {
		t.Fatalf("fork = %d %q %q", code, out, errs)
	}
	after := h.Desk.Status()
	if after.Session == before.Session || after.Exchanges != before.Exchanges {
		t.Fatalf("after the fork: session %s (was %s), exchanges %d (was %d)", after.Session, before.Session, after.Exchanges, before.Exchanges)
	}
	if code, out, errs := cli("trigger", "main", "And now?", "--id", "f2", "--wait", "--timeout", "10s"); code != 0 || strings.Contains(out, "Summary of your previous session") {
		t.Fatalf("trigger after the fork = %d %s%s", code, out, errs)
	}
	if code, _, errs := cli("fork", "nope"); code == 0 || !strings.Contains(errs, "nope") {
		t.Fatalf("fork of an unknown desk = %d %s", code, errs)
	}
}
