package router

import (
	"context"
	"encoding/json"
	"time"
)

// This file is what lets tools come and go between turns (a Toolset: an
// MCP server's tools, which may be down) and what decides, call by call,
// whether an acting tool runs (a Gate: an operator's approval, a day's
// limit).

// Outcomes of a tool call: what became of it, in tool.called events, the
// metrics and GateVerdict.Outcome.
const (
	// OutcomeOK: the tool ran and answered.
	OutcomeOK = "ok"
	// OutcomeError: the tool ran and failed, or timed out.
	OutcomeError = "error"
	// OutcomeRefused: deskd did not run it (not allowed in this turn, no
	// such tool, bad arguments, over its day's limit, its server down, or
	// past the cap on the calls of one answer).
	OutcomeRefused = "refused"
	// OutcomeDenied: an operator denied it (or the desk was paused).
	OutcomeDenied = "denied"
	// OutcomeExpired: nobody decided on it in time.
	OutcomeExpired = "expired"
)

// Decisions on a call that waited for an operator (Decision.Outcome).
const (
	DecisionApproved = "approved"
	DecisionDenied   = OutcomeDenied
	DecisionExpired  = OutcomeExpired
)

// RecordApproval is the kind of the session event record that keeps an
// operator's decision on a call (its Data is a Decision).
const RecordApproval = "approval.decided"

// GateCall is the call a Gate decides on.
type GateCall struct {
	// Desk, Session and Trigger say where the call was made.
	Desk    string
	Session string
	Trigger string
	// ID is the model's id of the call.
	ID string
	// Tool is the tool's name, as the model calls it.
	Tool string
	// Arguments are the call's arguments, checked against the schema.
	Arguments json.RawMessage
}

// Verdict is a Gate's answer.
type Verdict struct {
	// Run is true when the call may run.
	Run bool
	// Outcome says what became of a call that does not run
	// (OutcomeRefused, OutcomeDenied, OutcomeExpired).
	Outcome string
	// Result is what the model hears of a call that does not run.
	Result string
	// Decision, when set, is an operator's decision on the call (or its
	// expiry): the router keeps it in the session before the call runs or
	// is answered.
	Decision *Decision
}

// Decision is an operator's decision on a call that waited for one, as the
// session keeps it (the Data of a RecordApproval record).
type Decision struct {
	// ID is the approval's id, as operators name it.
	ID        string          `json:"id"`
	Call      string          `json:"call"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Outcome is DecisionApproved, DecisionDenied or DecisionExpired.
	Outcome string `json:"outcome"`
	// By is who decided: the operator's name, the pauser, or "deskd" for
	// an expiry.
	By          string    `json:"by"`
	Reason      string    `json:"reason,omitempty"`
	RequestedAt time.Time `json:"requested_at"`
	DecidedAt   time.Time `json:"decided_at"`
}

// Gate decides whether a call runs. It may wait (for an operator), and
// must return when ctx ends.
type Gate func(ctx context.Context, call GateCall) Verdict

// Toolset is a source of tools that may change between turns, such as an
// MCP server's, which may be down. The router asks it for its tools at
// the start of each turn, and offers the model those.
type Toolset interface {
	// Tools returns the tools offered now.
	Tools() []Tool
	// Notes returns lines for the system prompt that tell the model which
	// of its tools are unavailable now, and why; none when all are there.
	Notes() []string
}

// Refuser is a Toolset that can say why a tool of its kind is not offered
// (an MCP tool its desk's file does not allow): the model hears that
// rather than "no tool named".
type Refuser interface {
	// Refusal returns why tool is not offered, and whether it knows;
	// allowed is true when the desk may call it (its server is down, say),
	// so that it is not counted as a name the model made up.
	Refusal(tool string) (why string, allowed, ok bool)
}
