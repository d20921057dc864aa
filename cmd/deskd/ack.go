package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termview"
)

func newAckCommand(stdout io.Writer) *cobra.Command {
	var req httpapi.AckRequest
	cmd := actingCommand("ack DESK TRIGGER", cobra.ExactArgs(2),
		"Acknowledge an interrupted trigger (its model call may have acted): it leaves the desk's interrupted list", &req.By,
		func(cmd *cobra.Command, c *httpapi.Client, args []string) error {
			st, err := c.Acknowledge(cmd.Context(), args[0], args[1], req)
			if err == nil {
				fmt.Fprintln(stdout, termview.Acknowledged(st, req.By, req.Note))
			}
			return err
		})
	cmd.Flags().StringVar(&req.Note, "note", "", "what you found or did: shown with the trigger and in the trigger.acknowledged event")
	cmd.Flags().StringVar(&req.By, "by", "", "who acknowledges (default: your login name; under sudo, the user who ran it)")
	return cmd
}
