package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/termsafe"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// The operator's view of a desk's sessions: `deskd sessions` lists them,
// `deskd rename` titles one, `deskd show` prints one's transcript. They
// read the desk folder without changing it (a rename writes only the
// session's title file), so they are safe beside a running deskd.

// maxDefaultTitle is the length, in characters, of a title derived from a
// session's first message.
const maxDefaultTitle = 60

// untitled is the title of a session that has no user message yet.
const untitled = "(no messages yet)"

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

func newRenameCommand(stdout io.Writer) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "rename DESK SESSION TITLE...",
		Short: "Give a session a title (the words of TITLE, joined by spaces)",
		Args:  cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, folder, err := openDeskState(path, args[0])
			if err != nil {
				return err
			}
			infos, err := folder.ListSessions()
			if err != nil {
				return err
			}
			info, err := pickSession(folder.Desk(), infos, args[1])
			if err != nil {
				return err
			}
			title, err := folder.SetSessionTitle(info.ID, strings.Join(args[2:], " "))
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			fmt.Fprintf(stdout, "%s: %s\n", termsafe.Line(info.ID), termsafe.Line(title))
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	return cmd
}

func newShowCommand(stdout io.Writer) *cobra.Command {
	var path string
	var full bool
	cmd := &cobra.Command{
		Use:   "show DESK [SESSION]",
		Short: "Print a session's transcript (the current session by default)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, folder, err := openDeskState(path, args[0])
			if err != nil {
				return err
			}
			sess, err := loadSessionView(folder, optionalArg(args, 1))
			if err != nil {
				return err
			}
			return printTranscript(stdout, sess, cfg.Location, full)
		},
	}
	cmd.Flags().StringVar(&path, "config", defaultConfig, "the main config file")
	cmd.Flags().BoolVar(&full, "full", false, "print the previous session's summary that a new session's first message carries")
	return cmd
}

// optionalArg returns args[i], or "" when there is none.
func optionalArg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

// openDeskState loads the config and opens the state folder of desk name.
// A desk no longer in the config is still found by its state folder; a
// desk with neither is an error (exit status 2).
func openDeskState(path, name string) (*config.Config, *memory.Folder, error) {
	cfg, err := loadConfig(path)
	if err != nil {
		return nil, nil, err
	}
	if _, inConfig := cfg.Desks[name]; !inConfig && (!filepath.IsLocal(name) || filepath.Base(name) != name || strings.HasPrefix(name, ".")) {
		return nil, nil, &exitError{code: 2, err: fmt.Errorf("no desk %q in %s", name, cfg.DesksDir)}
	}
	dir := filepath.Join(cfg.StateDir, "desks", name)
	if _, err := os.Stat(dir); err != nil {
		if _, inConfig := cfg.Desks[name]; inConfig && errors.Is(err, fs.ErrNotExist) {
			return nil, nil, &exitError{code: 1, err: fmt.Errorf("desk %s has no state folder yet (%s): it has not run", name, dir)}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, &exitError{code: 2, err: fmt.Errorf("no desk %q in %s and no state folder %s", name, cfg.DesksDir, dir)}
		}
		return nil, nil, fmt.Errorf("open state of desk %s: %w", name, err)
	}
	folder, err := memory.OpenFolder(dir, name, clock.Real().Now)
	if err != nil {
		return nil, nil, fmt.Errorf("open state of desk %s: %w", name, err)
	}
	return cfg, folder, nil
}

