package desk_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/event"
)

// TestDescribeScriptedTurnAndModelFailure: a turn the scripted model
// answered says "(scripted)" in its log sentence, as desk.started does;
// model.failed reads as a sentence ("status 429, retryable", "no answer",
// "not retryable") rather than "retryable false", and says the model and
// its status once, not again from the error's own prefix.
func TestDescribeScriptedTurnAndModelFailure(t *testing.T) {
	h := event.Header{At: time.Date(2026, 3, 2, 9, 15, 0, 0, time.UTC), Desk: "main"}
	for _, tt := range []struct {
		e    event.Event
		want string
	}{
		{event.TurnCompleted{Header: h, Session: "s1", Turn: 3, Model: "offline", Provider: "scripted", Scripted: true, InputTokens: 1, OutputTokens: 2},
			"turn 3 of session s1 answered by offline (scripted) in 0s (1 token in, 2 tokens out)"},
		{event.ModelFailed{Header: h, Model: "gpt", Status: 429, Retryable: true, Error: "slow down"},
			"model gpt failed (status 429, retryable): slow down"},
		{event.ModelFailed{Header: h, Model: "gpt", Retryable: true, Error: "connection refused"},
			"model gpt failed (no answer, retryable): connection refused"},
		{event.ModelFailed{Header: h, Model: "gpt", Status: 401, Error: "invalid key"},
			"model gpt failed (status 401, not retryable): invalid key"},
		{event.ModelFailed{Header: h, Model: "gpt", Status: 401, Error: "model gpt: status 401: auth: invalid key"},
			"model gpt failed (status 401, not retryable): auth: invalid key"},
	} {
		if got := desk.Describe(tt.e, time.UTC); got != tt.want {
			t.Errorf("Describe(%T) = %q, want %q", tt.e, got, tt.want)
		}
	}
}
