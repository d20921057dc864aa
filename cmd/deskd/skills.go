package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termsafe"
)

// `deskd skills DESK` lists a desk's skills and the curator's changes, or
// undoes one.

func newSkillsCommand(stdout io.Writer) *cobra.Command {
	var path, undo string
	cmd := &cobra.Command{
		Use:   "skills DESK",
		Short: "List a desk's skills and the curator's changes, or undo one (--undo ID)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, folder, err := openDeskState(path, args[0])
			if err != nil {
				return err
			}
			if undo != "" {
				r := &curator.Reviewer{Folder: folder, Now: folder.Now, ScheduleTexts: desk.ScheduleTexts(cfg.Desks[args[0]])}
				e, err := r.Undo(undo)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s: %s (%s)\n", termsafe.Line(e.ID), termsafe.Line(e.Reason), termsafe.Line(e.Skill))
				return nil
			}
			skills, err := folder.Skills()
			if err != nil {
				return err
			}
			for _, s := range skills {
				pinned := ""
				if s.Pinned {
					pinned = " [pinned]"
				}
				fmt.Fprintf(stdout, "%s%s: %s\n", termsafe.Line(s.Name), pinned, termsafe.Line(s.Description))
			}
			entries, err := curator.ReadLedger(folder)
			if err != nil {
				return err
			}
			if len(entries) > 0 {
				fmt.Fprintln(stdout, "\ncurator changes:")
			}
			for _, e := range entries {
				fmt.Fprintf(stdout, "%s\t%s\t%s %s\t%s\n", termsafe.Line(e.ID), e.At.UTC().Format("2006-01-02 15:04"), termsafe.Line(string(e.Action)), termsafe.Line(e.Skill), termsafe.Line(e.Reason))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().StringVar(&undo, "undo", "", "undo the curator's change ID")
	return cmd
}
