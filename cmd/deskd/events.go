package main

// deskd events: print the event stream of the running deskd.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/termsafe"
)

func newEventsCommand(stdout, stderr io.Writer) *cobra.Command {
	var f clientFlags
	var follow bool
	var deskName string
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print deskd's recent events, one JSON line each; --follow keeps printing new ones",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.newClient()
			if err != nil {
				return err
			}
			return streamEvents(cmd.Context(), c, stdout, stderr, deskName, follow)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep following new events (reconnecting with Last-Event-ID)")
	cmd.Flags().StringVar(&deskName, "desk", "", "only this desk's events")
	return cmd
}

// streamEvents prints the backlog, then, with follow, new events until ctx
// ends, reconnecting after a dropped connection from the last id seen.
func streamEvents(ctx context.Context, c *httpapi.Client, stdout, stderr io.Writer, deskName string, follow bool) error {
	q := httpapi.EventQuery{Desk: deskName, Backlog: true, Follow: follow}
	for {
		err := c.Events(ctx, q, func(e httpapi.Event) {
			q.LastID = e.ID
			fmt.Fprintln(stdout, printableEvent(e.Data))
		}, func(comment string) {
			if !strings.HasPrefix(comment, "ping") {
				fmt.Fprintln(stderr, "deskd: "+termsafe.Line(comment))
			}
		})
		if ctx.Err() != nil {
			return nil
		}
		if !follow {
			if errors.Is(err, io.EOF) {
				return nil // the backlog is all there was
			}
			return err
		}
		var ae *httpapi.Error
		if errors.As(err, &ae) {
			return err
		}
		fmt.Fprintf(stderr, "deskd: event stream ended (%v); reconnecting\n", err)
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// printableEvent is one event of the stream as deskd events prints it: its
// JSON, escaped by termsafe.JSON; data that is not JSON, by termsafe.Line.
func printableEvent(data string) string {
	if json.Valid([]byte(data)) {
		return string(termsafe.JSON([]byte(data)))
	}
	return termsafe.Line(data)
}
