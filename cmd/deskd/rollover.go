package main

// deskd rollover: roll a desk over to a new session now.

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termsafe"
)

func newRolloverCommand(stdout io.Writer) *cobra.Command {
	return newSessionCommand(stdout, "rollover", "Roll a desk over to a new session now (between turns)", (*httpapi.Client).RollOver)
}

// newSessionCommand makes a command that asks the daemon for a new session
// of a desk (start: a rollover or a fork) and prints the old and new.
func newSessionCommand(stdout io.Writer, verb, short string,
	start func(*httpapi.Client, context.Context, string) (httpapi.SessionResponse, error)) *cobra.Command {
	return clientCommand(verb+" DESK", cobra.ExactArgs(1), short,
		func(cmd *cobra.Command, c *httpapi.Client, args []string) error {
			out, err := start(c, cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "desk %s: session %s -> %s\n", termsafe.Line(out.Desk), termsafe.Line(out.Previous), termsafe.Line(out.Session))
			return nil
		})
}
