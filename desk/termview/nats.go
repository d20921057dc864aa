package termview

import (
	"fmt"
	"io"
	"time"

	"github.com/deskd/deskd/desk/termsafe"
)

// NATSDown prints the line deskd status shows while NATS is configured
// and not connected: "nats: reconnecting since 2026-03-02T10:00:00Z
// (connection refused); deskd runs on, and takes no NATS triggers until
// it is back". Every value passes through termsafe.Line.
func NATSDown(w io.Writer, state string, since time.Time, reason string) {
	line := "nats: " + termsafe.Line(state)
	if !since.IsZero() {
		line += " since " + since.Format(time.RFC3339)
	}
	if reason != "" {
		line += " (" + termsafe.Line(reason) + ")"
	}
	fmt.Fprintln(w, line+"; deskd runs on, and takes no NATS triggers until it is back")
}
