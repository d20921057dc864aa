package termview_test

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/desk"
)

// TestStatusInterruptedSaysWhetherSent: deskd status shows each
// interrupted trigger's reason, so that the operator tells one never sent
// to the model (safe to submit again) from one the model may have acted on.
func TestStatusInterruptedSaysWhetherSent(t *testing.T) {
	out := status(desk.Status{Name: "fx", State: "idle", QueueLimit: 8, Interrupted: []desk.TriggerStatus{
		{ID: "t1", Kind: "market", Session: "s1", Text: "one", Reason: "sent: the model may have acted (deskd stopped while the turn was with the model)"},
		{ID: "t2", Kind: "market", Session: "s1", Text: "two", Reason: "never sent to the model: deskd stopped after recording its message"},
	}})
	has(t, "status", out, []string{"  t1  market  session s1  one\n    sent: the model may have acted", "  t2  market  session s1  two\n    never sent to the model"})
	if strings.Contains(out, "their turns reached the model") {
		t.Errorf("status says every interrupted turn reached the model:\n%s", out)
	}
}
