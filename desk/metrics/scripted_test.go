package metrics

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// TestMetricsMarkScriptedAndFallbacks: a turn of the scripted model is
// labelled model="NAME (scripted)" (from the event's flag, not the name),
// and turns a fallback answered are counted by desk and model.
func TestMetricsMarkScriptedAndFallbacks(t *testing.T) {
	m, publish := newTestMetrics(t)
	t0 := time.Date(2026, 3, 2, 9, 15, 0, 0, time.UTC)
	h := event.Header{At: t0, Desk: "main"}
	publish(
		event.TurnCompleted{Header: h, Model: "offline", Provider: "scripted", Scripted: true, InputTokens: 10, OutputTokens: 5,
			Fallback: true, Primary: "gpt-4o", PrimaryError: "HTTP 500"},
		event.TurnCompleted{Header: h, Model: "offline", Provider: "scripted", Scripted: true, InputTokens: 10, OutputTokens: 5,
			Fallback: true, Primary: "gpt-4o", PrimaryError: "HTTP 500"},
		event.TurnCompleted{Header: h, Model: "gpt-4o", Provider: "openai", InputTokens: 100, OutputTokens: 50},
		// A model merely named like the scripted one is not marked.
		event.TurnCompleted{Header: event.Header{At: t0, Desk: "fx"}, Model: "offline", Provider: "openai", InputTokens: 1},
	)
	fams := metricstest.Scrape(t, m.Handler())
	for _, tt := range []struct {
		metric string
		labels []string
		want   float64
	}{
		{"deskd_turns_total", []string{"desk", "main", "model", "offline (scripted)", "outcome", "completed"}, 2},
		{"deskd_turns_total", []string{"desk", "main", "model", "gpt-4o", "outcome", "completed"}, 1},
		{"deskd_turns_total", []string{"desk", "fx", "model", "offline", "outcome", "completed"}, 1},
		{"deskd_tokens_total", []string{"desk", "main", "kind", "input", "model", "offline (scripted)"}, 20},
		{"deskd_turn_duration_seconds", []string{"desk", "main", "model", "offline (scripted)"}, 2},
		{"deskd_fallback_answers_total", []string{"desk", "main", "model", "offline (scripted)"}, 2},
	} {
		if got, ok := metricstest.Value(fams, tt.metric, tt.labels...); !ok || got != tt.want {
			t.Errorf("%s%v = %v (present %v), want %v", tt.metric, tt.labels, got, ok, tt.want)
		}
	}
	for _, absent := range [][]string{
		{"deskd_turns_total", "desk", "main", "model", "offline", "outcome", "completed"},
		{"deskd_fallback_answers_total", "desk", "main", "model", "gpt-4o"},
		{"deskd_fallback_answers_total", "desk", "fx", "model", "offline"},
	} {
		if v, ok := metricstest.Value(fams, absent[0], absent[1:]...); ok {
			t.Errorf("%s%v = %v, want no such series", absent[0], absent[1:], v)
		}
	}
}
