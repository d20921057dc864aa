package event

import (
	"encoding/json"
	"time"
)

// This file is the catalogue of deskd's events: every topic and its payload.
// docs/OBSERVABILITY.md lists the same topics; keep the two in step. docs/EVENTS.md is
// generated from it: run go run ./cmd/docgen after a change.

// Header is what every event carries: when it happened, on deskd's clock,
// and the desk it concerns (empty for daemon-wide events).
type Header struct {
	// At is when it happened, on deskd's clock.
	At time.Time `json:"at"`
	// Desk is the desk it concerns; empty for daemon-wide events.
	Desk string `json:"desk,omitempty"`
	// ID, when set, names the event stably across a crash: a producer that
	// announces an event at least once (a rollover's steps) gives every
	// copy the same ID, so a consumer that has seen an ID may drop the
	// copy. The keeper's are "rollover:<old session>:<step>" (and, for a
	// summary made again because the session went on after a rollover cut
	// short, "rollover:<old session>:summarised:<round>"). Empty for
	// events announced at most once.
	ID string `json:"id,omitempty"`
}

// Head returns the header; it makes every catalogue type an Event.
func (h Header) Head() Header { return h }

// DeskStarted: a desk's loop is running.
type DeskStarted struct {
	Header
	Model    string `json:"model"`
	Provider string `json:"provider"`
	// Scripted is true when the desk runs on the offline scripted model.
	Scripted bool `json:"scripted,omitempty"`
}

// DeskStopped: a desk's loop has ended.
type DeskStopped struct {
	Header
	Reason string `json:"reason"`
}

// SessionStarted: a desk's session is current, because it was resumed after
// a restart, is the desk's first, or replaced yesterday's.
type SessionStarted struct {
	Header
	Session     string        `json:"session"`
	Reason      SessionReason `json:"reason"`
	Previous    string        `json:"previous,omitempty"`
	SummaryPath string        `json:"summary_path,omitempty"`
}

// SessionReason says why a session became current (session.started's reason).
type SessionReason string

// The reasons of session.started.
const (
	// ReasonFirst: the desk's first session.
	ReasonFirst SessionReason = "first"
	// ReasonResumed: the session saved before a restart, picked up again.
	ReasonResumed SessionReason = "resumed"
	// ReasonDailyRollover: the rollover at the trading day's boundary.
	ReasonDailyRollover SessionReason = "daily_rollover"
	// ReasonManualRollover: a rollover an operator asked for.
	ReasonManualRollover SessionReason = "manual_rollover"
	// ReasonFork: a new session that carries the current one's context.
	ReasonFork SessionReason = "fork"
)

// Rollover reports whether the session replaced an older one by a rollover.
func (r SessionReason) Rollover() bool { return r == ReasonDailyRollover || r == ReasonManualRollover }

// SessionSummarized: the old session's summary is written.
type SessionSummarized struct {
	Header
	Session     string `json:"session"`
	Date        string `json:"trading_date"`
	SummaryPath string `json:"summary_path"`
	// Degraded is true when the model failed and the summary is a mechanical digest.
	Degraded bool   `json:"degraded,omitempty"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error,omitempty"`
}

// SessionTorn: a session file ended in a torn line (a crash mid-write); the
// fragment was set aside and the file cut back to its last good record.
type SessionTorn struct {
	Header
	Session string `json:"session"`
	Path    string `json:"path"`
	Offset  int64  `json:"offset"`
	Bytes   int    `json:"bytes"`
	SavedTo string `json:"saved_to"`
}

// MemoryFolded: the day's notes were folded into Memory.md, or the fold was
// skipped or refused (Folded false, with the reason).
type MemoryFolded struct {
	Header
	Session      string   `json:"session"`
	Date         string   `json:"trading_date"`
	Folded       bool     `json:"folded"`
	Notes        []string `json:"notes,omitempty"`
	LinesAdded   int      `json:"lines_added"`
	LinesRemoved int      `json:"lines_removed"`
	HistoryPath  string   `json:"history_path,omitempty"`
	Reason       string   `json:"reason,omitempty"`
}

// SkillsReviewed: the skill curator reviewed the desk's skills.
type SkillsReviewed struct {
	Header
	Session string   `json:"session"`
	Date    string   `json:"trading_date"`
	Skills  []string `json:"skills"`
	Changes []string `json:"changes"`
	Skipped string   `json:"skipped,omitempty"`
}

