package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termview"
	"github.com/deskd/deskd/memory"
)

// `deskd skills DESK` lists a desk's skills and the curator's changes, or
// undoes one: through the running deskd, which announces it, or on the
// folder when none answers.

func newSkillsCommand(stdout io.Writer) *cobra.Command {
	var undo string
	cmd := folderClientCommand("skills DESK", cobra.ExactArgs(1), "List a desk's skills and the curator's changes, or undo one (--undo ID)",
		func(cmd *cobra.Command, cf *clientFlags, cfg *config.Config, folder *memory.Folder, args []string) error {
			if undo != "" {
				var e httpapi.SkillChange
				err := viaDaemon(stdout, cf, func(c *httpapi.Client) (err error) {
					e, err = c.UndoSkillChange(cmd.Context(), args[0], httpapi.UndoRequest{Change: undo, By: operator()})
					return err
				}, func() error {
					r := &curator.Reviewer{Folder: folder, Now: folder.Now, ScheduleTexts: desk.ScheduleTexts(cfg.Desks[args[0]])}
					le, err := r.Undo(undo)
					e = httpapi.SkillChange{ID: le.ID, Skill: le.Skill, Reason: le.Reason}
					return err
				})
				if err == nil {
					termview.SkillUndone(stdout, e.ID, e.Reason, e.Skill)
				}
				return err
			}
			skills, err := folder.Skills()
			if err != nil {
				return err
			}
			entries, err := curator.ReadLedger(folder)
			if err != nil {
				return err
			}
			termview.Skills(stdout, args[0], skills, entries)
			return nil
		})
	cmd.Flags().StringVar(&undo, "undo", "", "undo the curator's change ID")
	return cmd
}