// pickSession finds the session an operator named: an exact id, or a
// prefix that only one session id has. An empty name picks the desk's
// active session, or its newest when none is active.
func pickSession(desk string, infos []memory.SessionInfo, name string) (memory.SessionInfo, error) {
	if len(infos) == 0 {
		return memory.SessionInfo{}, &exitError{code: 1, err: fmt.Errorf("desk %s has no sessions", desk)}
	}
	if name == "" {
		for _, info := range infos {
			if info.State == memory.SessionActive {
				return info, nil
			}
		}
		return infos[len(infos)-1], nil
	}
	var found []memory.SessionInfo
	for _, info := range infos {
		if info.ID == name {
			return info, nil
		}
		if strings.HasPrefix(info.ID, name) {
			found = append(found, info)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return memory.SessionInfo{}, &exitError{code: 2, err: fmt.Errorf("desk %s has no session %q", desk, name)}
	}
	ids := make([]string, len(found))
	for i, info := range found {
		ids[i] = info.ID
	}
	return memory.SessionInfo{}, &exitError{code: 2, err: fmt.Errorf("desk %s: %q names %d sessions: %s", desk, name, len(found), strings.Join(ids, ", "))}
}

// sessionTitle returns the title to show for a session: the operator's,
// or one derived from its first message.
func sessionTitle(info memory.SessionInfo) (title string, byOperator bool) {
	if info.Title != "" {
		return info.Title, true
	}
	return defaultTitle(info.FirstUserText), false
}

// defaultTitle derives a title from a session's first user message: its own
// text (without the previous summary a new session's first message
// carries), first line that is not a bracketed framing line or a market
// event's opening tag, at most maxDefaultTitle characters.
func defaultTitle(text string) string {
	own := triggers.OwnText(text)
	var first string
	for _, line := range strings.Split(own, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if first == "" {
			first = line
		}
		framing := strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]")
		if framing || strings.HasPrefix(line, "<market_event") || strings.HasPrefix(line, "</market_event") {
			continue
		}
		first = line
		break
	}
	if first == "" {
		return untitled
	}
	first = strings.Join(strings.Fields(first), " ")
	if utf8.RuneCountInString(first) > maxDefaultTitle {
		first = string([]rune(first)[:maxDefaultTitle-1]) + "…"
	}
	return first
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
		title, byOperator := sessionTitle(info)
		source := "first message"
		if byOperator {
			source = "operator"
		}
		rows = append(rows, sessionRow{
			ID: info.ID, Date: dateText(info.Date), Parent: info.Parent, ForkedFrom: info.ForkedFrom, Forks: info.Forks, Title: title, TitleSource: source,
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
		title, _ := sessionTitle(info)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", termsafe.Line(info.ID), dateText(info.Date), info.Turns, info.Tokens, termsafe.Line(stateText(info)), termsafe.Line(title))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print sessions: %w", err)
	}
	return nil
}

// stateText is a session's state as the listing shows it, with where a
// fork came from ("active, forked from <id>") and where a session forked
// from went ("forked into <id>").
func stateText(info memory.SessionInfo) string {
	s := string(info.State)
	if info.State == memory.SessionForked {
		s += " into " + strings.Join(info.Forks, ", ")
	}
	if info.ForkedFrom != "" {
		s += ", forked from " + info.ForkedFrom
	}
	return s
}

// dateText formats a trading date, "-" for none.
func dateText(d memory.Date) string {
	if d.IsZero() {
		return "-"
	}
	return d.String()
}

// sessionView is one session read for showing: what the listing says of
// it, and its transcript.
type sessionView struct {
	Desk    string
	Info    memory.SessionInfo
	Entries []transcriptEntry
}

// loadSessionView reads the session an operator named (see pickSession).
func loadSessionView(folder *memory.Folder, name string) (sessionView, error) {
	infos, err := folder.ListSessions()
	if err != nil {
		return sessionView{}, err
	}
	info, err := pickSession(folder.Desk(), infos, name)
	if err != nil {
		return sessionView{}, err
	}
	return readSessionView(folder, info)
}

// readSessionView reads the transcript of a listed session.
func readSessionView(folder *memory.Folder, info memory.SessionInfo) (sessionView, error) {
	recs, err := folder.ReadSession(info.ID)
	if err != nil {
		return sessionView{}, err
	}
	return sessionView{Desk: folder.Desk(), Info: info, Entries: transcript(recs)}, nil
}

// Kinds of transcript entries.
const (
	entryUser       = "user"
	entryAssistant  = "assistant"
	entryTool       = "tool"
	entryCheckpoint = "checkpoint"
	entryEvent      = "event"
)

