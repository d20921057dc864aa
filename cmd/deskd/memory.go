package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/desk/termview"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/diff"
)

// `deskd memory DESK` shows a desk's Memory.md, its kept versions, a diff
// against one (memory/diff), or restores one: through the running deskd,
// which announces it, or on the folder when none answers.

func newMemoryCommand(stdout io.Writer) *cobra.Command {
	var against, restore string
	var history bool
	cmd := folderClientCommand("memory DESK", cobra.ExactArgs(1),
		"Show a desk's Memory.md, its kept versions (--history), a diff against one (--diff V), or restore one (--restore V); V: an id or a unique prefix",
		func(cmd *cobra.Command, cf *clientFlags, _ *config.Config, folder *memory.Folder, args []string) error {
			switch {
			case history:
				versions, err := folder.MemoryHistory()
				if err != nil {
					return err
				}
				return termview.MemoryVersions(stdout, versions)
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
				var res httpapi.RestoreResponse
				err := viaDaemon(stdout, cf, func(c *httpapi.Client) (err error) {
					res, err = c.RestoreMemory(cmd.Context(), args[0], httpapi.RestoreRequest{Version: restore, By: operator()})
					return err
				}, func() (err error) {
					v, keptAs, err := folder.RestoreMemory(restore)
					res = httpapi.RestoreResponse{Restored: v.ID, KeptAs: keptAs}
					return err
				})
				if err == nil {
					fmt.Fprintf(stdout, "restored Memory.md from %s; the replaced version is kept as %s\n", termsafe.Line(res.Restored), termsafe.Line(res.KeptAs))
				}
				return err
			}
			text, err := folder.ReadMemory()
			if err != nil {
				return err
			}
			if text == "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "desk %s has no Memory.md yet (or it is empty): a rollover's fold of the day's notes writes it\n", termsafe.Line(args[0]))
			}
			fmt.Fprint(stdout, termsafe.Text(text))
			return nil
		})
	cmd.Flags().BoolVar(&history, "history", false, "list the kept versions, with the shortest prefix that names each")
	cmd.Flags().StringVar(&against, "diff", "", "show the changes from version V to the current Memory.md")
	cmd.Flags().StringVar(&restore, "restore", "", "make version V the current Memory.md (the current one is kept)")
	cmd.MarkFlagsMutuallyExclusive("history", "diff", "restore")
	return cmd
}
