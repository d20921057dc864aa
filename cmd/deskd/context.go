package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/termview"
)

func newContextCommand(stdout io.Writer) *cobra.Command {
	var asJSON bool
	cmd := configCommand("context DESK", cobra.ExactArgs(1), "Show the tokens the desk's next request would carry, by source (estimated offline)",
		func(_ *cobra.Command, cfg *config.Config, args []string) error {
			dc, ok := cfg.Desks[args[0]]
			if !ok {
				return &exitError{code: 2, err: fmt.Errorf("no desk %q in %s", args[0], cfg.DesksDir)}
			}
			rep, err := desk.InspectContext(cfg, dc, clock.Real())
			if err != nil {
				return err
			}
			if asJSON {
				return termview.JSON(stdout, rep)
			}
			return termview.Context(stdout, rep)
		})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
