// Command deskd runs LLM trading desks as a long-running daemon.
//
// main only delegates, and owns the signals: the commands live in run, so
// that tests can call them in process with their own arguments, output
// and context.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/buildinfo"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/subreaper"
	"github.com/deskd/deskd/desk/termsafe"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, this context lets go of SIGINT and
		// SIGTERM. deskd run also gets them, with SIGHUP, as a channel
		// (daemonSignals), and counts them: a second one cuts running turns
		// short (recorded interrupted) and a third ends deskd at once;
		// without any, the shutdown's hard deadline (desk.Daemon.Run) makes
		// run return, and the os.Exit below ends whatever is still running.
		// Other commands end at the second. Every file deskd writes is crash
		// safe, so that loses no data; a turn cut off is marked interrupted
		// at the next start.
		<-ctx.Done()
		stop()
	}()
	// Best effort: without it (a kernel that refuses), a process an MCP
	// server detached outlives deskd, as it would anyway.
	reaper, _ := subreaper.Become()
	code := runWith(ctx, os.Args[1:], os.Stdout, os.Stderr, daemonSignals)
	stop()
	if reaper != nil {
		reaper.Shutdown() // what deskd's servers left behind, once they are closed
	}
	os.Exit(code)
}

// daemonSignals relays SIGHUP, SIGTERM and SIGINT to a channel for deskd
// run, whatever main's context does with its own, until stop: the daemon
// reloads on SIGHUP and counts the others. After stop (the daemon calls it
// at the second SIGTERM or SIGINT) they take their default action again.
func daemonSignals() (<-chan os.Signal, func()) {
	c := make(chan os.Signal, 8)
	signal.Notify(c, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	return c, func() { signal.Stop(c) }
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// run runs one deskd command in process and returns its exit code. It
// takes no signals: a daemon it runs stops when ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, args, stdout, stderr, nil)
}

// runWith is run, with the signals deskd run handles coming from signals
// (nil: none).
func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, signals signalSource) int {
	root := newRootCommand(stdout, stderr, signals)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "deskd: %s\n", termsafe.Text(err.Error())) // it may quote the daemon, a file, a config key
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	if httpapi.UnknownDesk(err) {
		return 2 // bad input, as a desk the config does not have
	}
	return 1
}

func newRootCommand(stdout, stderr io.Writer, signals signalSource) *cobra.Command {
	root := &cobra.Command{
		Use:           "deskd",
		Short:         "deskd runs LLM trading desks: sessions, schedules, memory and rollovers",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Version(),
	}
	root.SetVersionTemplate("deskd {{.Version}}\n") // deskd --version prints what deskd version does
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCommand(stderr, signals), newCheckConfigCommand(stdout), newVersionCommand(stdout))
	root.AddCommand(clientCommands(stdout, stderr)...) // clientflags.go: status, trigger, rollover, events, ...
	root.AddCommand(newContextCommand(stdout), newMemoryCommand(stdout), newSkillsCommand(stdout))
	root.AddCommand(newSessionsCommand(stdout), newRenameCommand(stdout), newShowCommand(stdout), newExportCommand(stdout), newAuditCommand(stdout))
	root.AddCommand(newApprovalsCommand(stdout), newDecideCommand(stdout, true), newDecideCommand(stdout, false)) // approve.go
	root.AddCommand(newReplayCommand(stdout, stderr))
	return root
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print deskd's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(stdout, "deskd", buildinfo.Version())
			return nil
		},
	}
}
