package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termsafe"
)

func newMemoryCommand(stdout io.Writer) *cobra.Command {
	var path, diff, restore string
	var history bool
	cmd := &cobra.Command{
		Use:   "memory DESK",
		Short: "Show a desk's Memory.md, its kept versions (--history), a diff against one (--diff V), or restore one (--restore V)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, folder, err := openDeskState(path, args[0])
			if err != nil {
				return err
			}
			switch {
			case history:
				versions, err := folder.MemoryHistory()
				if err != nil {
					return err
				}
				if len(versions) == 0 {
					fmt.Fprintln(stdout, "no earlier versions of Memory.md")
				}
				for _, v := range versions {
					fmt.Fprintf(stdout, "%s\t%d bytes\n", termsafe.Line(v.ID), v.Size)
				}
				return nil
			case diff != "":
				old, err := folder.ReadMemoryVersion(diff)
				if err != nil {
					return err
				}
				cur, err := folder.ReadMemory()
				if err != nil {
					return err
				}
				fmt.Fprint(stdout, termsafe.Text(unifiedHunks("Memory.md@"+diff, "Memory.md", old, cur)))
				return nil
			case restore != "":
				hist, err := folder.RestoreMemory(restore)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "restored Memory.md from %s; the replaced version is kept as %s\n", termsafe.Line(restore), termsafe.Line(hist))
				return nil
			}
			text, err := folder.ReadMemory()
			if err != nil {
				return err
			}
			fmt.Fprint(stdout, termsafe.Text(text))
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().BoolVar(&history, "history", false, "list the kept versions")
	cmd.Flags().StringVar(&diff, "diff", "", "show the changes from version V to the current Memory.md")
	cmd.Flags().StringVar(&restore, "restore", "", "make version V the current Memory.md (the current one is kept)")
	cmd.MarkFlagsMutuallyExclusive("history", "diff", "restore")
	return cmd
}

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
