package main

// deskd resume DESK: end a desk's pause (pause.go); the triggers waiting
// in its queue run.

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/desk/termview"
)

func newResumeCommand(stdout io.Writer) *cobra.Command {
	var by string
	cmd := actingCommand("resume DESK", cobra.ExactArgs(1), "Resume a paused desk: the triggers waiting in its queue run", &by,
		func(cmd *cobra.Command, c *httpapi.Client, args []string) error {
			out, err := c.Resume(cmd.Context(), args[0], httpapi.PauseRequest{By: by})
			if err != nil {
				return err
			}
			if !out.Resumed {
				fmt.Fprintf(stdout, "desk %s was not paused\n", termsafe.Line(out.Desk))
				return nil
			}
			fmt.Fprintf(stdout, "desk %s resumed (it was paused %s); %s waiting\n", termsafe.Line(out.Desk), termview.Pause(*out.Was),
				termsafe.Plural(out.Queued, "trigger"))
			return nil
		})
	cmd.Flags().StringVar(&by, "by", "", "who resumes (default: your login name)")
	return cmd
}
