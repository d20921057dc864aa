// Package approval holds the tool calls that wait for an operator's
// decision: a desk's model called a tool its desk file lists under
// approve, and the call does not run until an operator approves it (API,
// deskd approve, the console). It expires after the desk's approve_within,
// and a paused desk denies every call that waits. Each request and
// decision is announced (approval.requested, approval.decided); the router
// keeps the decision in the session.
package approval

import (
	"encoding/json"
	"errors"
	"time"
)

// Errors of Decide.
var (
	// ErrUnknown: no call of that id waits on that desk (it was never
	// asked for, or was decided or expired already).
	ErrUnknown = errors.New("no tool call of that id waits for a decision")
)

// Pending is one call that waits for a decision, as the API and status
// show it.
type Pending struct {
	// ID names the call for deskd approve|deny DESK ID: short, unique
	// among the desk's calls of this deskd's run.
	ID      string `json:"id"`
	Desk    string `json:"desk"`
	Session string `json:"session,omitempty"`
	Trigger string `json:"trigger,omitempty"`
	// Call is the model's id of the call, Tool the tool as the model
	// calls it (mcp__<server>__<tool>) and Arguments its arguments.
	Call      string          `json:"call"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// RequestedAt and ExpiresAt are on deskd's clock.
	RequestedAt time.Time `json:"requested_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}
