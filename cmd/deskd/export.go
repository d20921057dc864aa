package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/buildinfo"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/transcript"
)

// `deskd export DESK [SESSION] -o FILE.html` writes a session as one
// self-contained HTML page (transcript.HTML).

func newExportCommand(stdout io.Writer) *cobra.Command {
	var path, out string
	cmd := &cobra.Command{
		Use:   "export DESK [SESSION] -o FILE.html",
		Short: "Write a session (the current one by default) as one self-contained HTML page",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return &exitError{code: 2, err: fmt.Errorf("export: -o FILE.html is required (- for standard output)")}
			}
			cfg, folder, err := openDeskState(path, args[0])
			if err != nil {
				return err
			}
			sess, err := loadSession(folder, optionalArg(args, 1))
			if err != nil {
				return err
			}
			page, err := transcript.HTML(folder, sess, cfg.Location, clock.Real().Now(), buildinfo.Version())
			if err != nil {
				return err
			}
			if out == "-" {
				if _, err := stdout.Write(page); err != nil {
					return fmt.Errorf("export session %s: %w", sess.Info.ID, err)
				}
				return nil
			}
			if err := memory.WriteFileAtomic(out, page, 0o640); err != nil {
				return fmt.Errorf("export session %s: %w", sess.Info.ID, err)
			}
			fmt.Fprintf(stdout, "wrote %s: session %s of desk %s, %s, %s\n", out, sess.Info.ID, sess.Desk,
				termsafe.Plural(len(sess.Entries), "record"), termsafe.Plural(len(page), "byte"))
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the HTML file to write (- for standard output)")
	return cmd
}
