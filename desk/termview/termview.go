// Package termview renders deskd's answers as text for a terminal: the
// status table, a trigger's outcome, the sessions table, the context
// report, and JSON. Every value that comes from the daemon or a desk's
// files passes through termsafe first, so none holds a control
// character when it reaches the screen.
package termview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/transcript"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// JSON prints v as indented JSON, with the characters that could act on
// a terminal escaped (termsafe.JSON): still JSON, of the same value.
func JSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termsafe.JSON(b.Bytes()))
	return err
}

// Status prints one line per desk, then the interrupted triggers.
// Every value from the daemon passes through termsafe.Line: none holds a
// control character, a tab or a line break when it reaches the screen.
// A running entry's elapsed time is reckoned at the status's own as_of,
// deskd's clock: "t-12 (market, model, 25s)", "rollover (summarising,
// 25s)" for a rollover outside a turn.
func Status(w io.Writer, desks []desk.Status) { StatusAt(w, desks, time.Time{}) }

// StatusAt is Status with the elapsed times reckoned at now, or at each
// status's as_of when now is zero (and at the terminal's clock when that
// is missing too, as from an older deskd).
func StatusAt(w io.Writer, desks []desk.Status, now time.Time) {
	p := termsafe.Line
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	cluster := clustered(desks)
	fmt.Fprintln(tw, "DESK\tSTATE\tSESSION\tTRADING DATE\tTURNS\tQUEUE\tRUNNING\tNEXT SLOT\tMARKET\tMODEL"+map[bool]string{true: "\tOWNER"}[cluster])
	for _, s := range desks {
		running := "-"
		if s.Running != nil {
			at := now
			if at.IsZero() {
				at = s.AsOf
			}
			if at.IsZero() {
				at = time.Now()
			}
			running = runningText(*s.Running, at)
		}
		next := "-"
		if s.NextSchedule != "" {
			next = s.NextSchedule + " " + s.NextSlot.Format(time.RFC3339)
		}
		market := marketText(s)
		model := statusModel(s)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\t%s%s\n", p(s.Name), p(string(s.State)), p(s.Session), p(s.TradingDate),
			s.Exchanges, s.QueueDepth, s.QueueLimit, p(running), p(next), p(market), p(model), ownerColumn(cluster, s))
	}
	_ = tw.Flush()
	standbyNotes(w, desks)
	fallbackNotes(w, desks)
	calendarNotes(w, desks)
	for _, s := range desks {
		if s.Paused != nil {
			fmt.Fprintf(w, "\ndesk %s is paused %s; its triggers are %s until deskd resume %s\n", p(s.Name), Pause(*s.Paused),
				map[bool]string{true: "refused", false: "queued"}[s.PausedTriggers == "refuse"], p(s.Name))
		}
	}
	for _, s := range desks {
		if f := s.Failed; f != nil {
			file := ""
			if f.File != "" {
				file = " (" + p(f.File) + ")"
			}
			fmt.Fprintf(w, "\ndesk %s failed to start%s since %s; it runs no turn until the file is mended and deskd reloaded (the other desks run):\n  %s\n",
				p(s.Name), file, f.Since.Format(time.RFC3339), p(f.Reason))
		}
	}
	for _, s := range desks {
		for _, u := range s.Unreadable {
			fmt.Fprintf(w, "\ndesk %s cannot read %s, so its prompts go without it: %s\n", p(s.Name), p(u.Path), p(u.Error))
		}
	}
	for _, s := range desks {
		if st := s.Storage; st != nil {
			what := "cannot write to its disk"
			if st.DiskFull {
				what = "cannot write: the disk is full"
			}
			fmt.Fprintf(w, "\ndesk %s %s since %s; it takes no turn, and its triggers wait in the ledger, until a write succeeds:\n  %s\n",
				p(s.Name), what, st.Since.Format(time.RFC3339), p(st.Error))
		}
	}
	actingNotes(w, desks)
	for _, s := range desks {
		if len(s.Interrupted) == 0 {
			continue
		}
		fmt.Fprintf(w, "\ndesk %s: %s (deskd stopped during their turns; not run again; each says whether its request was sent; "+
			"once checked: deskd ack %s TRIGGER [--note TEXT]):\n",
			p(s.Name), termsafe.Plural(len(s.Interrupted), "interrupted trigger"), p(s.Name))
		for _, t := range s.Interrupted {
			fmt.Fprintf(w, "  %s  %s  session %s  %s\n", p(t.ID), p(string(t.Kind)), p(t.Session), p(firstLine(t.Text, 60)))
			if t.Reason != "" {
				fmt.Fprintf(w, "    %s\n", p(firstLine(t.Reason, 100)))
			}
		}
	}
}

