package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/buildinfo"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/replay"
	"github.com/deskd/deskd/memory"
)

// `deskd replay DESK --date YYYY-MM-DD [--with FILE] [--model KEY] [--out
// DIR] [--max-cost N] [--allow-tools T,...] [--json]` runs a trading day
// of the desk again against a candidate desk, in a sandbox (desk/replay).
// It reads the desk's folder as the other CLI commands do, beside a
// running deskd, and writes only DIR (by default a new folder under
// <state_dir>/replays/<desk>/, where the console lists it).

func newReplayCommand(stdout, stderr io.Writer) *cobra.Command {
	var date, with, model, out string
	var d memory.Date
	var maxCost float64
	var allow []string
	var asJSON bool
	bad := func(format string, a ...any) error {
		return &exitError{code: 2, err: fmt.Errorf("replay: "+format, a...)}
	}
	cmd := folderCommand("replay DESK --date YYYY-MM-DD [--with FILE] [--model KEY] [--out DIR]", cobra.ExactArgs(1),
		"Replay a trading day of a desk against a candidate desk, in a sandbox, side by side with what it answered",
		func(cmd *cobra.Command, cfg *config.Config, folder *memory.Folder, args []string) error {
			dc, source, err := replay.CandidateOf(cfg, args[0], with, model)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if !cmd.Flags().Changed("max-cost") {
				maxCost = dc.Budgets.DayCost
			} else if maxCost < 0 {
				return bad("--max-cost %g: want 0 (no bound) or more", maxCost)
			}
			if out == "" {
				if out, err = replay.NextOut(cfg.StateDir, args[0], d); err != nil {
					return err
				}
			}
			// replay.Run makes the output folder, once it has checked that
			// it is not inside the live desk's folder.
			rep, err := replay.Run(cmd.Context(), replay.Options{
				Config: cfg, Candidate: dc, Source: source, Live: folder, Date: d, Out: out, AllowTools: allow, MaxCost: maxCost,
				Clock: clock.Real(), Progress: stderr, Log: zerolog.New(stderr).Level(zerolog.WarnLevel).With().Timestamp().Logger(),
				Version: buildinfo.Version(),
			})
			switch {
			case errors.Is(err, replay.ErrBadOptions):
				return &exitError{code: 2, err: err}
			case errors.Is(err, replay.ErrNoTriggers):
				return &exitError{code: 1, err: err}
			case err != nil:
				return err
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			fmt.Fprintln(stdout, rep.Line(out))
			return nil
		})
	cmd.PreRunE = func(*cobra.Command, []string) (err error) { // before the config and the folder, as a usage error
		if date == "" {
			return bad("--date YYYY-MM-DD is required")
		}
		if d, err = memory.ParseDate(date); err != nil {
			return bad("--date %q: want a trading date, YYYY-MM-DD", date)
		}
		return nil
	}
	cmd.Flags().StringVar(&date, "date", "", "the trading date to replay, YYYY-MM-DD")
	cmd.Flags().StringVar(&with, "with", "", "the candidate desk file (default: the desk's own)")
	cmd.Flags().StringVar(&model, "model", "", "the candidate's model, a key of the main file's models (replaces its route)")
	cmd.Flags().StringVar(&out, "out", "", "the output folder (default: a new one under <state_dir>/replays/<desk>/)")
	cmd.Flags().Float64Var(&maxCost, "max-cost", 0, "stop once the candidate's estimated cost passes this (default: the candidate's budgets.day_cost; 0: no bound)")
	cmd.Flags().StringSliceVar(&allow, "allow-tools", nil, "tools that may run for real (read-only data tools); a tool under approve never runs, its calls are listed as needing approval")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON instead of the summary line")
	return cmd
}
