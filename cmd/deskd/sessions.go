package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/termview"
)

// `deskd sessions DESK` lists a desk's sessions.

func newSessionsCommand(stdout io.Writer) *cobra.Command {
	var path string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions DESK",
		Short: "List the desk's sessions: id, trading date, title, turns, tokens, state (and what a fork was forked from)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, infos, err := deskSessions(path, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return termview.SessionsJSON(stdout, infos)
			}
			return termview.Sessions(stdout, infos)
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