// transcriptEntry is one record of a session, ready to show.
type transcriptEntry struct {
	Kind string // entryUser, entryAssistant, ...
	At   time.Time
	// Text is the message's own text; for a new session's first message,
	// without the previous summary, which is in Preamble.
	Text         string
	Preamble     string // the previous session's summary, as the first message carries it
	PreambleDate string // the date that summary is of
	Trigger      string
	TriggerKind  string // user: schedule, market, manual
	Model        string
	Provider     string
	Scripted     bool
	Silent       bool
	Usage        *memory.Usage
	Duration     time.Duration
	Calls        []transcriptCall // assistant: the tools it asked for
	ToolName     string           // tool
	ToolCallID   string           // tool
	IsError      bool             // tool
	EventKind    string           // event: the topic or task (summary, fold, turn.failed, ...)
	CopiedFrom   string           // a record a fork copied: the session it was first written in
}

// transcriptCall is one tool call of an assistant message.
type transcriptCall struct {
	ID, Name string
	Args     string // the arguments, indented JSON
}

// transcript turns a session's records into entries; the header is left out.
func transcript(recs []memory.Record) []transcriptEntry {
	var out []transcriptEntry
	for _, r := range recs {
		e := transcriptEntry{At: r.At, Text: r.Text, Trigger: r.Trigger, Model: r.Model, Provider: r.Provider,
			Scripted: r.Scripted, Silent: r.Silent, Usage: r.Usage, Duration: time.Duration(r.DurationMS) * time.Millisecond,
			CopiedFrom: r.ForkedFrom}
		switch r.Type {
		case memory.RecordHeader:
			continue
		case memory.RecordMessage:
			switch r.Role {
			case router.RoleUser:
				e.Kind, e.TriggerKind = entryUser, r.Kind
				if own := triggers.OwnText(r.Text); own != r.Text {
					e.Text = own
					e.Preamble, e.PreambleDate = splitPreamble(strings.TrimSuffix(r.Text, own))
				}
			case router.RoleAssistant:
				e.Kind, e.Calls = entryAssistant, decodeToolCalls(r.ToolCalls)
			default:
				e.Kind, e.EventKind = entryEvent, "message:"+r.Role
			}
		case memory.RecordTool:
			e.Kind, e.ToolName, e.ToolCallID, e.IsError = entryTool, r.ToolName, r.ToolCallID, r.IsError
		case memory.RecordCheckpoint:
			e.Kind = entryCheckpoint
		default:
			e.Kind, e.EventKind = entryEvent, r.Kind
			if e.EventKind == "" {
				e.EventKind = r.Type
			}
		}
		out = append(out, e)
	}
	return out
}

// splitPreamble returns the summary text and its date from the part of a
// first message in front of its own text.
func splitPreamble(p string) (text, date string) {
	lines := strings.Split(strings.TrimRight(p, "\n"), "\n")
	if len(lines) > 0 {
		head := lines[0]
		if i := strings.LastIndex(head, "from "); i >= 0 {
			date = strings.TrimSuffix(head[i+len("from "):], ":]")
		}
		lines = lines[1:]
	}
	if n := len(lines); n > 0 && strings.HasPrefix(lines[n-1], "[End of the summary.") {
		lines = lines[:n-1]
	}
	return strings.Join(lines, "\n"), date
}

// decodeToolCalls decodes an assistant record's tool calls, arguments
// indented. Calls that do not decode are shown as their raw JSON.
func decodeToolCalls(raw json.RawMessage) []transcriptCall {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" || s == "[]" {
		return nil
	}
	var calls []router.ToolCall
	if err := json.Unmarshal(raw, &calls); err != nil {
		return []transcriptCall{{Name: "(undecodable tool calls)", Args: s}}
	}
	out := make([]transcriptCall, 0, len(calls))
	for _, c := range calls {
		out = append(out, transcriptCall{ID: c.ID, Name: c.Name, Args: indentJSON(c.Arguments)})
	}
	return out
}

// indentJSON indents raw JSON, or returns it as it is when it does not parse.
func indentJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// timeLayout is how the transcripts show instants, in the trading zone.
const timeLayout = "2006-01-02 15:04:05 MST"

