package main

// deskd approvals [DESK], deskd approve|deny DESK ID: calls that wait for an operator.

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termview"
)

func newApprovalsCommand(stdout io.Writer) *cobra.Command {
	return answerCommand(stdout, "approvals [DESK]", cobra.MaximumNArgs(1),
		"List the tool calls that wait for an operator's decision: id, desk, tool, time left, arguments",
		func(cmd *cobra.Command, c *httpapi.Client, args []string) (httpapi.ApprovalsResponse, error) {
			return c.Approvals(cmd.Context(), append(args, "")[0])
		}, func(out httpapi.ApprovalsResponse) {
			termview.Approvals(stdout, out.Approvals, out.AsOf) // time left on deskd's clock
		})
}

func newDecideCommand(stdout io.Writer, approve bool) *cobra.Command {
	var req httpapi.DecisionRequest
	use, short := "deny DESK ID", "Deny a tool call that waits for a decision: it does not run, and the model is told why"
	if approve {
		use, short = "approve DESK ID", "Approve a tool call that waits for a decision: it runs now"
	}
	cmd := actingCommand(use, cobra.ExactArgs(2), short, &req.By,
		func(cmd *cobra.Command, c *httpapi.Client, args []string) error {
			d, err := c.Decide(cmd.Context(), args[0], args[1], approve, req)
			if err == nil {
				_, err = io.WriteString(stdout, termview.Decided(args[0], d)+"\n")
			}
			return err
		})
	cmd.Flags().StringVar(&req.Reason, "reason", "", "why (one line, at most 500 bytes): kept with the decision; the model hears it with a denial")
	cmd.Flags().StringVar(&req.By, "by", "", "who decides (default: your login name; under sudo, the user who ran it)")
	return cmd
}
