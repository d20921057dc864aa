package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/deskd/deskd/desk/event"
)

// modelLabel is a model's value of the model label: its name, with
// " (scripted)" after it when the event says it is the offline scripted
// model, so that no dashboard takes its canned replies for a model's.
func modelLabel(name string, scripted bool) string {
	if scripted {
		return name + " (scripted)"
	}
	return name
}

// newFallbacks is deskd_fallback_answers_total.
func newFallbacks() *prometheus.CounterVec {
	return counterVec("deskd_fallback_answers_total",
		"Turns answered by a fallback model (not the desk's first), by desk and the model that answered.", "desk", "model")
}

// fallback counts a turn a fallback answered; model is its label.
func (m *Registry) fallback(e event.TurnCompleted, model string) {
	if e.Fallback {
		m.fallbacks.WithLabelValues(e.Desk, model).Inc()
	}
}
