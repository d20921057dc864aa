package main

// deskd status: every desk of the running deskd.

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termsafe"
)

func newStatusCommand(stdout io.Writer) *cobra.Command {
	var f clientFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every desk of the running deskd: session, trading date, queue, running turn, next slot, interrupted triggers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.newClient()
			if err != nil {
				return err
			}
			out, err := c.Desks(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdout, out)
			}
			printStatus(stdout, out.Desks)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}

// printStatus prints one line per desk, then the interrupted triggers.
// Every value from the daemon passes through termsafe.Line: none holds a
// control character, a tab or a line break when it reaches the screen.
func printStatus(w io.Writer, desks []desk.Status) {
	p := termsafe.Line
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DESK\tSTATE\tSESSION\tTRADING DATE\tEXCHANGES\tQUEUE\tRUNNING\tNEXT SLOT\tMARKET\tMODEL")
	for _, s := range desks {
		running := "-"
		if s.Running != nil {
			running = fmt.Sprintf("%s (%s, %s)", s.Running.Trigger, s.Running.Kind, s.Running.Phase)
		}
		next := "-"
		if s.NextSchedule != "" {
			next = s.NextSchedule + " " + s.NextSlot.Format(time.RFC3339)
		}
		market := "-"
		if s.MarketOpen != nil {
			market = s.Calendar + " closed"
			if *s.MarketOpen {
				market = s.Calendar + " open"
			}
		}
		model := s.Model
		if s.Scripted {
			model += " (scripted)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\t%s\n", p(s.Name), p(string(s.State)), p(s.Session), p(s.TradingDate),
			s.Exchanges, s.QueueDepth, s.QueueLimit, p(running), p(next), p(market), p(model))
	}
	_ = tw.Flush()
	for _, s := range desks {
		if s.Paused != nil {
			fmt.Fprintf(w, "\ndesk %s is paused %s; its triggers are %s until deskd resume %s\n", p(s.Name), describePause(*s.Paused),
				map[bool]string{true: "refused", false: "queued"}[s.PausedTriggers == "refuse"], p(s.Name))
		}
	}
	for _, s := range desks {
		for _, u := range s.Unreadable {
			fmt.Fprintf(w, "\ndesk %s cannot read %s, so its prompts go without it: %s\n", p(s.Name), p(u.Path), p(u.Error))
		}
	}
	for _, s := range desks {
		if st := s.Storage; st != nil {
			what := "cannot write to its disk"
			if st.DiskFull {
				what = "cannot write: the disk is full"
			}
			fmt.Fprintf(w, "\ndesk %s %s since %s; it takes no turn, and its triggers wait in the ledger, until a write succeeds:\n  %s\n",
				p(s.Name), what, st.Since.Format(time.RFC3339), p(st.Error))
		}
	}
	for _, s := range desks {
		if len(s.Interrupted) == 0 {
			continue
		}
		fmt.Fprintf(w, "\ndesk %s: %d interrupted triggers (their turns reached the model, which may have acted; not run again):\n", p(s.Name), len(s.Interrupted))
		for _, t := range s.Interrupted {
			fmt.Fprintf(w, "  %s  %s  session %s  %s\n", p(t.ID), p(string(t.Kind)), p(t.Session), p(firstLineOf(t.Text, 60)))
		}
	}
}

// firstLineOf is the first line of s, cut at n bytes.
func firstLineOf(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
