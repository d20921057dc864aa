package router

import (
	"context"

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
)

// Message is one message of a conversation.
type Message struct {
	Role string // "user" or "assistant"
	Text string
}

// Request is one call to a model.
type Request struct {
	Task     Task
	System   string
	Messages []Message
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
	Text  string
	Usage memory.Usage
}

// Provider is one model service: the scripted model, or a client of a real
// model API.
type Provider interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Model is one entry of a desk's route: a configured model and its client.
type Model struct {
	// Name is the model's key in the config's models map.
	Name string
	// Provider names the service kind: "scripted", "openai", "anthropic".
	Provider string
	// Client makes the calls.
	Client Provider
}

// Scripted reports whether the model is the offline scripted one.
func (m Model) Scripted() bool { return m.Provider == ScriptedProvider }