// RolloverFailed: a rollover step failed; the desk keeps its old session and
// tries again before the next turn.
type RolloverFailed struct {
	Header
	Session string `json:"session"`
	Step    string `json:"step"`
	Error   string `json:"error"`
}

// RolloverProgress: a rollover step (phase summarising, folding or
// curating) started, is still running (every 10 s), or is done. Since is
// when the step started; ElapsedMS how long it has run.
type RolloverProgress struct {
	Header
	Session   string        `json:"session"`
	Date      string        `json:"date"`
	Phase     string        `json:"phase"`
	State     ProgressState `json:"state"`
	Since     time.Time     `json:"since"`
	ElapsedMS int64         `json:"elapsed_ms"`
}

// ProgressState is where a rollover step is (rollover.progress's state).
type ProgressState string

// The states of rollover.progress.
const (
	ProgressStarted ProgressState = "started"
	ProgressRunning ProgressState = "running"
	ProgressDone    ProgressState = "done"
)

// TriggerQueued: a trigger is durably recorded in the desk's ledger and in
// its queue.
type TriggerQueued struct {
	Header
	Trigger string `json:"trigger"`
	Kind    string `json:"kind"`
	Source  string `json:"source"`
	Depth   int    `json:"depth"`
	// Key is the market trigger's coalescing key, if any.
	Key string `json:"key,omitempty"`
	// Replaced is the queued trigger of the same key this one replaced
	// (coalescing), and Merged how many triggers it stands for in all.
	Replaced string `json:"replaced,omitempty"`
	Merged   int    `json:"merged,omitempty"`
	// Restored is true for a trigger queued again after a restart.
	Restored bool `json:"restored,omitempty"`
}

// TriggerDropped: a trigger was refused or removed without a turn.
type TriggerDropped struct {
	Header
	Trigger string `json:"trigger"`
	Kind    string `json:"kind"`
	Reason  string `json:"reason"`
}

