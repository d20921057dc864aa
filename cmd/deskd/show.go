package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/memory/transcript"
)

// `deskd show DESK [SESSION]` prints a session's transcript.

func newShowCommand(stdout io.Writer) *cobra.Command {
	var path string
	var full bool
	cmd := &cobra.Command{
		Use:   "show DESK [SESSION]",
		Short: "Print a session's transcript (the current session by default)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, folder, err := openDeskState(path, args[0])
			if err != nil {
				return err
			}
			sess, err := loadSession(folder, optionalArg(args, 1))
			if err != nil {
				return err
			}
			return transcript.WriteText(stdout, sess, cfg.Location, full)
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().BoolVar(&full, "full", false, "print the previous session's summary that a new session's first message carries")
	return cmd
}
