package main

// The flags by which the client commands (status, trigger, rollover,
// fork, events, pause, resume, check-config --diff) find the running
// deskd and its token.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/desk/termview"
)

// clientCommands returns the commands that talk to a running deskd.
func clientCommands(stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{
		newStatusCommand(stdout), newTriggerCommand(stdout, stderr), newRolloverCommand(stdout), newForkCommand(stdout),
		newEventsCommand(stdout, stderr), newPauseCommand(stdout), newResumeCommand(stdout),
		newAckCommand(stdout),
	}
}

// clientFlags are how a command finds the daemon.
type clientFlags struct {
	config, addr, tokenFile string
	cmd                     *cobra.Command // for its context and stderr
}

func (f *clientFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	cmd.Flags().StringVar(&f.config, "config", defaultConfig, "the main config file, for listen and auth_token_file")
	cmd.Flags().StringVar(&f.addr, "addr", "", "the daemon's address: host:port, unix:PATH or a URL (default: $DESKD_ADDR, else where the runtime file of the config's state_dir says deskd serves, else listen of the config)")
	cmd.Flags().StringVar(&f.tokenFile, "token-file", "", "the file of the token to send: the operator's (auth_token_file) or a feed's (feed_token_file) "+
		"(default: $DESKD_TOKEN_FILE, else auth_token_file of the config, which is not read for a unix socket: the socket is the operator's credential)")
}

// newClient finds the daemon's address and token (httpapi.Reach): the
// flags, then the environment ($DESKD_ADDR, $DESKD_TOKEN_FILE), then the
// config's main file. Its notes of where deskd was found, and of each
// owner a cluster's 421 sent a request on to, go to the command's stderr.
func (f *clientFlags) newClient() (*httpapi.Client, error) {
	addr, tokenFile := f.addr, f.tokenFile
	if addr == "" {
		addr = os.Getenv("DESKD_ADDR")
	}
	if tokenFile == "" {
		tokenFile = os.Getenv("DESKD_TOKEN_FILE")
	}
	stderr := f.cmd.ErrOrStderr()
	c, err := httpapi.Reach{Addr: addr, TokenFile: tokenFile, Config: f.config, StateDir: stateDir, Pick: pickAddr,
		Notes: func(n string) { fmt.Fprintln(stderr, termsafe.Line(n)) }}.Dial(f.cmd.Context())
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	c.OnHop = hopNotes(stderr)
	return c, nil
}

// clientRun is the work of a command on the running deskd, through c.
type clientRun func(cmd *cobra.Command, c *httpapi.Client, args []string) error

// clientCommand makes the command use (its usage line), taking args,
// whose help is short, that talks to the running deskd: it gets the
// client flags, and its RunE finds the daemon (newClient) and calls run.
func clientCommand(use string, args cobra.PositionalArgs, short string, run clientRun) *cobra.Command {
	var f clientFlags
	cmd := newCommand(use, args, short, f.newClient, run)
	f.register(cmd)
	return cmd
}

// actingCommand is clientCommand for a command that acts in someone's
// name: *by, when its --by flag left it empty, becomes the operator at the
// terminal (operator).
func actingCommand(use string, args cobra.PositionalArgs, short string, by *string, run clientRun) *cobra.Command {
	return clientCommand(use, args, short, func(cmd *cobra.Command, c *httpapi.Client, args []string) error {
		if *by == "" {
			*by = operator()
		}
		return run(cmd, c, args)
	})
}

// answerCommand is clientCommand for a command that prints one answer of
// the running deskd: ask gets it, and it is printed on stdout as JSON
// with --json, else by show.
func answerCommand[T any](stdout io.Writer, use string, args cobra.PositionalArgs, short string,
	ask func(cmd *cobra.Command, c *httpapi.Client, args []string) (T, error), show func(T)) *cobra.Command {
	var asJSON bool
	cmd := clientCommand(use, args, short, func(cmd *cobra.Command, c *httpapi.Client, args []string) error {
		out, err := ask(cmd, c, args)
		if err != nil {
			return err
		}
		if asJSON {
			return termview.JSON(stdout, out)
		}
		show(out)
		return nil
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}

// pickAddr prefers a unix socket, then the first TCP address.
func pickAddr(listens []string) string {
	for _, a := range listens {
		if strings.HasPrefix(a, config.UnixPrefix) {
			return a
		}
	}
	if len(listens) > 0 {
		return listens[0]
	}
	return config.DefaultListen
}

// viaDaemon runs remote against the running deskd, which announces it, or
// (saying so) local on the desk's folder when none answers.
func viaDaemon(stdout io.Writer, cf *clientFlags, remote func(*httpapi.Client) error, local func() error) error {
	c, err := cf.newClient()
	if err == nil {
		var refused *httpapi.Error
		if err = remote(c); err == nil || errors.As(err, &refused) {
			return err
		}
	}
	fmt.Fprintf(stdout, "no running deskd answered (%s): done on the desk's folder directly, and no event announced it\n", termsafe.Line(err.Error()))
	return local()
}
