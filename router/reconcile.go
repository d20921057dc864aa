package router

import (
	"errors"
	"fmt"
	"slices"

	"github.com/deskd/deskd/memory"
)

// ErrNotSent marks the error of a Send that failed before the model saw
// the trigger (its message could not be recorded): the trigger may run
// again without acting twice.
var ErrNotSent = errors.New("the trigger did not reach the model")

// Outcome is what a session file says of one trigger's turn.
type Outcome struct {
	// Seen is true when the trigger's message is in the session: the model
	// may have seen it.
	Seen bool
	// Requested is true when the session also shows that the turn's
	// request went to the model (its request.sent record, or anything the
	// model answered): the model may have acted. Seen without Requested:
	// the message was recorded and the request never sent, unless the
	// host crashed before the request.sent record reached the disk (it is
	// not fsynced by itself).
	Requested bool
	// Answered is true when the turn's final reply is in the session;
	// Reply is its text and Turn the turn's number in the session.
	Answered bool
	Reply    string
	Turn     int
	// Session is the session whose file told it.
	Session string
	// Unanswered are the tool calls the model asked for in the turn that
	// have no result in the session: each may have run (or was waiting,
	// for an approval say, when deskd stopped).
	Unanswered []memory.ToolCall
}

// Outcomes reads session's file once for what became of each trigger's
// turn, so that a restart after a crash can tell a trigger the model never
// saw (run it) from one it may have acted on (interrupted) and from one
// whose reply was written but not recorded in the ledger (answered). The
// session "" is the one the desk's state file names (none yet: no
// trigger was seen). It reads the file without changing it and does not
// need the router's session to be open. A trigger the file does not
// mention has the zero Outcome.
func (r *Router) Outcomes(session string, triggers []string) (map[string]Outcome, error) {
	if session == "" {
		st, ok, err := r.folder.ReadState()
		if err != nil {
			return nil, fmt.Errorf("outcome of %d triggers of %s: %w", len(triggers), r.desk, err)
		}
		if !ok || st.Session == "" {
			return map[string]Outcome{}, nil
		}
		session = st.Session
	}
	records, mentioned, err := r.folder.ReadSessionMentioning(session, triggers)
	if err != nil {
		return nil, fmt.Errorf("outcome of %d triggers in session %s: %w", len(triggers), session, err)
	}
	if !mentioned {
		return map[string]Outcome{}, nil // none of them reached the session
	}
	return outcomes(records, session, triggers), nil
}

// outcomes finds each trigger's turn in records: the last message of the
// user for it, whether its request went out after it (request.sent, or
// anything of the model's), and the final answer (an assistant message
// asking for no tool) after it.
func outcomes(records []memory.Record, session string, triggers []string) map[string]Outcome {
	out := make(map[string]Outcome, len(triggers))
	want := make(map[string]bool, len(triggers))
	for _, id := range triggers {
		want[id] = true
	}
	for i, rec := range records {
		if rec.Silent || !want[rec.Trigger] || rec.ForkedFrom != "" {
			continue // a fork's copies belong to the turns of the session they came from
		}
		o := out[rec.Trigger]
		switch {
		case rec.Type == memory.RecordEvent:
			if rec.Kind == memory.RequestSentKind && o.Seen {
				o.Requested = true
			}
		case rec.Type == memory.RecordTool:
			if o.Seen {
				o.Requested = true // a tool ran: the model asked for it
				o.Unanswered = slices.DeleteFunc(slices.Clone(o.Unanswered), func(c memory.ToolCall) bool { return c.ID == rec.ToolCallID })
			}
		case rec.Type != memory.RecordMessage:
		case rec.Role == RoleUser:
			o = Outcome{Seen: true, Session: session}
		case rec.Role == RoleAssistant && o.Seen:
			o.Requested = true
			calls := decodeCalls(rec.ToolCalls)
			o.Unanswered = append(slices.Clone(o.Unanswered), calls...)
			if len(calls) == 0 {
				o.Answered, o.Reply = true, rec.Text
				o.Turn = Rebuild(records[:i+1]).Exchanges
			}
		}
		out[rec.Trigger] = o
	}
	return out
}
