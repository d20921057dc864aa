package termview_test

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termview"
)

// TestStatusInterruptedSaysWhetherSent: deskd status shows each
// interrupted trigger's reason, so that the operator tells one never sent
// to the model (safe to submit again) from one the model may have acted on.
func TestStatusInterruptedSaysWhetherSent(t *testing.T) {
	var b strings.Builder
	termview.Status(&b, []desk.Status{{Name: "fx", State: "idle", QueueLimit: 8, Interrupted: []desk.TriggerStatus{
		{ID: "t1", Kind: "market", Session: "s1", Text: "one", Reason: "sent: the model may have acted (deskd stopped while the turn was with the model)"},
		{ID: "t2", Kind: "market", Session: "s1", Text: "two", Reason: "never sent to the model: deskd stopped after recording its message"},
	}}})
	out := b.String()
	for _, want := range []string{"  t1  market  session s1  one\n    sent: the model may have acted", "  t2  market  session s1  two\n    never sent to the model"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "their turns reached the model") {
		t.Errorf("status says every interrupted turn reached the model:\n%s", out)
	}
}