// firstLine is the first line of s, cut at n bytes.
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

// Pause reads "by NAME since TIME: REASON", with NAME and REASON
// escaped (termsafe.Line): they come from whoever paused the desk.
func Pause(p desk.Pause) string {
	s := "by " + termsafe.Line(p.By)
	if !p.At.IsZero() {
		s += " since " + p.At.UTC().Format(time.RFC3339)
	}
	if p.Reason != "" {
		s += ": " + termsafe.Line(p.Reason)
	}
	return s
}

// Outcome prints a final trigger: its state and session, the reason
// it did not answer, its reply.
func Outcome(w io.Writer, s desk.TriggerStatus) {
	head := s.ID + ": " + string(s.State)
	if s.MergedInto != "" {
		head += " (merged into " + s.MergedInto + ")"
	}
	if s.Session != "" {
		head += fmt.Sprintf(", session %s turn %d", s.Session, s.Turn)
	}
	fmt.Fprintln(w, termsafe.Line(head))
	if s.Reason != "" {
		fmt.Fprintln(w, "reason: "+termsafe.Line(s.Reason))
	}
	if s.Reply != "" {
		fmt.Fprintln(w, termsafe.Text(s.Reply))
	}
}

// SessionRow is one session as `deskd sessions --json` prints it.
type SessionRow struct {
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

// SessionsJSON prints the sessions as JSON rows.
func SessionsJSON(w io.Writer, infos []memory.SessionInfo) error {
	if err := JSON(w, SessionRows(infos)); err != nil {
		return fmt.Errorf("print sessions: %w", err)
	}
	return nil
}

// SessionRows returns the sessions as rows, in their order.
func SessionRows(infos []memory.SessionInfo) []SessionRow {
	rows := make([]SessionRow, 0, len(infos))
	for _, info := range infos {
		title, byOperator := transcript.Title(info)
		source := "first message"
		if byOperator {
			source = "operator"
		}
		rows = append(rows, SessionRow{
			ID: info.ID, Date: transcript.DateText(info.Date), Parent: info.Parent, ForkedFrom: info.ForkedFrom, Forks: info.Forks, Title: title, TitleSource: source,
			Turns: info.Turns, Tokens: info.Tokens, Input: info.InputTokens, Output: info.OutputTokens,
			Checkpoints: info.Checkpoints, State: string(info.State), Scripted: info.Scripted,
			Started: info.Started.Format(time.RFC3339), Updated: info.Updated.Format(time.RFC3339),
		})
	}
	return rows
}

// Sessions prints the sessions as a table, newest last.
func Sessions(w io.Writer, infos []memory.SessionInfo) error {
	if len(infos) == 0 {
		fmt.Fprintln(w, "no sessions")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tDATE\tTURNS\tTOKENS\tSTATE\tSCRIPTED\tTITLE")
	for _, info := range infos {
		title, _ := transcript.Title(info)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", termsafe.Line(info.ID), transcript.DateText(info.Date), info.Turns, info.Tokens,
			termsafe.Line(transcript.StateText(info)), scriptedCell(info.Scripted), termsafe.Line(title))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print sessions: %w", err)
	}
	return nil
}

// Context prints what the next request would carry, by source.
func Context(w io.Writer, rep router.ContextReport) error {
	fmt.Fprintf(w, "desk %s, session %s, model %s\n", termsafe.Line(rep.Desk), termsafe.Line(rep.Session), termsafe.Line(contextModel(rep.Model, rep.Scripted)))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source\ttokens\t")
	for _, s := range rep.Sources {
		fmt.Fprintf(tw, "%s\t%d\t\n", termsafe.Line(s.Name), s.Tokens)
	}
	fmt.Fprintf(tw, "total\t%d\t\n", rep.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Window > 0 {
		fmt.Fprintf(w, "%.1f%% of the context window (%d tokens)\n", 100*float64(rep.Total)/float64(rep.Window), rep.Window)
	}
	if rep.Estimate {
		fmt.Fprintln(w, "Counts are estimates (about four characters a token); the model's own counts are in the session file.")
	}
	return nil
}

// ConfigRejections prints the config files refused and still refused
// (GET /v1/desks' config_rejected), one line per desk and file, with its
// first problem: a desk in desks runs on its last good config; one that
// is not had no good config and is not started; desk "" is a file that
// governs every desk, whose reload was refused whole.
func ConfigRejections(w io.Writer, desks []desk.Status, rs []desk.ConfigRejection) {
	p := termsafe.Line
	running := map[string]bool{}
	for _, s := range desks {
		running[s.Name] = true
	}
	type key struct{ desk, file string }
	count := map[key]int{}
	var order []desk.ConfigRejection
	for _, r := range rs {
		k := key{r.Desk, r.File}
		if count[k] == 0 {
			order = append(order, r)
		}
		count[k]++
	}
	for _, r := range order {
		who, then := "desk "+p(r.Desk), "it runs on its last good config"
		switch {
		case r.Desk == "":
			who, then = "config", "nothing of the reload was applied: every desk runs on the last good config"
		case !running[r.Desk]:
			then = "it has no good config yet, so it is not started"
		}
		problem := p(r.Reason)
		if r.Field != "" {
			problem = p(r.Field) + ": " + problem
		}
		if n := count[key{r.Desk, r.File}]; n > 1 {
			problem += fmt.Sprintf(" (and %d more)", n-1)
		}
		fmt.Fprintf(w, "\n%s: its file %s was refused since %s: %s; %s\n", who, p(r.File), r.Since.Format(time.RFC3339), problem, then)
	}
}

// marketText is a status's MARKET column: "NSE open", "NSE closed"; past
// the calendar's end "NSE unknown" (held) or "NSE assumed open".
func marketText(s desk.Status) string {
	switch s.Market {
	case "":
	case triggers.MarketAssumedOpen:
		return s.Calendar + " assumed open"
	case triggers.MarketAssumedClosed:
		return s.Calendar + " assumed closed"
	default:
		return s.Calendar + " " + string(s.Market)
	}
	if s.MarketOpen == nil { // an older deskd
		return "-"
	}
	if *s.MarketOpen {
		return s.Calendar + " open"
	}
	return s.Calendar + " closed"
}

// calendarNotes says, under the table, which desks follow a calendar that
// ends within calendar_warn_days or has ended (CalendarEnding), and what
// that means.
func calendarNotes(w io.Writer, desks []desk.Status) {
	p := termsafe.Line
	for _, s := range desks {
		if s.CalendarDaysLeft == nil || !s.CalendarEnding {
			continue
		}
		n := *s.CalendarDaysLeft
		fix := fmt.Sprintf("add the exchange's published dates in calendars.d/%s.yaml (extends: %s, a later through)", p(s.Calendar), p(s.Calendar))
		switch {
		case n < 0 && s.Market == triggers.MarketUnknown:
			fmt.Fprintf(w, "\ndesk %s: calendar %s ended %s (%s ago): its trading_days and market_hours slots are held (beyond_calendar: hold); %s\n",
				p(s.Name), p(s.Calendar), p(s.CalendarThrough), termsafe.Plural(-n, "day"), fix)
		case n < 0:
			fmt.Fprintf(w, "\ndesk %s: calendar %s ended %s (%s ago): the market is assumed from its weekdays and sessions, with no holidays (beyond_calendar: weekdays); %s\n",
				p(s.Name), p(s.Calendar), p(s.CalendarThrough), termsafe.Plural(-n, "day"), fix)
		default:
			fmt.Fprintf(w, "\ndesk %s: calendar %s ends %s, in %s; %s\n",
				p(s.Name), p(s.Calendar), p(s.CalendarThrough), termsafe.Plural(n, "day"), fix)
		}
	}
}
