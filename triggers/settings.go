package triggers

// This file holds a desk's trigger settings as the config names them:
// the queue's bound, its coalescing, and what a paused desk does with its
// triggers. The config parses its YAML into these; the desk and its queue
// take them.

// Bounds of a desk's queue (queue_limit).
const (
	// DefaultQueueLimit is how many triggers a desk's queue holds when
	// queue_limit is not set.
	DefaultQueueLimit = 256
	// MaxQueueLimit is the largest queue_limit allowed.
	MaxQueueLimit = 100000
)

// Coalesce is a desk's coalesce: whether a newer market trigger replaces
// the queued one of the same key.
type Coalesce string

// The values of Coalesce.
const (
	// CoalesceOff queues every market trigger (the default).
	CoalesceOff Coalesce = "off"
	// CoalesceKey lets a market trigger with a key replace the queued
	// market trigger of the same key.
	CoalesceKey Coalesce = "key"
)

// ByKey reports whether c coalesces market triggers by key (NewQueue's coalesce).
func (c Coalesce) ByKey() bool { return c == CoalesceKey }

// PausedTriggers is a desk's paused_triggers: what it does with triggers
// while an operator has paused it.
type PausedTriggers string

// The values of PausedTriggers.
const (
	// PausedQueue queues a paused desk's triggers until it is resumed (the default).
	PausedQueue PausedTriggers = "queue"
	// PausedRefuse refuses a paused desk's triggers.
	PausedRefuse PausedTriggers = "refuse"
)

// Refuse reports whether a paused desk refuses its triggers.
func (p PausedTriggers) Refuse() bool { return p == PausedRefuse }
