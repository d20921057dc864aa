package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/desk/termview"
)

// defaultConfig is where deskd looks for its main file.
const defaultConfig = "/etc/deskd/deskd.yaml"

// errNoDaemon says that no deskd answered at the client's address.
var errNoDaemon = errors.New("no running deskd answered")

func newCheckConfigCommand(stdout io.Writer) *cobra.Command {
	var f clientFlags
	var diff, probe bool
	var clockStart string
	cmd := &cobra.Command{
		Use:   "check-config",
		Short: "Validate the config files and print every problem; --diff: what a reload of the running deskd would change",
		Long: `Validate the config files and print every problem, one a line, as
"file: field: reason"; the exit status is 2 when there is any.

With --diff, ask the running deskd (found as deskd status finds it) to load
its config files as a reload would and to compare them with the config in
force: each change is printed, one a line ("desk main: schedule open added"),
and nothing changes. Problems are printed as above (exit status 2): a
refused desk file refuses its desk alone (the changes printed still apply),
any other problem the whole reload. Exit status 1 when no deskd answers.

With --probe, also connect to each MCP server (a stdio server is started and
stopped) and list its tools, marking each tool a desk allows that the server
does not have; exit status 2 when a server cannot be reached or lacks one.

Warnings (exit status 0) name what runs but is likely a mistake: a real
model with no budget on busy schedules, and a calendar in use that ends
within calendar_warn_days (or has ended). --clock-start checks as of that
instant, as deskd run --clock-start would run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if diff {
				return checkDiff(cmd, &f, stdout)
			}
			cfg, err := loadConfig(f.config)
			if err != nil {
				return err
			}
			now := clock.Real().Now()
			if clockStart != "" {
				if now, err = clock.ParseStart(clockStart, now); err != nil {
					return &exitError{code: 2, err: err}
				}
			}
			names := slices.Sorted(maps.Keys(cfg.Desks))
			fmt.Fprintf(stdout, "%s: ok, %s %v\n", termsafe.Line(cfg.Path), termsafe.Plural(len(names), "desk"), names)
			for _, w := range config.Warnings(cfg, now) {
				fmt.Fprintln(stdout, "warning: "+termsafe.Line(w.String()))
			}
			if !probe {
				return nil
			}
			if n := termview.Probe(stdout, mcphost.ProbeConfig(cmd.Context(), cfg)); n > 0 {
				return &exitError{code: 2, err: fmt.Errorf("the MCP probe found %s", termsafe.Plural(n, "problem"))}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&diff, "diff", false, "show what a reload of the running deskd would change (asks it over its API)")
	cmd.Flags().StringVar(&clockStart, "clock-start", "", "check as of this RFC3339 instant, as deskd run --clock-start (the calendar and cost warnings)")
	cmd.Flags().BoolVar(&probe, "probe", false, "also connect to each MCP server and list its tools, marking those a desk allows that it lacks")
	return cmd
}

// checkDiff prints what a reload of the running daemon would change.
func checkDiff(cmd *cobra.Command, f *clientFlags, stdout io.Writer) error {
	c, err := f.newClient()
	if err != nil {
		return err
	}
	out, err := c.ConfigDiff(cmd.Context())
	if err != nil {
		var ae *httpapi.Error
		if errors.As(err, &ae) {
			return err
		}
		return fmt.Errorf("%w at %s, so there is nothing to compare with (check-config without --diff checks the files alone): %v",
			errNoDaemon, c.URL(), err)
	}
	if abs, err := filepath.Abs(f.config); err == nil && abs != out.Config && cmd.Flags().Changed("config") {
		fmt.Fprintf(stdout, "note: the running deskd reads %s, not %s; this compares its files\n", termsafe.Line(out.Config), termsafe.Line(abs))
	}
	for _, ch := range out.Changes { // what would apply (beside a refused desk file's desk)
		fmt.Fprintln(stdout, termsafe.Line(ch.What))
	}
	for _, p := range out.Problems {
		fmt.Fprintln(stdout, termsafe.Line(p))
	}
	if len(out.Problems) > 0 {
		return &exitError{code: 2, err: fmt.Errorf("config has %s: the files named would be refused by a reload now "+
			"(a desk file alone, its desk kept on its last good config; any other problem refuses the whole reload)", termsafe.Plural(len(out.Problems), "problem"))}
	}
	if len(out.Changes) == 0 {
		fmt.Fprintf(stdout, "%s: no changes against the running deskd\n", termsafe.Line(out.Config))
	}
	return nil
}

// loadConfig loads the config; its problems, one a line, become the error.
func loadConfig(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, configError(err)
	}
	cfg.StateDir = stateDir(cfg.StateDir)
	return cfg, nil
}

// stateDir is $DESKD_STATE_DIR, made absolute, when it is set (the state
// folder a rehearsal's `deskd run --state-dir` used), else dir.
func stateDir(dir string) string {
	if env, err := filepath.Abs(os.Getenv("DESKD_STATE_DIR")); err == nil && os.Getenv("DESKD_STATE_DIR") != "" {
		return env
	}
	return dir
}

// configError is the exit error (status 2) of a config that did not
// load: its problems, one a line.
func configError(err error) error {
	var problems config.Problems
	if errors.As(err, &problems) {
		return &exitError{code: 2, err: fmt.Errorf("config has %s:\n%w", termsafe.Plural(len(problems), "problem"), err)}
	}
	return &exitError{code: 2, err: err}
}
