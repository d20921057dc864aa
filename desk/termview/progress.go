package termview

import (
	"fmt"
	"io"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/triggers"
)

// Progress prints one change of a watched trigger (deskd trigger --wait,
// on stderr): "t-1: queued (position 2 of 3)", "t-1: running (model)",
// "t-1: answered, session s turn 3"; a queued trigger on a paused desk
// gets a second line saying who paused it and until when it waits.
func Progress(w io.Writer, deskName string, p desk.TriggerProgress) {
	s := p.Trigger
	line := s.ID + ": " + string(s.State)
	switch {
	case s.State == triggers.StateQueued && s.Position > 0:
		line += fmt.Sprintf(" (position %d of %d)", s.Position, max(p.Depth, s.Position))
	case s.State == triggers.StateRunning && p.Phase != "":
		line += " (" + string(p.Phase) + ")"
	case s.Final() && s.Session != "":
		line += fmt.Sprintf(", session %s turn %d", s.Session, s.Turn)
	}
	if s.Final() && s.Reason != "" {
		line += ": " + s.Reason
	}
	fmt.Fprintln(w, termsafe.Line(line))
	if s.State == triggers.StateQueued && p.Paused != nil {
		fmt.Fprintf(w, "desk %s is paused %s; the trigger waits in the queue until deskd resume %s\n",
			termsafe.Line(deskName), Pause(*p.Paused), termsafe.Line(deskName))
	}
}

// Elapsed is how long a desk's running entry has run at now, for the
// status table ("25s"); "" when now is before it began (a client's clock
// behind deskd's).
func Elapsed(r desk.Running, now time.Time) string {
	d := now.Sub(r.Since)
	if d < 0 {
		return ""
	}
	return d.Round(time.Second).String()
}

// runningText is a running entry in the status table.
func runningText(r desk.Running, now time.Time) string {
	text := fmt.Sprintf("%s (%s, %s", r.Trigger, r.Kind, r.Phase)
	if r.Kind == desk.KindRollover && r.Trigger == "" {
		text = fmt.Sprintf("rollover (%s", r.Phase)
	}
	if e := Elapsed(r, now); e != "" {
		text += ", " + e
	}
	return text + ")"
}
