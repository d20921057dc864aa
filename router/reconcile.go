package router

import (
	"errors"
	"fmt"

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
	// Answered is true when the turn's final reply is in the session;
	// Reply is its text and Turn the turn's number in the session.
	Answered bool
	Reply    string
	Turn     int
}

// Outcome reads session's file for what became of trigger's turn, so that
// a restart after a crash between the reply and the ledger's record of it
// can tell an answered turn from an interrupted one. It reads the file
// without changing it and does not need the router's session to be open.
func (r *Router) Outcome(session, trigger string) (Outcome, error) {
	records, err := r.folder.ReadSession(session)
	if err != nil {
		return Outcome{}, fmt.Errorf("outcome of %s in session %s: %w", trigger, session, err)
	}
	return outcome(records, trigger), nil
}

// outcome finds trigger's turn in records: the last message of the user
// for it, and the final answer (an assistant message asking for no tool)
// after it.
func outcome(records []memory.Record, trigger string) Outcome {
	var o Outcome
	for i, rec := range records {
		if rec.Type != memory.RecordMessage || rec.Silent || rec.Trigger != trigger || rec.ForkedFrom != "" {
			continue // a fork's copies belong to the turns of the session they came from
		}
		switch {
		case rec.Role == RoleUser:
			o = Outcome{Seen: true}
		case rec.Role == RoleAssistant && o.Seen && len(decodeCalls(rec.ToolCalls)) == 0:
			o.Answered, o.Reply = true, rec.Text
			o.Turn = Rebuild(records[:i+1]).Exchanges
		}
	}
	return o
}
