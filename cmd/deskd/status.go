package main

// deskd status: every desk of the running deskd.

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termview"
)

func newStatusCommand(stdout io.Writer) *cobra.Command {
	var asJSON bool
	cmd := clientCommand(&cobra.Command{
		Use:   "status",
		Short: "Show every desk of the running deskd: session, trading date, queue, running turn, next slot, interrupted triggers",
		Args:  cobra.NoArgs,
	}, func(cmd *cobra.Command, c *httpapi.Client, _ []string) error {
		out, err := c.Desks(cmd.Context())
		if err != nil {
			return err
		}
		if asJSON {
			return termview.JSON(stdout, out)
		}
		termview.Status(stdout, out.Desks)
		termview.ConfigRejections(stdout, out.Desks, out.ConfigRejected)
		if n := out.NATS; n != nil && !n.Connected {
			termview.NATSDown(stdout, n.State, n.Since, n.Error)
		}
		notifyTrouble(stdout, out.Notify)
		return nil
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}
