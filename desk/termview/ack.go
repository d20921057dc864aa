package termview

import (
	"strings"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termsafe"
)

// Acknowledged says what `deskd ack` did: trigger st, acknowledged (by
// whom, when, with the note); when its acknowledgement is not by's with
// note, it is an earlier one, which stands.
func Acknowledged(st desk.TriggerStatus, by, note string) string {
	s := "trigger " + termsafe.Line(st.ID) + " of desk " + termsafe.Line(st.Desk)
	a := st.Acknowledged
	if a == nil {
		return s + " is not acknowledged"
	}
	already := a.By != strings.TrimSpace(by) || a.Note != strings.TrimSpace(note)
	verb := " acknowledged by "
	if already {
		verb = " was already acknowledged by "
	}
	s += verb + termsafe.Line(a.By) + " at " + a.At.UTC().Format(time.RFC3339)
	if a.Note != "" {
		s += ": " + termsafe.Line(a.Note)
	}
	if !already {
		s += "; it leaves the desk's interrupted list"
	}
	return s
}
