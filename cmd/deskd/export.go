package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/buildinfo"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/transcript"
)

// `deskd export DESK [SESSION] -o FILE.html` writes a session as one
// self-contained HTML page (transcript.HTML).

func newExportCommand(stdout io.Writer) *cobra.Command {
	var out string
	cmd := sessionCommand("export DESK [SESSION] -o FILE.html", cobra.RangeArgs(1, 2),
		"Write a session (the current one by default) as one self-contained HTML page",
		func(cfg *config.Config, folder *memory.Folder, sess transcript.Session) error {
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
			if err := writeOutput(out, page, "export session "+sess.Info.ID); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s: session %s of desk %s, %s, %s\n", out, sess.Info.ID, sess.Desk,
				termsafe.Plural(len(sess.Entries), "record"), termsafe.Plural(len(page), "byte"))
			return nil
		})
	cmd.PreRunE = requireOutput(&out, "-o FILE.html is required (- for standard output)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the HTML file to write (- for standard output)")
	return cmd
}
