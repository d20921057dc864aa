package termview_test

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termview"
)

// TestStatusInterruptedSaysHowToAcknowledge: deskd status's list of
// interrupted triggers tells the operator the command that clears it.
func TestStatusInterruptedSaysHowToAcknowledge(t *testing.T) {
	var b strings.Builder
	termview.Status(&b, []desk.Status{{Name: "fx", State: "idle", QueueLimit: 8,
		Interrupted: []desk.TriggerStatus{{ID: "t2", Kind: "market", Session: "s1", Text: "slow one"}}}})
	if out := b.String(); !strings.Contains(out, "once checked: deskd ack fx TRIGGER") || !strings.Contains(out, "  t2  market  session s1  slow one") {
		t.Errorf("status of an interrupted trigger lacks the ack hint or the trigger:\n%s", out)
	}
}
