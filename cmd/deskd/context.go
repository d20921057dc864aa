package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/termview"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

func newContextCommand(stdout io.Writer) *cobra.Command {
	var path string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "context DESK",
		Short: "Show the tokens the desk's next request would carry, by source (estimated offline)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(path)
			if err != nil {
				return err
			}
			dc, ok := cfg.Desks[args[0]]
			if !ok {
				return &exitError{code: 2, err: fmt.Errorf("no desk %q in %s", args[0], cfg.DesksDir)}
			}
			clk := clock.Real()
			folder, err := memory.OpenFolder(filepath.Join(cfg.StateDir, "desks", dc.Name), dc.Name, clk.Now)
			if err != nil {
				return err
			}
			settings, err := desk.RouterSettings(cfg, dc, folder, clk)
			if err != nil {
				return err
			}
			var summary string
			if s, ok, err := folder.LatestSummary(); err != nil {
				return err
			} else if ok {
				summary = s.Text
			}
			bus := event.New()
			defer bus.Close()
			rep, err := router.Inspect(router.Options{Desk: dc.Name, Folder: folder, Clock: clk, Day: cfg.Day, Bus: bus, Settings: settings}, summary)
			if err != nil {
				return err
			}
			if asJSON {
				return termview.JSON(stdout, rep)
			}
			return termview.Context(stdout, rep)
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
