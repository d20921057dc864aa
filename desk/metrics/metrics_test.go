package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/metrics/metricstest"
)

// newTestMetrics returns metrics on a fresh bus and a function that
// publishes events and waits until the metrics have counted them.
func newTestMetrics(t *testing.T) (*Registry, func(...event.Event)) {
	t.Helper()
	bus := event.New()
	counted := make(chan event.Event, 1024)
	m := newRegistry(bus, func(e event.Event) { counted <- e })
	t.Cleanup(func() { m.Close(); bus.Close() })
	publish := func(evs ...event.Event) {
		t.Helper()
		for _, e := range evs {
			publishAny(bus, e)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		for range evs {
			select {
			case <-counted:
			case <-ctx.Done():
				t.Fatal("the metrics did not count the events within 10s")
			}
		}
	}
	return m, publish
}

// publishAny publishes e under its own type.
func publishAny(b *event.Bus, e event.Event) {
	switch e := e.(type) {
	case event.DeskStarted:
		event.Publish(b, e)
	case event.DeskStopped:
		event.Publish(b, e)
	case event.TurnCompleted:
		event.Publish(b, e)
	case event.BudgetExceeded:
		event.Publish(b, e)
	case event.TurnFailed:
		event.Publish(b, e)
	case event.TurnInterrupted:
		event.Publish(b, e)
	case event.SessionStarted:
		event.Publish(b, e)
	case event.SessionSummarized:
		event.Publish(b, e)
	case event.ConfigReloaded:
		event.Publish(b, e)
	case event.ConfigRejected:
		event.Publish(b, e)
	case event.TriggerQueued:
		event.Publish(b, e)
	default:
		panic("publishAny: add a case for " + e.Topic())
	}
}

func TestMetricsFromEvents(t *testing.T) {
	m, publish := newTestMetrics(t)
	t0 := time.Date(2026, 3, 2, 9, 15, 0, 0, time.UTC)
	fx := func(at time.Time) event.Header { return event.Header{At: at, Desk: "fx"} }
	rates := event.Header{At: t0, Desk: "rates"}

	publish(
		event.DeskStarted{Header: fx(t0), Model: "fast", Provider: "openai"},
		event.DeskStarted{Header: rates, Model: "offline", Provider: "scripted", Scripted: true},
		event.TurnCompleted{Header: fx(t0.Add(time.Minute)), Model: "fast", InputTokens: 1200, OutputTokens: 300, CachedTokens: 700, CacheWriteTokens: 200, DurationMS: 1500},
		event.TurnCompleted{Header: fx(t0.Add(2 * time.Minute)), Model: "slow", InputTokens: 100, OutputTokens: 50, DurationMS: 30000},
		event.TurnCompleted{Header: fx(t0.Add(3 * time.Minute)), Model: "fast", InputTokens: 800, OutputTokens: 100, CachedTokens: 600, DurationMS: 500},
		event.TurnFailed{Header: fx(t0.Add(4 * time.Minute)), Error: "model down"},
		event.TurnInterrupted{Header: rates, Reason: "shutdown"},
		event.SessionStarted{Header: fx(t0), Reason: "first"},
		event.SessionStarted{Header: fx(t0), Reason: "daily_rollover"},
		event.SessionStarted{Header: fx(t0), Reason: "manual_rollover"},
		event.SessionStarted{Header: rates, Reason: "resumed"},
		event.SessionSummarized{Header: fx(t0), Degraded: true},
		event.SessionSummarized{Header: rates},
		event.ConfigReloaded{Header: event.Header{At: t0}, Changes: []string{"log level changed"}},
		event.ConfigRejected{Header: event.Header{At: t0}, Path: "/etc/deskd/desks.d/fx.yaml", Field: "model", Reason: "unknown"},
		event.ConfigRejected{Header: event.Header{At: t0}, Path: "/etc/deskd/desks.d/fx.yaml", Field: "schedules[0].cron", Reason: "bad"},
		event.TriggerQueued{Header: fx(t0), Depth: 3}, // not counted: depth comes from SetGauges
	)
	m.modelError("fx", "fast", 429)
	m.modelError("fx", "fast", 429)
	m.modelError("fx", "fast", 0)
	m.addCost("fx", "fast", 0.25)
	m.addCost("fx", "fast", 0.5)
	m.addCost("fx", "slow", 0) // no price: no series

	fams := metricstest.Scrape(t, m.Handler())
	tests := []struct {
		name   string
		metric string
		labels []string
		want   float64
	}{
		{"completed fast", "deskd_turns_total", []string{"desk", "fx", "model", "fast", "outcome", "completed"}, 2},
		{"completed slow", "deskd_turns_total", []string{"desk", "fx", "model", "slow", "outcome", "completed"}, 1},
		{"failed, model from desk.started", "deskd_turns_total", []string{"desk", "fx", "model", "fast", "outcome", "failed"}, 1},
		{"interrupted, the scripted model marked", "deskd_turns_total", []string{"desk", "rates", "model", "offline (scripted)", "outcome", "interrupted"}, 1},
		{"duration count", "deskd_turn_duration_seconds", []string{"desk", "fx", "model", "fast"}, 2},
		{"input tokens", "deskd_tokens_total", []string{"desk", "fx", "kind", "input", "model", "fast"}, 2000},
		{"output tokens", "deskd_tokens_total", []string{"desk", "fx", "kind", "output", "model", "fast"}, 400},
		{"cached tokens", "deskd_tokens_total", []string{"desk", "fx", "kind", "cached", "model", "fast"}, 1300},
		{"cache write tokens", "deskd_tokens_total", []string{"desk", "fx", "kind", "cache_write", "model", "fast"}, 200},
		{"cost", "deskd_cost_total", []string{"desk", "fx", "model", "fast"}, 0.75},
		{"rollovers", "deskd_rollovers_total", []string{"desk", "fx"}, 2},
		{"degraded rollovers", "deskd_degraded_rollovers_total", []string{"desk", "fx"}, 1},
		{"reloads", "deskd_config_reloads_total", nil, 1},
		{"rejections", "deskd_config_rejections_total", nil, 2},
		{"model errors 429", "deskd_model_errors_total", []string{"desk", "fx", "model", "fast", "status", "429"}, 2},
		{"model errors, no answer", "deskd_model_errors_total", []string{"desk", "fx", "model", "fast", "status", "0"}, 1},
		{"last turn fx", "deskd_last_turn_timestamp_seconds", []string{"desk", "fx"}, float64(t0.Add(4 * time.Minute).Unix())},
		{"last turn rates", "deskd_last_turn_timestamp_seconds", []string{"desk", "rates"}, float64(t0.Unix())},
		{"bus dropped", "deskd_bus_dropped_total", nil, 0},
	}
	for _, tt := range tests {
		got, ok := metricstest.Value(fams, tt.metric, tt.labels...)
		if !ok {
			t.Errorf("%s: no %s%v", tt.name, tt.metric, tt.labels)
			continue
		}
		if got != tt.want {
			t.Errorf("%s: %s%v = %v, want %v", tt.name, tt.metric, tt.labels, got, tt.want)
		}
	}
	for _, absent := range []struct {
		metric string
		labels []string
	}{
		{"deskd_rollovers_total", []string{"desk", "rates"}},
		{"deskd_degraded_rollovers_total", []string{"desk", "rates"}},
		{"deskd_cost_total", []string{"desk", "fx", "model", "slow"}},
		{"deskd_queue_depth", []string{"desk", "fx"}},
	} {
		if v, ok := metricstest.Value(fams, absent.metric, absent.labels...); ok {
			t.Errorf("%s%v = %v, want no such series", absent.metric, absent.labels, v)
		}
	}

	// The histogram's buckets: 1.5s is in le=2 but not le=1.
	h := fams["deskd_turn_duration_seconds"]
	for _, mm := range h.GetMetric() {
		if len(mm.GetLabel()) != 2 || mm.GetLabel()[1].GetValue() != "fast" {
			continue
		}
		if got := mm.Histogram.GetSampleSum(); got != 2 {
			t.Errorf("turn duration sum = %v, want 2 (1.5s + 0.5s)", got)
		}
		for _, b := range mm.Histogram.GetBucket() {
			want := map[float64]uint64{0.25: 0, 0.5: 1, 1: 1, 2: 2}
			if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
				t.Errorf("bucket le=%v = %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
			}
		}
	}

	// A stopped desk's last-turn gauge goes away.
	publish(event.DeskStopped{Header: rates, Reason: "removed"})
	if v, ok := metricstest.Value(metricstest.Scrape(t, m.Handler()), "deskd_last_turn_timestamp_seconds", "desk", "rates"); ok {
		t.Errorf("last turn of the stopped desk rates = %v, want no series", v)
	}
}

func TestMetricsStatus(t *testing.T) {
	m, _ := newTestMetrics(t)
	slot := time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)
	desks := []Gauges{{Desk: "fx", QueueDepth: 3, NextSlot: slot}, {Desk: "rates", QueueDepth: 0}}
	m.SetGauges(func() []Gauges { return desks })

	fams := metricstest.Scrape(t, m.Handler())
	if v, ok := metricstest.Value(fams, "deskd_queue_depth", "desk", "fx"); !ok || v != 3 {
		t.Errorf("deskd_queue_depth{fx} = %v, %v; want 3", v, ok)
	}
	if v, ok := metricstest.Value(fams, "deskd_queue_depth", "desk", "rates"); !ok || v != 0 {
		t.Errorf("deskd_queue_depth{rates} = %v, %v; want 0", v, ok)
	}
	if v, ok := metricstest.Value(fams, "deskd_next_slot_timestamp_seconds", "desk", "fx"); !ok || v != float64(slot.Unix()) {
		t.Errorf("deskd_next_slot_timestamp_seconds{fx} = %v, %v; want %v", v, ok, slot.Unix())
	}
	if v, ok := metricstest.Value(fams, "deskd_next_slot_timestamp_seconds", "desk", "rates"); ok {
		t.Errorf("deskd_next_slot_timestamp_seconds{rates} = %v, want no series (no slot)", v)
	}

	// Read at each scrape: a removed desk is gone, a deeper queue shows.
	desks = []Gauges{{Desk: "fx", QueueDepth: 5}}
	fams = metricstest.Scrape(t, m.Handler())
	if v, ok := metricstest.Value(fams, "deskd_queue_depth", "desk", "fx"); !ok || v != 5 {
		t.Errorf("after the change, deskd_queue_depth{fx} = %v, %v; want 5", v, ok)
	}
	if _, ok := metricstest.Value(fams, "deskd_queue_depth", "desk", "rates"); ok {
		t.Error("deskd_queue_depth{rates} still there after the desk went")
	}
}

func TestMetricsOwnRegistry(t *testing.T) {
	m1, _ := newTestMetrics(t)
	m2, publish2 := newTestMetrics(t) // a second set registers without a clash
	publish2(event.ConfigReloaded{Header: event.Header{At: time.Now()}})
	if v, _ := metricstest.Value(metricstest.Scrape(t, m1.Handler()), "deskd_config_reloads_total"); v != 0 {
		t.Errorf("the first metrics counted the second bus's reload: %v", v)
	}
	if v, _ := metricstest.Value(metricstest.Scrape(t, m2.Handler()), "deskd_config_reloads_total"); v != 1 {
		t.Errorf("deskd_config_reloads_total = %v, want 1", v)
	}
	fams := metricstest.Scrape(t, m1.Handler())
	for _, name := range []string{"go_goroutines", "process_start_time_seconds"} {
		if fams[name] == nil {
			t.Errorf("no %s: the Go and process collectors are missing", name)
		}
	}
}
