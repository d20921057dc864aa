package main

import (
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/termsafe"
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
				return printJSON(stdout, rep)
			}
			return printContext(stdout, rep)
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printContext(w io.Writer, rep router.ContextReport) error {
	fmt.Fprintf(w, "desk %s, session %s, model %s\n", termsafe.Line(rep.Desk), termsafe.Line(rep.Session), termsafe.Line(rep.Model))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source\ttokens\t")
	for _, s := range rep.Sources {
		fmt.Fprintf(tw, "%s\t%d\t\n", termsafe.Line(s.Name), s.Tokens)
	}
	fmt.Fprintf(tw, "total\t%d\t\n", rep.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Window > 0 {
		fmt.Fprintf(w, "%.1f%% of the context window (%d tokens)\n", 100*float64(rep.Total)/float64(rep.Window), rep.Window)
	}
	if rep.Estimate {
		fmt.Fprintln(w, "Counts are estimates (about four characters a token); the model's own counts are in the session file.")
	}
	return nil
}
