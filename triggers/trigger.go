// Package triggers holds the Trigger type and the sources that make one:
// cron schedules evaluated on deskd's clock in the trading time zone (and,
// when they name one, on an exchange's calendar), market events and manual
// requests, the spool folder that feeds write into, and the per-desk
// durable ledger and queue that every trigger passes through.
package triggers

import "time"

// Kind says where a trigger came from; it also orders the desk's queue
// (manual before market before schedule).
type Kind string

// The kinds of trigger.
const (
	Manual   Kind = "manual"
	Market   Kind = "market"
	Schedule Kind = "schedule"
)

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool { return k == Manual || k == Market || k == Schedule }

// Trigger asks a desk to run one turn.
type Trigger struct {
	// ID identifies the trigger; for API triggers it is the idempotency key.
	ID string `json:"id"`
	// Desk is the desk that runs it.
	Desk string `json:"desk"`
	// Kind is where it came from.
	Kind Kind `json:"kind"`
	// Text is the message the desk's model receives. For a market trigger
	// it is untrusted data: Prompt frames it before it reaches the model.
	Text string `json:"text"`
	// At is when it was made, on deskd's clock.
	At time.Time `json:"at"`
	// Source names the maker: a schedule's name, "api", "cli", an inbox file.
	Source string `json:"source"`
	// Key groups market triggers that may be coalesced (a symbol, say).
	Key string `json:"key,omitempty"`
	// Merged counts the earlier queued triggers of the same key that this
	// one replaced (coalescing); the turn's text says so.
	Merged int `json:"merged,omitempty"`
}
