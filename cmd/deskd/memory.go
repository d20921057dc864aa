package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory/diff"
)

// `deskd memory DESK` shows a desk's Memory.md, its kept versions, a diff
// against one (memory/diff), or restores one.

func newMemoryCommand(stdout io.Writer) *cobra.Command {
	var path, against, restore string
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
			case against != "":
				old, err := folder.ReadMemoryVersion(against)
				if err != nil {
					return err
				}
				cur, err := folder.ReadMemory()
				if err != nil {
					return err
				}
				fmt.Fprint(stdout, termsafe.Text(diff.Unified("Memory.md@"+against, "Memory.md", old, cur)))
				return nil
			case restore != "":
				_, hist, err := folder.RestoreMemory(restore)
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
	cmd.Flags().StringVar(&against, "diff", "", "show the changes from version V to the current Memory.md")
	cmd.Flags().StringVar(&restore, "restore", "", "make version V the current Memory.md (the current one is kept)")
	cmd.MarkFlagsMutuallyExclusive("history", "diff", "restore")
	return cmd
}
