package termview_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
)

// TestPrintStatusShowsFailedDesk: deskd status lists a desk that failed to
// start in state failed, and says which file stopped it, since when and why.
func TestPrintStatusShowsFailedDesk(t *testing.T) {
	since := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	out := status(
		desk.Status{Name: "m1", State: desk.StateIdle},
		desk.Status{Name: "m2", State: desk.StateFailed, Failed: &desk.Failure{File: "/s/desks/m2/rollover.json",
			Reason: "parse state /s/desks/m2/rollover.json: unexpected end of JSON input", Since: since}},
	)
	has(t, "deskd status output", out, []string{"m2    failed", "desk m2 failed to start (/s/desks/m2/rollover.json) since 2026-03-02T10:00:00Z",
		"unexpected end of JSON input"})
}