// printTranscript prints a session as plain text: a header, then one block
// per record. full prints the previous summary a first message carries.
func printTranscript(w io.Writer, s sessionView, loc *time.Location, full bool) error {
	info := s.Info
	title, _ := sessionTitle(info)
	var b strings.Builder
	p := termsafe.Line // one-line fields: no line break of theirs can start a forged entry
	fmt.Fprintf(&b, "desk %s, session %s, trading date %s\n", p(s.Desk), p(info.ID), dateText(info.Date))
	fmt.Fprintf(&b, "title: %s\n", p(title))
	fmt.Fprintf(&b, "state: %s; turns %d; tokens %d (%d in, %d out)", p(stateText(info)), info.Turns, info.Tokens, info.InputTokens, info.OutputTokens)
	if info.Parent != "" && info.ForkedFrom == "" {
		fmt.Fprintf(&b, "; parent %s", p(info.Parent))
	}
	b.WriteString("\n")
	if info.Carried > 0 {
		fmt.Fprintf(&b, "carries %d records copied by a fork, as they were written (marked \"copied from\"; their turns and tokens count where they were written)\n", info.Carried)
	}
	if info.Scripted {
		b.WriteString("SCRIPTED: answers in this session come from the offline scripted model, not a real LLM\n")
	}
	for _, e := range s.Entries {
		b.WriteString("\n")
		fmt.Fprintf(&b, "--- %s  %s\n", e.At.In(loc).Format(timeLayout), p(entryHeading(e)))
		if e.Preamble != "" {
			if full {
				fmt.Fprintf(&b, "[summary of the previous session, from %s:]\n%s\n[end of the summary]\n", p(e.PreambleDate), termsafe.Text(e.Preamble))
			} else {
				fmt.Fprintf(&b, "[carries the summary of the previous session, from %s: %d lines; --full prints it]\n",
					p(e.PreambleDate), strings.Count(e.Preamble, "\n")+1)
			}
		}
		if text := strings.TrimRight(e.Text, "\n"); text != "" {
			b.WriteString(termsafe.Text(text))
			b.WriteString("\n")
		}
		for _, c := range e.Calls {
			fmt.Fprintf(&b, "-> tool call %s (%s): %s\n", p(c.Name), p(c.ID), p(strings.Join(strings.Fields(c.Args), " ")))
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("print session %s: %w", info.ID, err)
	}
	return nil
}

// entryHeading is the one-line description of an entry: who, and the facts
// beside the text.
func entryHeading(e transcriptEntry) string {
	var parts []string
	switch e.Kind {
	case entryUser:
		parts = append(parts, "user")
		if e.TriggerKind != "" {
			parts = append(parts, e.TriggerKind)
		}
		if e.Trigger != "" {
			parts = append(parts, "trigger "+e.Trigger)
		}
	case entryAssistant:
		parts = append(parts, "assistant")
		if e.Model != "" {
			parts = append(parts, modelText(e))
		}
	case entryTool:
		r := "tool result " + e.ToolName
		if e.ToolCallID != "" {
			r += " (" + e.ToolCallID + ")"
		}
		parts = append(parts, r)
		if e.IsError {
			parts = append(parts, "ERROR")
		}
	case entryCheckpoint:
		parts = append(parts, "checkpoint (the exchanges before it were summarised into this)")
	default:
		parts = append(parts, "event "+e.EventKind)
		if e.Model != "" {
			parts = append(parts, modelText(e))
		}
	}
	if e.Silent {
		parts = append(parts, "silent")
	}
	if u := usageText(e.Usage); u != "" {
		parts = append(parts, u)
	}
	if e.Duration > 0 {
		parts = append(parts, e.Duration.String())
	}
	if e.CopiedFrom != "" {
		parts = append(parts, "copied from "+e.CopiedFrom)
	}
	return strings.Join(parts, " · ")
}

// modelText names the model that wrote an entry, marking the scripted one.
func modelText(e transcriptEntry) string {
	s := e.Model
	if e.Provider != "" {
		s += " (" + e.Provider + ")"
	}
	if e.Scripted {
		s += " SCRIPTED"
	}
	return s
}

// usageText describes a call's token usage, "" for none.
func usageText(u *memory.Usage) string {
	if u == nil {
		return ""
	}
	s := fmt.Sprintf("%d in / %d out tokens", u.InputTokens, u.OutputTokens)
	if u.CachedTokens > 0 {
		s += fmt.Sprintf(" (%d cached)", u.CachedTokens)
	}
	return s
}
