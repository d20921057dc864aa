package termview_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/termview"
)

// TestNATSDown: the line names the state, since when and why, with the
// daemon's words made safe for a terminal.
func TestNATSDown(t *testing.T) {
	var b bytes.Buffer
	termview.NATSDown(&b, "reconnecting", time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC), "dial tcp: refused\x1b[2J")
	want := "nats: reconnecting since 2026-03-02T04:30:00Z (dial tcp: refused\\u001b[2J); deskd runs on, and takes no NATS triggers until it is back\n"
	if b.String() != want {
		t.Errorf("NATSDown:\n%q\nwant\n%q", b.String(), want)
	}
}
