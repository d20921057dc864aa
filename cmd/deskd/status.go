package main

// deskd status: every desk of the running deskd.

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termview"
)

func newStatusCommand(stdout io.Writer) *cobra.Command {
	return answerCommand(stdout, "status", cobra.NoArgs,
		"Show every desk of the running deskd: session, trading date, queue, running turn, next slot, interrupted triggers",
		func(cmd *cobra.Command, c *httpapi.Client, _ []string) (httpapi.DesksResponse, error) {
			return c.Desks(cmd.Context())
		}, func(out httpapi.DesksResponse) {
			termview.Status(stdout, out.Desks)
			termview.ConfigRejections(stdout, out.Desks, out.ConfigRejected)
			if n := out.NATS; n != nil && !n.Connected {
				termview.NATSDown(stdout, n.State, n.Since, n.Error)
			}
			notifyTrouble(stdout, out.Notify)
		})
}
