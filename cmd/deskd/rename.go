package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/transcript"
)

// `deskd rename DESK SESSION TITLE...` gives a session a title.

func newRenameCommand(stdout io.Writer) *cobra.Command {
	return folderCommand("rename DESK SESSION TITLE...", cobra.MinimumNArgs(3), "Give a session a title (the words of TITLE, joined by spaces)",
		func(_ *cobra.Command, _ *config.Config, folder *memory.Folder, args []string) error {
			info, err := transcript.Find(folder, args[1])
			if err != nil {
				return pickExit(err)
			}
			title, err := folder.SetSessionTitle(info.ID, strings.Join(args[2:], " "))
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			fmt.Fprintf(stdout, "%s: %s\n", termsafe.Line(info.ID), termsafe.Line(title))
			return nil
		})
}
