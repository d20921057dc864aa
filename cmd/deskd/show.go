package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/transcript"
)

// `deskd show DESK [SESSION]` prints a session's transcript.

func newShowCommand(stdout io.Writer) *cobra.Command {
	var full bool
	cmd := sessionCommand("show DESK [SESSION]", cobra.RangeArgs(1, 2), "Print a session's transcript (the current session by default)",
		func(cfg *config.Config, _ *memory.Folder, sess transcript.Session) error {
			return transcript.WriteText(stdout, sess, cfg.Location, full)
		})
	cmd.Flags().BoolVar(&full, "full", false, "print the previous session's summary that a new session's first message carries")
	return cmd
}
