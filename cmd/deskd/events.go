package main

// deskd events: print the event stream of the running deskd.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termsafe"
)

func newEventsCommand(stdout, stderr io.Writer) *cobra.Command {
	var follow bool
	var deskName string
	cmd := clientCommand("events", cobra.NoArgs, "Print deskd's recent events, one JSON line each; --follow keeps printing new ones",
		func(cmd *cobra.Command, c *httpapi.Client, _ []string) error {
			return streamEvents(cmd.Context(), c, stdout, stderr, deskName, follow)
		})
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep following new events (reconnecting with Last-Event-ID)")
	cmd.Flags().StringVar(&deskName, "desk", "", "only this desk's events")
	return cmd
}

// streamEvents prints the backlog, then, with follow, new events until ctx
// ends (httpapi.Client.Follow reconnects after a dropped connection).
func streamEvents(ctx context.Context, c *httpapi.Client, stdout, stderr io.Writer, deskName string, follow bool) error {
	return c.Follow(ctx, httpapi.EventQuery{Desk: deskName, Backlog: true, Follow: follow},
		func(e httpapi.Event) { fmt.Fprintln(stdout, printableEvent(e.Data)) },
		func(comment string) {
			if !strings.HasPrefix(comment, "ping") {
				fmt.Fprintln(stderr, "deskd: "+termsafe.Line(comment))
			}
		},
		func(err error) { fmt.Fprintf(stderr, "deskd: event stream ended (%v); reconnecting\n", err) })
}

// printableEvent is one event of the stream as deskd events prints it: its
// JSON, escaped by termsafe.JSON; data that is not JSON, by termsafe.Line.
func printableEvent(data string) string {
	if json.Valid([]byte(data)) {
		return string(termsafe.JSON([]byte(data)))
	}
	return termsafe.Line(data)
}
