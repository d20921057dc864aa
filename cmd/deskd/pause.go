package main

// deskd pause DESK [--reason TEXT]: the kill switch of a desk (resume.go
// ends it). A paused desk runs no turn; its triggers wait in its queue, or
// are refused when its file says paused_triggers: refuse. The pause is kept
// in the desk's folder (pause.json) and survives a restart.

import (
	"fmt"
	"io"
	"os"
	"os/user"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/desk/termview"
)

func newPauseCommand(stdout io.Writer) *cobra.Command {
	var reason, by string
	cmd := actingCommand("pause DESK", cobra.ExactArgs(1),
		"Pause a desk (the kill switch): it runs no turn until resumed; its triggers wait (or are refused: paused_triggers)", &by,
		func(cmd *cobra.Command, c *httpapi.Client, args []string) error {
			out, err := c.Pause(cmd.Context(), args[0], httpapi.PauseRequest{Reason: reason, By: by})
			if err != nil {
				return err
			}
			verb := "paused"
			if out.Already {
				verb = "was already paused"
			}
			fmt.Fprintf(stdout, "desk %s %s %s\n", termsafe.Line(out.Desk), verb, termview.Pause(out.Paused))
			if out.Running != "" {
				fmt.Fprintf(stdout, "its running turn (trigger %s) finishes; no turn starts after it\n", termsafe.Line(out.Running))
			}
			return nil
		})
	cmd.Flags().StringVar(&reason, "reason", "", "why: shown in the status and the desk.paused event")
	cmd.Flags().StringVar(&by, "by", "", "who pauses (default: your login name)")
	return cmd
}

// operator names the person at the terminal: the login name, else $USER;
// under sudo as root, the user who ran sudo, as "alice (via sudo)".
func operator() string { return operatorOf(user.Current, os.Getenv) }

func operatorOf(current func() (*user.User, error), getenv func(string) string) string {
	switch u, err := current(); {
	case err == nil && u.Uid == "0" && getenv("SUDO_USER") != "" && getenv("SUDO_USER") != "root":
		return getenv("SUDO_USER") + " (via sudo)"
	case err == nil && u.Username != "":
		return u.Username
	case getenv("USER") != "":
		return getenv("USER")
	}
	return "cli"
}
