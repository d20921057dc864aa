package main

// deskd trigger: send a desk a trigger, and with --wait, wait for its
// answer.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termview"
	"github.com/deskd/deskd/triggers"
)

// Exit codes of the client commands, beside 0 (done), 1 (an error, or a
// turn that failed or was dropped) and 2 (usage or config).
const (
	// exitInterrupted: the trigger's turn was interrupted during its model
	// call; an operator decides.
	exitInterrupted = 3
	// exitTimeout: --wait ended before the trigger was answered.
	exitTimeout = 4
)

func newTriggerCommand(stdout, stderr io.Writer) *cobra.Command {
	var f clientFlags
	var kind, id, key string
	var wait, asJSON bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "trigger DESK TEXT",
		Short: "Send a desk a trigger (TEXT - reads it from stdin); --wait waits for the answer",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := args[1]
			if text == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), triggers.MaxBody+1))
				if err != nil {
					return err
				}
				text = string(b)
			}
			c, err := f.newClient()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			req := triggers.Request{Text: text, Kind: triggers.Kind(kind), ID: id, Key: key, Source: "cli"}
			answered := ownerNote(c, stderr)
			if wait {
				return postAndWait(ctx, c, args[0], req, timeout, asJSON, stdout, stderr, answered)
			}
			var acc httpapi.TriggerResponse
			_, err = c.OnOwner(func(at *httpapi.Client) (err error) {
				acc, err = at.PostTrigger(ctx, args[0], req)
				return err
			})
			if err != nil {
				return err
			}
			answered(acc.ID)
			if asJSON {
				return termview.JSON(stdout, acc)
			}
			if acc.Duplicate {
				fmt.Fprintf(stdout, "%s: already known, %s\n", acc.ID, acc.State)
			} else {
				fmt.Fprintf(stdout, "%s: queued\n", acc.ID)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&kind, "kind", string(triggers.Market), "market or manual: market text reaches the model as untrusted data; manual, as the operator's own words, needs the operator's credential (the token of auth_token_file, or the unix socket)")
	cmd.Flags().StringVar(&id, "id", "", "idempotency key: the same id twice queues once")
	cmd.Flags().StringVar(&key, "key", "", "coalescing key of a market trigger (a symbol, say)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the answer and print the reply: one POST that deskd answers when the turn ends; a turn still going after 30s is watched, each change of its state to stderr")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "with --wait: give up after this long (exit 4)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}

// firstWait bounds the wait of deskd trigger --wait's POST: a turn that
// ends within it is answered in that one exchange; one that does not is
// watched from there (its progress on stderr) for the rest of --timeout.
const firstWait = 30 * time.Second

// postAndWait posts req and waits for its answer (Client.SendAndWait:
// one POST that deskd answers once the turn ends within firstWait,
// following a cluster's 421 to the desk's owner, then a watch of the
// trigger, its progress on stderr, for the rest of timeout), and prints
// the outcome. answered is told the trigger's id once a host took it.
func postAndWait(ctx context.Context, c *httpapi.Client, deskName string, req triggers.Request, timeout time.Duration,
	asJSON bool, stdout, stderr io.Writer, answered func(id string)) error {
	acc, s, err := c.SendAndWait(ctx, deskName, req, timeout, firstWait, func(acc httpapi.TriggerResponse) { answered(acc.ID) },
		func(p desk.TriggerProgress) { termview.Progress(stderr, deskName, p) })
	if err != nil {
		return err
	}
	if !s.Final() {
		return &exitError{code: exitTimeout, err: fmt.Errorf("trigger %s is still %s after %s", acc.ID, s.State, timeout)}
	}
	if asJSON {
		if err := termview.JSON(stdout, s); err != nil {
			return err
		}
	} else {
		termview.Outcome(stdout, s)
	}
	return outcomeError(s)
}

// outcomeError turns a final state into the command's exit.
func outcomeError(s desk.TriggerStatus) error {
	switch s.State {
	case triggers.StateAnswered:
		return nil
	case triggers.StateInterrupted:
		return &exitError{code: exitInterrupted, err: fmt.Errorf("trigger %s was interrupted during its model call; it is not run again", s.ID)}
	default:
		return fmt.Errorf("trigger %s %s: %s", s.ID, s.State, s.Reason)
	}
}
