package router

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/deskd/deskd/memory"
)

// Task says what a model call is for. Real models see only the prompt; the
// offline scripted model uses the task to answer deterministically.
type Task string

// The tasks a router asks of a model.
const (
	TaskTurn    Task = "turn"
	TaskSummary Task = "summary"
	TaskFold    Task = "fold"
	// TaskCompact asks for a checkpoint summary of older exchanges.
	TaskCompact Task = "compact"
	// TaskCurate asks for the skill curator's operations (JSON).
	TaskCurate Task = "curate"
	// TaskFlush is the silent turn before a compaction, in which the desk
	// writes notes of what it must not forget.
	TaskFlush Task = "flush"
)

// Roles of a message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleTool carries a tool's result back to the model.
	RoleTool = "tool"
)

// Message is one message of a conversation.
type Message struct {
	// Role is RoleUser, RoleAssistant or RoleTool.
	Role string
	// Text is the message's text; for RoleTool, the tool's result.
	Text string
	// ToolCalls are the tools an assistant message asks to run.
	ToolCalls []ToolCall
	// ToolCallID answers the ToolCall of that id (RoleTool only).
	ToolCallID string
	// ToolName is the name of the tool that answered (RoleTool only).
	ToolName string
	// IsError marks a tool result that is an error (RoleTool only).
	IsError bool
}

// ToolSpec describes a tool the model may call.
type ToolSpec struct {
	Name        string
	Description string
	// Schema is the JSON schema of the arguments (an object schema).
	Schema json.RawMessage
}

// ToolCall is the model's request to run a tool.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Request is one call to a model.
type Request struct {
	Task     Task
	System   string
	Messages []Message
	// Tools the model may call; empty for summaries and folds.
	Tools []ToolSpec
	// MaxOutputTokens caps the answer; 0 means the model's configured cap.
	MaxOutputTokens int
	// Fold carries the parts of a fold request (Task == TaskFold).
	Fold *FoldInput
}

// FoldInput is what a fold folds: the current Memory.md and the notes.
type FoldInput struct {
	Date   memory.Date
	Memory string
	Notes  string
}

// Response is a model's answer.
type Response struct {
	// Text is the answer's text (may be empty when ToolCalls is not).
	Text string
	// ToolCalls are the tools the model asks to run before it answers.
	ToolCalls []ToolCall
	// Usage is what the service reported (estimated by the scripted model).
	Usage memory.Usage
	// ModelID is the provider's own id of the model that answered, as the
	// service reported it.
	ModelID string
	// StopReason is the service's reason for ending the answer.
	StopReason string
}

// Provider is one model service: the scripted model, or a client of a real
// model API. Complete makes one attempt; the router retries and falls back.
// A failure should be an *APIError where the service answered.
type Provider interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// APIError is a failed call to a model service.
type APIError struct {
	// Model is the configured model's name.
	Model string
	// Status is the HTTP status, or 0 when no answer came (timeout, dropped
	// connection, stream cut mid-way).
	Status int
	// Retryable is true for 429, 5xx, 529 (overloaded), timeouts and dropped
	// connections; false for the request's own faults (400, 401, 403, 404,
	// a context overflow).
	Retryable bool
	// ContextOverflow is true when the service said the request is larger
	// than the model's context window.
	ContextOverflow bool
	// RetryAfter is the wait the service asked for (Retry-After), if any.
	RetryAfter time.Duration
	// Err is the underlying error; it never holds an API key.
	Err error
}

// Error names the model and the status.
func (e *APIError) Error() string {
	if e.Status == 0 {
		return "model " + e.Model + ": " + e.Err.Error()
	}
	return "model " + e.Model + ": status " + strconv.Itoa(e.Status) + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *APIError) Unwrap() error { return e.Err }

// Model is one entry of a desk's route: a configured model and its client.
type Model struct {
	// Name is the model's key in the config's models map.
	Name string
	// Provider names the service kind: "scripted", "openai", "anthropic".
	Provider string
	// Client makes the calls.
	Client Provider
	// ContextWindow is the model's context size in tokens (0: unknown).
	ContextWindow int
	// Prices are per million tokens; zero when not set.
	Prices Prices
}

// Prices of a model, per million tokens.
type Prices struct {
	Input, Output, CachedInput float64
}

// Scripted reports whether the model is the offline scripted one.
func (m Model) Scripted() bool { return m.Provider == ScriptedProvider }
