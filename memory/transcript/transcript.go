// Package transcript is a desk's session for people: its records decoded
// into entries (a new session's first message split from the summary it
// carries, tool calls with their arguments indented), the session's title
// and state as the operator tools show them, and the session rendered as
// plain text (deskd show) or as one self-contained HTML page (deskd
// export, and the audit bundle).
//
// It reads the desk folder through package memory and never changes it.
package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// Session is one session read for showing: what the listing says of it,
// and its transcript.
type Session struct {
	// Desk is the desk's name.
	Desk string
	// Info is what memory.Folder.ListSessions says of the session.
	Info memory.SessionInfo
	// Entries are its records, the header left out (see Decode).
	Entries []Entry
}

// Read reads the transcript of a listed session of folder's desk.
func Read(folder *memory.Folder, info memory.SessionInfo) (Session, error) {
	recs, err := folder.ReadSession(info.ID)
	if err != nil {
		return Session{}, err
	}
	return Session{Desk: folder.Desk(), Info: info, Entries: Decode(recs)}, nil
}

// Load reads the session an operator named (see Pick).
func Load(folder *memory.Folder, name string) (Session, error) {
	info, err := Find(folder, name)
	if err != nil {
		return Session{}, err
	}
	return Read(folder, info)
}

// Find lists the sessions of folder and picks the one name names (Pick;
// "" for the desk's current one), without reading its records.
func Find(folder *memory.Folder, name string) (memory.SessionInfo, error) {
	infos, err := folder.ListSessions()
	if err != nil {
		return memory.SessionInfo{}, err
	}
	return Pick(folder.Desk(), infos, name)
}

// The errors of Pick, for errors.Is.
var (
	// ErrNoSessions: the desk has no sessions.
	ErrNoSessions = errors.New("no sessions")
	// ErrUnknownSession: no session has the name, nor begins with it.
	ErrUnknownSession = errors.New("no such session")
	// ErrAmbiguousSession: the name begins the ids of several sessions.
	ErrAmbiguousSession = errors.New("ambiguous session name")
)

// pickError is an error of Pick: its words for the operator, and which of
// Pick's errors it is.
type pickError struct {
	kind error
	msg  string
}

func (e *pickError) Error() string { return e.msg }
func (e *pickError) Unwrap() error { return e.kind }

// Pick finds the session an operator named among infos (a desk's
// sessions, oldest first): an exact id, or a prefix that only one session
// id has. An empty name picks the desk's active session, or its newest
// when none is active. Its errors satisfy errors.Is with ErrNoSessions,
// ErrUnknownSession or ErrAmbiguousSession.
func Pick(desk string, infos []memory.SessionInfo, name string) (memory.SessionInfo, error) {
	if len(infos) == 0 {
		return memory.SessionInfo{}, &pickError{ErrNoSessions, fmt.Sprintf("desk %s has no sessions", desk)}
	}
	if name == "" {
		for _, info := range infos {
			if info.State == memory.SessionActive {
				return info, nil
			}
		}
		return infos[len(infos)-1], nil
	}
	found := memory.ByID(infos, name, sessionID)
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return memory.SessionInfo{}, &pickError{ErrUnknownSession, fmt.Sprintf("desk %s has no session %q", desk, name)}
	}
	ids, more := memory.Candidates(found, sessionID)
	if more > 0 {
		ids = append(ids, fmt.Sprintf("and %d more", more))
	}
	return memory.SessionInfo{}, &pickError{ErrAmbiguousSession,
		fmt.Sprintf("desk %s: %q names %d sessions: %s", desk, name, len(found), strings.Join(ids, ", "))}
}

func sessionID(info memory.SessionInfo) string { return info.ID }

// maxDefaultTitle is the length, in characters, of a title derived from a
// session's first message.
const maxDefaultTitle = 60

// untitled is the title of a session that has no user message yet.
const untitled = "(no messages yet)"

