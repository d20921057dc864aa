package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/audit"
	"github.com/deskd/deskd/desk/buildinfo"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
)

// `deskd audit DESK DATE -o FILE.tar.gz` writes a trading day's audit
// bundle (desk/audit).

func newAuditCommand(stdout io.Writer) *cobra.Command {
	var out string
	var date memory.Date
	cmd := folderCommand("audit DESK DATE -o FILE.tar.gz", cobra.ExactArgs(2),
		"Write a trading day's audit bundle: sessions, summary, notes, Memory.md before/after with the diff, ledgers, config",
		func(_ *cobra.Command, cfg *config.Config, folder *memory.Folder, _ []string) error {
			what := fmt.Sprintf("audit %s %s", folder.Desk(), date)
			ac, err := audit.ConfigOf(cfg, folder.Desk())
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			now := clock.Real().Now()
			b, err := audit.Build(audit.Request{Folder: folder, Date: date, Day: cfg.Day, Now: now, Version: buildinfo.Version(), Config: ac})
			if err != nil {
				return err
			}
			data, err := b.Archive(now)
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			if err := writeOutput(out, data, what); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s: desk %s, trading date %s, %s, %s, %s\n", out, folder.Desk(), date,
				termsafe.Plural(b.Sessions(), "session"), termsafe.Plural(len(b.Files()), "file"), termsafe.Plural(len(data), "byte"))
			for _, f := range b.Files() {
				fmt.Fprintf(stdout, "  %-48s %8d  %s\n", f.Name, len(f.Data), f.What)
			}
			return nil
		})
	cmd.PreRunE = func(cmd *cobra.Command, args []string) (err error) {
		if err := requireOutput(&out, "-o FILE.tar.gz is required")(cmd, args); err != nil {
			return err
		}
		date, err = memory.ParseDate(args[1])
		if err != nil || date.String() != args[1] || !date.Valid() {
			return &exitError{code: 2, err: fmt.Errorf("audit: trading date %q: want YYYY-MM-DD", args[1])}
		}
		return nil
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the .tar.gz file to write")
	return cmd
}
