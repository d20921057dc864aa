package main

// deskd fork: a new session that carries the current one's context.

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/httpapi"
)

func newForkCommand(stdout io.Writer) *cobra.Command {
	return newSessionCommand(stdout, "fork", "Start a new session that carries the current session's context, linked to it as its parent",
		(*httpapi.Client).Fork) // rollover.go
}