// Title returns the title to show for a session: the operator's
// (byOperator true), or one derived from its first message.
func Title(info memory.SessionInfo) (title string, byOperator bool) {
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

// StateText is a session's state as the operator tools show it, with
// where a fork came from ("active, forked from <id>") and where a session
// forked from went ("forked into <id>").
func StateText(info memory.SessionInfo) string {
	s := string(info.State)
	if info.State == memory.SessionForked {
		s += " into " + strings.Join(info.Forks, ", ")
	}
	if info.ForkedFrom != "" {
		s += ", forked from " + info.ForkedFrom
	}
	return s
}

// DateText formats a trading date, "-" for none.
func DateText(d memory.Date) string {
	if d.IsZero() {
		return "-"
	}
	return d.String()
}

// Kind is the kind of a transcript entry.
type Kind string

// The kinds of entries.
const (
	User       Kind = "user"
	Assistant  Kind = "assistant"
	Tool       Kind = "tool"
	Checkpoint Kind = "checkpoint"
	Event      Kind = "event"
)

// Entry is one record of a session, ready to show. Its JSON (the desk
// page's API) names each field in snake_case, leaves the empty ones out
// and gives Duration in milliseconds, as duration_ms.
type Entry struct {
	// Kind is who wrote it: User, Assistant, Tool, Checkpoint, Event.
	Kind Kind `json:"kind"`
	// At is the record's time.
	At time.Time `json:"at,omitzero"`
	// Text is the message's own text; for a new session's first message,
	// without the previous summary, which is in Preamble.
	Text         string        `json:"text,omitempty"`
	Preamble     string        `json:"preamble,omitempty"`      // the previous session's summary, as the first message carries it
	PreambleDate string        `json:"preamble_date,omitempty"` // the date that summary is of
	Trigger      string        `json:"trigger,omitempty"`       // the trigger the record is of
	TriggerKind  string        `json:"trigger_kind,omitempty"`  // user: schedule, market, manual
	Model        string        `json:"model,omitempty"`         // the model that wrote it
	Provider     string        `json:"provider,omitempty"`      // and its provider
	Scripted     bool          `json:"scripted,omitempty"`      // written by the offline scripted model
	Silent       bool          `json:"silent,omitempty"`        // part of a silent turn
	Usage        *memory.Usage `json:"usage,omitempty"`
	Duration     time.Duration `json:"-"`                      // in JSON: duration_ms
	Calls        []Call        `json:"calls,omitempty"`        // assistant: the tools it asked for
	ToolName     string        `json:"tool_name,omitempty"`    // tool
	ToolCallID   string        `json:"tool_call_id,omitempty"` // tool
	IsError      bool          `json:"is_error,omitempty"`     // tool
	EventKind    string        `json:"event_kind,omitempty"`   // event: the topic or router.Task (summary, fold, turn.failed, ...)
	CopiedFrom   string        `json:"copied_from,omitempty"`  // a record a fork copied: the session it was first written in
}

// MarshalJSON gives the entry's fields and its duration_ms.
func (e Entry) MarshalJSON() ([]byte, error) {
	type fields Entry // without this method
	return json.Marshal(struct {
		fields
		DurationMS int64 `json:"duration_ms,omitempty"`
	}{fields(e), e.Duration.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Entry) UnmarshalJSON(b []byte) error {
	type fields Entry
	var v struct {
		fields
		DurationMS int64 `json:"duration_ms,omitempty"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Entry(v.fields)
	e.Duration = time.Duration(v.DurationMS) * time.Millisecond
	return nil
}

// Call is one tool call of an assistant message.
type Call struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	Args string `json:"args,omitempty"` // the arguments, indented JSON
}

// Decode turns a session's records into entries; the header is left out.
func Decode(recs []memory.Record) []Entry {
	var out []Entry
	for _, r := range recs {
		e := Entry{At: r.At, Text: r.Text, Trigger: r.Trigger, Model: r.Model, Provider: r.Provider,
			Scripted: r.Scripted, Silent: r.Silent, Usage: r.Usage, Duration: time.Duration(r.DurationMS) * time.Millisecond,
			CopiedFrom: r.ForkedFrom}
		switch r.Type {
		case memory.RecordHeader:
			continue
		case memory.RecordMessage:
			switch r.Role {
			case router.RoleUser:
				e.Kind, e.TriggerKind = User, r.Kind
				if own := triggers.OwnText(r.Text); own != r.Text {
					e.Text = own
					e.Preamble, e.PreambleDate = splitPreamble(strings.TrimSuffix(r.Text, own))
				}
			case router.RoleAssistant:
				e.Kind, e.Calls = Assistant, decodeToolCalls(r.ToolCalls)
			default:
				e.Kind, e.EventKind = Event, "message:"+r.Role
			}
		case memory.RecordTool:
			e.Kind, e.ToolName, e.ToolCallID, e.IsError = Tool, r.ToolName, r.ToolCallID, r.IsError
		case memory.RecordCheckpoint:
			e.Kind = Checkpoint
		default:
			e.Kind, e.EventKind = Event, r.Kind
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
func decodeToolCalls(raw json.RawMessage) []Call {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" || s == "[]" {
		return nil
	}
	calls, ok := memory.Record{ToolCalls: raw}.Calls()
	if !ok {
		return []Call{{Name: "(undecodable tool calls)", Args: s}}
	}
	out := make([]Call, 0, len(calls))
	for _, c := range calls {
		out = append(out, Call{ID: c.ID, Name: c.Name, Args: indentJSON(c.Arguments)})
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
