package desk_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/event"
)

// jsonLines hands each log line to a channel.
type jsonLines struct {
	lines chan map[string]any
}

func (w *jsonLines) Write(p []byte) (int, error) {
	var m map[string]any
	if err := json.Unmarshal(p, &m); err != nil {
		return 0, err
	}
	w.lines <- m
	return len(p), nil
}

// TestLogEventsFallbackAtWarn: model.failed logs at warn, and a turn a
// fallback answered logs at warn once, with a sentence naming the
// fallback, that it is scripted, the primary and its error; a turn the
// primary answered stays at info.
func TestLogEventsFallbackAtWarn(t *testing.T) {
	bus := event.New()
	t.Cleanup(bus.Close)
	w := &jsonLines{lines: make(chan map[string]any, 16)}
	cancel := desk.LogEvents(bus, zerolog.New(w), time.UTC, nil)
	t.Cleanup(cancel)
	h := event.Header{At: time.Date(2026, 3, 2, 9, 15, 0, 0, time.UTC), Desk: "main"}
	event.Publish(bus, event.ModelFailed{Header: h, Model: "gpt", Status: 500, Error: "HTTP 500: boom"})
	event.Publish(bus, event.TurnCompleted{Header: h, Session: "s1", Turn: 1, Trigger: "t1", Model: "offline", Provider: "scripted", Scripted: true,
		Fallback: true, Primary: "gpt", PrimaryError: "model gpt: HTTP 500: boom"})
	event.Publish(bus, event.TurnCompleted{Header: h, Session: "s1", Turn: 2, Trigger: "t2", Model: "gpt", Provider: "openai"})
	want := []struct{ event, level, message string }{
		{"model.failed", "warn", "model gpt failed (status 500, not retryable): HTTP 500: boom"},
		{"turn.completed", "warn", "desk main: turn 1 of session s1 answered by fallback offline (scripted) because primary gpt failed: model gpt: HTTP 500: boom"},
		{"turn.completed", "info", "turn 2 of session s1 answered by gpt in 0s (0 tokens in, 0 tokens out)"},
	}
	for i, w2 := range want {
		select {
		case line := <-w.lines:
			if line["event"] != w2.event || line["level"] != w2.level || line["message"] != w2.message {
				t.Errorf("line %d = %v, want event %s at %s: %q", i, line, w2.event, w2.level, w2.message)
			}
			if i == 1 && (line["fallback"] != true || line["primary"] != "gpt") {
				t.Errorf("the fallback's line lacks fallback true and the primary: %v", line)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no log line %d within 10s", i)
		}
	}
}
