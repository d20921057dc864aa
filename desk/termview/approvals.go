package termview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/router"
)

// Approvals prints the tool calls that wait for an operator's decision,
// one line each: id, desk, tool, the time left at now, and the arguments
// as one line of JSON. Every value passes through termsafe.Line. With
// none it says so.
func Approvals(w io.Writer, ps []approval.Pending, now time.Time) {
	if len(ps) == 0 {
		fmt.Fprintln(w, "no tool call waits for a decision")
		return
	}
	p := termsafe.Line
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDESK\tTOOL\tEXPIRES IN\tARGUMENTS")
	for _, a := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p(a.ID), p(a.Desk), p(a.Tool), ExpiresIn(a.ExpiresAt, now), p(OneLineJSON(a.Arguments)))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\ndecide with: deskd approve DESK ID | deskd deny DESK ID [--reason TEXT]")
}

// ExpiresIn is the time from now to at, in whole seconds ("1m30s"), or
// "expired" once it has passed.
func ExpiresIn(at, now time.Time) string {
	left := at.Sub(now).Truncate(time.Second)
	if left <= 0 {
		return "expired"
	}
	return left.String()
}

// OneLineJSON is raw compacted to one line; raw as it is when it is not
// JSON, and "{}" when empty.
func OneLineJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// Decided says what `deskd approve` or `deskd deny` did: "call ID
// (TOOL) of desk D approved by NAME at TIME: REASON", then the arguments.
func Decided(deskName string, d router.Decision) string {
	p := termsafe.Line
	s := fmt.Sprintf("call %s (%s) of desk %s %s by %s", p(d.ID), p(d.Tool), p(deskName), p(d.Outcome), p(d.By))
	if !d.DecidedAt.IsZero() {
		s += " at " + d.DecidedAt.UTC().Format(time.RFC3339)
	}
	if d.Reason != "" {
		s += ": " + p(d.Reason)
	}
	s += "\narguments: " + p(OneLineJSON(d.Arguments))
	switch d.Outcome {
	case router.DecisionApproved:
		s += "\nthe call runs now"
	case router.DecisionDenied:
		s += "\nthe call does not run; the model is told it was denied"
	}
	return s
}

// actingNotes says, under the status table, which MCP servers of each desk
// are not up (their tools are unavailable to the desk) and how many of its
// tool calls wait for an operator's decision.
func actingNotes(w io.Writer, desks []desk.Status) {
	p := termsafe.Line
	for _, s := range desks {
		for _, m := range s.MCP {
			if m.State == mcphost.StateUp {
				continue
			}
			fmt.Fprintf(w, "\ndesk %s: MCP server %s is %s, so its tools are unavailable to the desk", p(s.Name), p(m.Name), p(m.State))
			if m.Error != "" {
				fmt.Fprintf(w, ": %s", p(m.Error))
			}
			fmt.Fprintln(w)
		}
		if n := len(s.Approvals); n > 0 {
			fmt.Fprintf(w, "\ndesk %s: %s %s for an operator's decision: deskd approvals %s\n", p(s.Name), termsafe.Plural(n, "tool call"),
				map[bool]string{true: "waits", false: "wait"}[n == 1], p(s.Name))
		}
	}
}
