package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/transcript"
)

// `deskd sessions DESK` lists a desk's sessions.

func newSessionsCommand(stdout io.Writer) *cobra.Command {
	var path string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions DESK",
		Short: "List the desk's sessions: id, trading date, title, turns, tokens, state (and what a fork was forked from)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, folder, err := openDeskState(path, args[0])
			if err != nil {
				return err
			}
			infos, err := folder.ListSessions()
			if err != nil {
				return err
			}
			if asJSON {
				return printSessionsJSON(stdout, infos)
			}
			return printSessions(stdout, infos)
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// sessionRow is one session as `deskd sessions --json` prints it.
type sessionRow struct {
	ID          string   `json:"id"`
	Date        string   `json:"trading_date"`
	Parent      string   `json:"parent,omitempty"`
	ForkedFrom  string   `json:"forked_from,omitempty"` // the session a fork was forked from
	Forks       []string `json:"forks,omitempty"`       // the sessions forked from this one
	Title       string   `json:"title"`
	TitleSource string   `json:"title_source"` // "operator" or "first message"
	Turns       int      `json:"turns"`
	Tokens      int64    `json:"tokens"`
	Input       int64    `json:"input_tokens"`
	Output      int64    `json:"output_tokens"`
	Checkpoints int      `json:"checkpoints"`
	State       string   `json:"state"`
	Scripted    bool     `json:"scripted,omitempty"`
	Started     string   `json:"started"`
	Updated     string   `json:"updated"`
}

func printSessionsJSON(w io.Writer, infos []memory.SessionInfo) error {
	rows := make([]sessionRow, 0, len(infos))
	for _, info := range infos {
		title, byOperator := transcript.Title(info)
		source := "first message"
		if byOperator {
			source = "operator"
		}
		rows = append(rows, sessionRow{
			ID: info.ID, Date: transcript.DateText(info.Date), Parent: info.Parent, ForkedFrom: info.ForkedFrom, Forks: info.Forks, Title: title, TitleSource: source,
			Turns: info.Turns, Tokens: info.Tokens, Input: info.InputTokens, Output: info.OutputTokens,
			Checkpoints: info.Checkpoints, State: string(info.State), Scripted: info.Scripted,
			Started: info.Started.Format(time.RFC3339), Updated: info.Updated.Format(time.RFC3339),
		})
	}
	if err := printJSON(w, rows); err != nil {
		return fmt.Errorf("print sessions: %w", err)
	}
	return nil
}

func printSessions(w io.Writer, infos []memory.SessionInfo) error {
	if len(infos) == 0 {
		fmt.Fprintln(w, "no sessions")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tDATE\tTURNS\tTOKENS\tSTATE\tTITLE")
	for _, info := range infos {
		title, _ := transcript.Title(info)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", termsafe.Line(info.ID), transcript.DateText(info.Date), info.Turns, info.Tokens, termsafe.Line(transcript.StateText(info)), termsafe.Line(title))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print sessions: %w", err)
	}
	return nil
}