// InboxRejected: a file in a desk's inbox (the spool folder) was refused
// and moved to rejected/, beside a .reason file.
type InboxRejected struct {
	Header
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// TurnStarted: a desk began a turn.
type TurnStarted struct {
	Header
	Session string `json:"session"`
	Turn    int    `json:"turn"`
	Trigger string `json:"trigger"`
	Kind    string `json:"kind"`
}

// TurnCompleted: the model answered a turn.
type TurnCompleted struct {
	Header
	Session      string `json:"session"`
	Turn         int    `json:"turn"`
	Trigger      string `json:"trigger"`
	Model        string `json:"model"`
	Provider     string `json:"provider"`
	Scripted     bool   `json:"scripted,omitempty"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
	CachedTokens int    `json:"cached_tokens,omitempty"`
	// CacheWriteTokens are the input tokens the turn's calls wrote to the
	// service's prompt cache (the Messages API reports them).
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// Cost is the turn's cost where the models have prices.
	Cost       float64 `json:"cost,omitempty"`
	ToolCalls  int     `json:"tool_calls,omitempty"`
	DurationMS int64   `json:"duration_ms"`
	// Reconciled is true when a restart found the turn's reply in the
	// session file but not in the ledger (deskd stopped between the two):
	// the turn was answered then, and is not run again. Model, tokens and
	// duration are not known then.
	Reconciled bool `json:"reconciled,omitempty"`
	// Fallback is true when Model is not the desk's first model: Primary
	// names that model and PrimaryError says how its call failed.
	Fallback     bool   `json:"fallback,omitempty"`
	Primary      string `json:"primary,omitempty"`
	PrimaryError string `json:"primary_error,omitempty"`
}

// ModelFailed: one call to a model failed (it may be retried, or the next
// model of the route tried).
type ModelFailed struct {
	Header
	Model string `json:"model"`
	// Status is the HTTP status, 0 when no answer came.
	Status    int    `json:"status"`
	Retryable bool   `json:"retryable"`
	Error     string `json:"error"`
}

// TurnFailed: a turn ended without an answer.
type TurnFailed struct {
	Header
	Session string `json:"session"`
	Turn    int    `json:"turn"`
	Trigger string `json:"trigger"`
	Error   string `json:"error"`
}

// TurnInterrupted: a turn was cut off (shutdown deadline, crash) after its
// model call may have acted; it is not run again automatically, and an
// operator decides what to do.
type TurnInterrupted struct {
	Header
	Session string `json:"session"`
	Trigger string `json:"trigger"`
	Kind    string `json:"kind,omitempty"`
	Reason  string `json:"reason"`
}

// ScheduleMissed: schedule slots passed without a turn. A start after
// downtime, or a clock that jumped, announces one per schedule: Count
// slots from First to Last (Slot is First, for compatibility).
type ScheduleMissed struct {
	Header
	Schedule string    `json:"schedule"`
	Slot     time.Time `json:"slot"`
	Reason   string    `json:"reason"`
	Count    int       `json:"count"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	// Held is set for a slot held past the end of its calendar
	// (beyond_calendar: hold), announced once per schedule and date, at
	// error level: Reason names the calendar and its end.
	Held bool `json:"held,omitempty"`
}

// BudgetExceeded: a turn stopped, or was refused, because a budget is spent.
type BudgetExceeded struct {
	Header
	Budget string `json:"budget"`
	Limit  int64  `json:"limit"`
	Used   int64  `json:"used"`
}

// DeskPaused: an operator paused a desk.
type DeskPaused struct {
	Header
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// DeskResumed: an operator resumed a paused desk.
type DeskResumed struct {
	Header
	By string `json:"by"`
}

// ConfigReloaded: a new config is in force; Changes says what changed.
// Cleared are the desks whose refused file is accepted again, or gone
// ("" for the main file).
type ConfigReloaded struct {
	Header
	Changes []string `json:"changes"`
	Cleared []string `json:"cleared,omitempty"`
}

// ConfigRejected: a config file did not validate. Desk is the desk whose
// file it is, which runs on its last good config (or is not started, when
// it has none); "" for the main file or any file not one desk's, which
// refuses the whole reload: the last good config runs on.
type ConfigRejected struct {
	Header
	Path   string `json:"path"`
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// StorageFailed: a desk could not write to its disk (a full or failing
// disk). Its triggers wait in the ledger; it takes no turn until a write
// succeeds again (storage.recovered).
type StorageFailed struct {
	Header
	Error string `json:"error"`
	// DiskFull is true when the disk (or the quota) is full.
	DiskFull bool `json:"disk_full,omitempty"`
}

// StorageRecovered: a desk's writes succeed again; what waited runs.
type StorageRecovered struct {
	Header
	// Since is when the writes began to fail.
	Since time.Time `json:"since"`
	// Requeued counts the triggers taken up again from the ledger.
	Requeued int `json:"requeued"`
}

// StorageLow: the free space of the state folder's file system fell below
// the threshold (desk.SpaceProbe): every desk's storage shows it degraded,
// and /healthz answers 503, before a write fails. The desks run on.
type StorageLow struct {
	Header
	// Dir is the folder whose file system is short of space.
	Dir string `json:"dir"`
	// FreeBytes is the space free; MinFreeBytes the threshold.
	FreeBytes    uint64 `json:"free_bytes"`
	MinFreeBytes uint64 `json:"min_free_bytes"`
}

// StorageSpaceOK: the free space is back at or above the threshold after
// storage.low.
type StorageSpaceOK struct {
	Header
	Dir          string `json:"dir"`
	FreeBytes    uint64 `json:"free_bytes"`
	MinFreeBytes uint64 `json:"min_free_bytes"`
	// Since is when the space fell below the threshold.
	Since time.Time `json:"since"`
}

// FileTorn: an append-only file other than a session (the trigger ledger,
// the curator's ledger or inventory) held damage when it was opened: a
// torn tail (set aside in SavedTo, the file cut back to Offset) or bad
// lines before its last good record (Skipped, left in place).
type FileTorn struct {
	Header
	Path    string `json:"path"`
	Offset  int64  `json:"offset,omitempty"`
	Bytes   int    `json:"bytes,omitempty"`
	SavedTo string `json:"saved_to,omitempty"`
	Skipped int    `json:"skipped_lines,omitempty"`
}

// DeskFailed: a desk of the config failed to start (a damaged file of
// its folder it cannot do without, say): it runs no turn, and the other
// desks run. File is the file that stopped it, when the failure names one
// (left in place); Reason is the error.
type DeskFailed struct {
	Header
	// File is the desk's file that stopped it (a damaged rollover.json,
	// say), when the failure names one.
	File string `json:"file,omitempty"`
	// Reason is the error of the desk's start.
	Reason string `json:"reason"`
}

// DeskAcquired: this host won a desk's lease in a cluster (config
// cluster): it fenced the desk's WAL, rebuilt the desk's folder and
// starts it. Epoch is the desk's epoch from now on; Previous is the host
// that held the desk before, when this host saw one (a failover).
type DeskAcquired struct {
	Header
	// Host is this host (cluster.host).
	Host string `json:"host"`
	// Epoch is the KV revision of the write that won the lease.
	Epoch uint64 `json:"epoch"`
	// Previous is the host that owned the desk before, when one was seen.
	Previous string `json:"previous,omitempty"`
}

// DeskLost: this host lost a desk's lease (not renewed in time, another
// host took it, or a write refused as fenced): the desk stopped at once,
// a reply in flight was dropped, and the host stands by for it again.
type DeskLost struct {
	Header
	// Host is this host (cluster.host).
	Host string `json:"host"`
	// Epoch is the epoch of the lease lost.
	Epoch uint64 `json:"epoch"`
	// Reason is why the lease was lost.
	Reason string `json:"reason"`
}

// DeskReleased: this host let a desk's lease go on a clean stop (or the
// desk's removal from the config), once the desk had stopped: a standby
// takes it at once.
type DeskReleased struct {
	Header
	// Host is this host (cluster.host).
	Host string `json:"host"`
	// Epoch is the epoch of the lease released.
	Epoch uint64 `json:"epoch"`
}

// FileRebuilt: a desk's file that can be rebuilt from its other files
// (state.json, from the session files) was damaged as the desk started:
// the damaged file was set aside in SetAside, never deleted, and Path
// written anew; Session is the session it names now ("" when the desk had
// none to name, and begins its first).
type FileRebuilt struct {
	Header
	// Path is the file rebuilt (a desk's state.json).
	Path string `json:"path"`
	// SetAside is where the damaged file was moved: <path>.damaged-<UTC time>.
	SetAside string `json:"set_aside"`
	// Reason is what was wrong with it (empty, cut short, not JSON).
	Reason string `json:"reason"`
	// Session is the session the rebuilt file names.
	Session string `json:"session,omitempty"`
}

// Topic returns "desk.started".
func (DeskStarted) Topic() string { return "desk.started" }

// Topic returns "desk.failed".
func (DeskFailed) Topic() string { return "desk.failed" }

// Topic returns "desk.acquired".
func (DeskAcquired) Topic() string { return "desk.acquired" }

// Topic returns "desk.lost".
func (DeskLost) Topic() string { return "desk.lost" }

// Topic returns "desk.released".
func (DeskReleased) Topic() string { return "desk.released" }

// Topic returns "file.rebuilt".
func (FileRebuilt) Topic() string { return "file.rebuilt" }

// Topic returns "desk.stopped".
func (DeskStopped) Topic() string { return "desk.stopped" }

// Topic returns "session.started".
func (SessionStarted) Topic() string { return "session.started" }

// Topic returns "session.summarized".
func (SessionSummarized) Topic() string { return "session.summarized" }

// Topic returns "session.torn".
func (SessionTorn) Topic() string { return "session.torn" }

// Topic returns "memory.folded".
func (MemoryFolded) Topic() string { return "memory.folded" }

// Topic returns "skills.reviewed".
func (SkillsReviewed) Topic() string { return "skills.reviewed" }

// Topic returns "rollover.failed".
func (RolloverFailed) Topic() string { return "rollover.failed" }

// Topic returns "rollover.progress".
func (RolloverProgress) Topic() string { return "rollover.progress" }

// Topic returns "trigger.queued".
func (TriggerQueued) Topic() string { return "trigger.queued" }

// Topic returns "trigger.dropped".
func (TriggerDropped) Topic() string { return "trigger.dropped" }

// Topic returns "inbox.rejected".
func (InboxRejected) Topic() string { return "inbox.rejected" }

// Topic returns "turn.started".
func (TurnStarted) Topic() string { return "turn.started" }

// Topic returns "turn.completed".
func (TurnCompleted) Topic() string { return "turn.completed" }

// Topic returns "model.failed".
func (ModelFailed) Topic() string { return "model.failed" }

// Topic returns "turn.failed".
func (TurnFailed) Topic() string { return "turn.failed" }

// Topic returns "turn.interrupted".
func (TurnInterrupted) Topic() string { return "turn.interrupted" }

// Topic returns "schedule.missed".
func (ScheduleMissed) Topic() string { return "schedule.missed" }

// Topic returns "budget.exceeded".
func (BudgetExceeded) Topic() string { return "budget.exceeded" }

// Topic returns "desk.paused".
func (DeskPaused) Topic() string { return "desk.paused" }

// Topic returns "desk.resumed".
func (DeskResumed) Topic() string { return "desk.resumed" }

// Topic returns "config.reloaded".
func (ConfigReloaded) Topic() string { return "config.reloaded" }

// Topic returns "config.rejected".
func (ConfigRejected) Topic() string { return "config.rejected" }

// Topic returns "storage.failed".
func (StorageFailed) Topic() string { return "storage.failed" }

// Topic returns "storage.recovered".
func (StorageRecovered) Topic() string { return "storage.recovered" }

// Topic returns "storage.low".
func (StorageLow) Topic() string { return "storage.low" }

// Topic returns "storage.space_ok".
func (StorageSpaceOK) Topic() string { return "storage.space_ok" }

// Topic returns "file.torn".
func (FileTorn) Topic() string { return "file.torn" }

// MemoryUnreadable: a desk's Memory.md or one of its skills exists but
// could not be read (its permissions, say), so the desk's prompts go
// without it; the desk's status lists it until it can be read again.
type MemoryUnreadable struct {
	Header
	// Path is the file (or the skills folder, when it cannot be listed).
	Path  string `json:"path"`
	Error string `json:"error"`
}

// Topic returns "memory.unreadable".
func (MemoryUnreadable) Topic() string { return "memory.unreadable" }

// TriggerAcknowledged: the operator acknowledged an interrupted trigger
// (POST /v1/desks/{desk}/triggers/{id}/ack); it leaves the desk status's
// interrupted list.
type TriggerAcknowledged struct {
	Header
	Trigger string `json:"trigger"`
	By      string `json:"by"`
	Note    string `json:"note,omitempty"`
}

// Topic returns "trigger.acknowledged".
func (TriggerAcknowledged) Topic() string { return "trigger.acknowledged" }

// MemoryRestored: an operator made a kept version of a desk's Memory.md
// the current one, through the running deskd; the text it replaced is
// kept as KeptAs (empty when there was no Memory.md).
type MemoryRestored struct {
	Header
	Version string `json:"version"`
	KeptAs  string `json:"kept_as,omitempty"`
	By      string `json:"by"`
}

// Topic returns "memory.restored".
func (MemoryRestored) Topic() string { return "memory.restored" }

// SkillsUndone: an operator undid one of the skill curator's changes,
// through the running deskd; Change is the change reversed and Undo the
// undo's own entry in the curator's ledger.
type SkillsUndone struct {
	Header
	Change string `json:"change"`
	Undo   string `json:"undo"`
	Skill  string `json:"skill"`
	By     string `json:"by"`
}

// Topic returns "skills.undone".
func (SkillsUndone) Topic() string { return "skills.undone" }

// NATSOutboxFull: the outbox of events waiting for NATS reached its
// max_bytes (NATS has been away, or refuses them, for long enough), or
// its disk refused a write (Error), so new events are not kept for NATS: they are counted as dropped (they
// still reach the bus's other subscribers). Announced once per outage,
// at the first event dropped; nats.outbox_drained follows when the
// outbox has emptied.
type NATSOutboxFull struct {
	Header
	// MaxBytes is the outbox's bound.
	MaxBytes int64 `json:"max_bytes"`
	// Waiting is how many events the outbox holds.
	Waiting int `json:"waiting"`
	// Dropped is how many events it has dropped since it filled (1).
	Dropped int64 `json:"dropped"`
	// Error is set when the outbox's file refused the write (a full or
	// failing disk) rather than the outbox being full.
	Error string `json:"error,omitempty"`
}

// Topic returns "nats.outbox_full".
func (NATSOutboxFull) Topic() string { return "nats.outbox_full" }

// NATSOutboxDrained: the outbox that was full (nats.outbox_full) has
// sent everything it held; Dropped is how many events it could not keep
// meanwhile, which NATS will never receive.
type NATSOutboxDrained struct {
	Header
	// Since is when the outbox filled.
	Since time.Time `json:"since"`
	// Dropped counts the events dropped since then.
	Dropped int64 `json:"dropped"`
}

// Topic returns "nats.outbox_drained".
func (NATSOutboxDrained) Topic() string { return "nats.outbox_drained" }

// NATSDuplicate: JetStream dropped an event deskd sent for the first time
// as a duplicate of a message it already stored with the same
// Nats-Msg-Id, and that message is not deskd's copy of the event: a
// message published with deskd's id (its secret leaked?) or a colliding
// id. The event is not on the stream. Desk is the event's desk.
type NATSDuplicate struct {
	Header
	// Subject is the dropped event's subject.
	Subject string `json:"subject"`
	// EventID is the event's own id (Header.ID), empty when it had none.
	EventID string `json:"event_id,omitempty"`
	// MsgID is the Nats-Msg-Id the event was sent with.
	MsgID string `json:"msg_id"`
	// StreamSeq is the stream sequence of the message stored in its place.
	StreamSeq uint64 `json:"stream_seq"`
}

// Topic returns "nats.duplicate".
func (NATSDuplicate) Topic() string { return "nats.duplicate" }

// NATSRejected: a trigger message from NATS was terminated (never
// redelivered): its subject names no desk, its body is not a trigger, or
// it asks for a manual trigger, which a feed may not send.
type NATSRejected struct {
	Header
	Subject string `json:"subject"`
	MsgID   string `json:"msg_id,omitempty"`
	Reason  string `json:"reason"`
}

// Topic returns "nats.rejected".
func (NATSRejected) Topic() string { return "nats.rejected" }

// NATSBackpressure: a trigger message from NATS was not queued for now
// (the queue is full, the desk is paused and refuses triggers, cannot
// write to its disk, or is restarting) and was handed back to NATS, to be
// delivered again after DelayMS. Reason is queue_full, paused, storage,
// stopped or error; Error is the desk's words.
type NATSBackpressure struct {
	Header
	Trigger string `json:"trigger"`
	Reason  string `json:"reason"`
	Error   string `json:"error"`
	DelayMS int64  `json:"delay_ms"`
}

// Topic returns "nats.backpressure".
func (NATSBackpressure) Topic() string { return "nats.backpressure" }

// ToolCalled: a desk's model called a tool and deskd answered the call:
// it ran (Outcome ok or error), or it did not (refused: not allowed, over
// its day's limit, its server unavailable; denied or expired: waiting for
// an operator's approval). Server is the MCP server of an mcp__ tool, ""
// for the built-in and command tools. DurationMS is how long the call
// took, approval wait included.
type ToolCalled struct {
	Header
	Session    string `json:"session,omitempty"`
	Trigger    string `json:"trigger,omitempty"`
	Call       string `json:"call"`
	Tool       string `json:"tool"`
	Server     string `json:"server,omitempty"`
	Outcome    string `json:"outcome"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
	// Unknown is true when the desk has no tool of that name (the model
	// made it up): the metrics count it under tool "unknown".
	Unknown bool `json:"unknown,omitempty"`
}

// Topic returns "tool.called".
func (ToolCalled) Topic() string { return "tool.called" }

// ApprovalRequested: a desk's model called a tool that needs an operator's
// approval (its desk file's approve list); the call waits, until
// ExpiresAt at the latest, for POST .../approvals/{id}/approve or deny.
type ApprovalRequested struct {
	Header
	ID        string          `json:"id"`
	Trigger   string          `json:"trigger,omitempty"`
	Call      string          `json:"call"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	ExpiresAt time.Time       `json:"expires_at"`
}

// Topic returns "approval.requested".
func (ApprovalRequested) Topic() string { return "approval.requested" }

// ApprovalDecided: a waiting call was approved (it runs), denied or
// expired (the model hears so, and it does not run), or is no longer
// waited for because its turn was stopped (refused). By is the operator
// who decided ("deskd" for an expiry or a stopped turn, the pauser for a
// paused desk's denial); Reason says why, where one was given.
type ApprovalDecided struct {
	Header
	ID       string `json:"id"`
	Trigger  string `json:"trigger,omitempty"`
	Call     string `json:"call"`
	Tool     string `json:"tool"`
	Outcome  string `json:"outcome"`
	By       string `json:"by"`
	Reason   string `json:"reason,omitempty"`
	WaitedMS int64  `json:"waited_ms"`
}

// Topic returns "approval.decided".
func (ApprovalDecided) Topic() string { return "approval.decided" }

// MCPServerUp: deskd is connected to an MCP server (mcp_servers) and has
// its tool list; Tools counts them. Restarts counts the restarts since
// deskd started it first.
type MCPServerUp struct {
	Header
	Server   string `json:"server"`
	Tools    int    `json:"tools"`
	Restarts int    `json:"restarts"`
}

// Topic returns "mcp.server.up".
func (MCPServerUp) Topic() string { return "mcp.server.up" }

// MCPServerDown: an MCP server could not be started or reached, or went
// away: the desks that use it run on without its tools (their models are
// told) until it is back. RetryAt is when deskd tries again.
type MCPServerDown struct {
	Header
	Server  string    `json:"server"`
	Error   string    `json:"error"`
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// Topic returns "mcp.server.down".
func (MCPServerDown) Topic() string { return "mcp.server.down" }

// CalendarEnding: an exchange calendar a desk follows ends within
// calendar_warn_days (or has ended): announced at start and at each new
// trading date, once per calendar and date. Through is its last date
// covered; DaysLeft counts deskd's trading dates to it (0 on it, negative
// past it). Past its end, beyond_calendar decides what its desks do.
type CalendarEnding struct {
	Header
	Calendar string `json:"calendar"`
	Through  string `json:"through"`
	DaysLeft int    `json:"days_left"`
}

// Topic returns "calendar.ending".
func (CalendarEnding) Topic() string { return "calendar.ending" }

// NotifyFailed: a notification target (the main file's notify) is in
// trouble. Reason failing: a post was refused (a status other than 2xx,
// a timeout, a refused connection) and is retried with backoff, announced
// at the first failure of a streak; gave_up: a notification was retried
// for the target's give_up_after and is dropped; dropped: the target's
// outbox is full, or its disk refused the write, so a notification was
// not kept (once per outage). It is never posted to Target itself.
type NotifyFailed struct {
	Header
	Target string `json:"target"`
	Reason string `json:"reason"`
	// Type is the notification's type (its event's topic, turn.fallback
	// or turn.answered).
	Type string `json:"type,omitempty"`
	// WebhookID is the notification's webhook-id.
	WebhookID string `json:"webhook_id,omitempty"`
	// Error says how the last post failed (never the URL's path or a secret).
	Error    string `json:"error,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
}

// Topic returns "notify.failed".
func (NotifyFailed) Topic() string { return "notify.failed" }

// Topics lists every topic of the catalogue, in the order above.
func Topics() []string {
	return []string{
		DeskStarted{}.Topic(), DeskStopped{}.Topic(), DeskFailed{}.Topic(), DeskAcquired{}.Topic(), DeskLost{}.Topic(), DeskReleased{}.Topic(), FileRebuilt{}.Topic(), SessionStarted{}.Topic(),
		SessionSummarized{}.Topic(), SessionTorn{}.Topic(), MemoryFolded{}.Topic(),
		SkillsReviewed{}.Topic(), RolloverFailed{}.Topic(), RolloverProgress{}.Topic(), TriggerQueued{}.Topic(),
		TriggerDropped{}.Topic(), InboxRejected{}.Topic(), TurnStarted{}.Topic(), TurnCompleted{}.Topic(), ModelFailed{}.Topic(),
		TurnFailed{}.Topic(), TurnInterrupted{}.Topic(), ScheduleMissed{}.Topic(),
		BudgetExceeded{}.Topic(), DeskPaused{}.Topic(), DeskResumed{}.Topic(),
		ConfigReloaded{}.Topic(), ConfigRejected{}.Topic(),
		StorageFailed{}.Topic(), StorageRecovered{}.Topic(), StorageLow{}.Topic(), StorageSpaceOK{}.Topic(), FileTorn{}.Topic(),
		MemoryUnreadable{}.Topic(),
		TriggerAcknowledged{}.Topic(), MemoryRestored{}.Topic(), SkillsUndone{}.Topic(),
		NATSOutboxFull{}.Topic(), NATSOutboxDrained{}.Topic(), NATSDuplicate{}.Topic(), NATSRejected{}.Topic(), NATSBackpressure{}.Topic(),
		ToolCalled{}.Topic(), ApprovalRequested{}.Topic(), ApprovalDecided{}.Topic(), MCPServerUp{}.Topic(), MCPServerDown{}.Topic(),
		CalendarEnding{}.Topic(), NotifyFailed{}.Topic(),
	}
}
