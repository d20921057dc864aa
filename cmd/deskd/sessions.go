package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/termview"
	"github.com/deskd/deskd/memory"
)

// `deskd sessions DESK` lists a desk's sessions.

func newSessionsCommand(stdout io.Writer) *cobra.Command {
	var asJSON bool
	cmd := folderCommand("sessions DESK", cobra.ExactArgs(1),
		"List the desk's sessions: id, trading date, title, turns, tokens, state (and what a fork was forked from)",
		func(_ *cobra.Command, _ *config.Config, folder *memory.Folder, _ []string) error {
			infos, err := folder.ListSessions()
			if err != nil {
				return err
			}
			if asJSON {
				return termview.SessionsJSON(stdout, infos)
			}
			return termview.Sessions(stdout, infos)
		})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
