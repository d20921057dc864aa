package main

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestClientPauseResume: deskd pause and deskd resume, as the CLI runs
// them; by is the user's login name; status shows the pause.
func TestClientPauseResume(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "tok"})
	cli := cliWithToken(t, h.URL(), "tok")
	me := operator()
	code, out, errs := cli("pause", "main", "--reason", "risk check")
	if code != 0 || !strings.Contains(out, "desk main paused by "+me+" since ") || !strings.HasSuffix(out, ": risk check\n") {
		t.Fatalf("pause = %d\n%s%s", code, out, errs)
	}
	if p := h.Desk.Paused(); p == nil || p.By != me || p.Reason != "risk check" {
		t.Errorf("the desk's pause = %+v, want by %s", p, me)
	}
	code, out, errs = cli("status")
	if code != 0 || !strings.Contains(out, "paused") || !strings.Contains(out, "desk main is paused by "+me) ||
		!strings.Contains(out, "risk check") || !strings.Contains(out, "queued until deskd resume main") {
		t.Errorf("status while paused = %d\n%s%s", code, out, errs)
	}
	code, out, _ = cli("pause", "main", "--by", "ravi")
	if code != 0 || !strings.Contains(out, "desk main was already paused by "+me) {
		t.Errorf("pause again = %d %s", code, out)
	}
	code, out, errs = cli("resume", "main")
	if code != 0 || !strings.Contains(out, "desk main resumed (it was paused by "+me) {
		t.Errorf("resume = %d\n%s%s", code, out, errs)
	}
	if h.Desk.Paused() != nil {
		t.Error("the desk is still paused after deskd resume")
	}
	code, out, _ = cli("resume", "main")
	if code != 0 || !strings.Contains(out, "desk main was not paused") {
		t.Errorf("resume again = %d %s", code, out)
	}
	code, _, errs = cli("pause", "nope")
	if code != 2 || !strings.Contains(errs, "unknown desk") {
		t.Errorf("pause of an unknown desk = %d %s", code, errs)
	}
}
