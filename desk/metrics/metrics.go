// Package metrics is deskd's Prometheus metrics, served at GET /metrics:
// counters and histograms fed by the event bus, and each desk's queue depth
// and next slot, read at scrape time.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/event"
)

// Turn outcomes, the values of deskd_turns_total's outcome label.
const (
	outcomeCompleted   = "completed"
	outcomeFailed      = "failed"
	outcomeInterrupted = "interrupted"
)

// Gauges is what the metrics read of one desk at each scrape: the values
// that change without an event.
type Gauges struct {
	// Desk is the desk's name.
	Desk string
	// QueueDepth is how many triggers wait in its queue.
	QueueDepth int
	// NextSlot is the desk's next schedule slot; zero when it has none.
	NextSlot time.Time
	// Calendar is the desk's exchange calendar and CalendarDaysLeft the
	// days to its end (desk.Status); nil when it has none.
	Calendar         string
	CalendarDaysLeft *int
	// Failed is true for a desk of the config that failed to start
	// (desk.Set.Failed): only deskd_desk_failed is read of it.
	Failed bool
	// StorageDegraded is true while the desk cannot write to its disk or
	// its state folder's free space is below the threshold (desk.Status's
	// Storage is set): deskd_storage_degraded.
	StorageDegraded bool
}

// Desks is what DeskGauges needs of the running desks. *desk.Set is one.
type Desks interface {
	// List returns the desks, sorted by name.
	List() []*desk.Desk
}

var _ Desks = (*desk.Set)(nil)

// failedDesks is what DeskGauges reads of the desks, those that failed
// to start too, in one look, when its Desks has them (*desk.Set does).
type failedDesks interface {
	RunningAndFailed() ([]*desk.Desk, map[string]desk.Failure)
}

var _ failedDesks = (*desk.Set)(nil)

// DeskGauges returns the function that reads the gauges of the desks ds
// lists, and of those that failed to start (Failed), for SetGauges.
func DeskGauges(ds Desks) func() []Gauges {
	return func() []Gauges {
		var out []Gauges
		var desks []*desk.Desk
		var failed map[string]desk.Failure
		if f, ok := ds.(failedDesks); ok {
			desks, failed = f.RunningAndFailed()
		} else {
			desks = ds.List()
		}
		for _, d := range desks {
			st := d.Status()
			out = append(out, Gauges{Desk: st.Name, QueueDepth: st.QueueDepth, NextSlot: st.NextSlot,
				Calendar: st.Calendar, CalendarDaysLeft: st.CalendarDaysLeft, StorageDegraded: st.Storage != nil})
		}
		for name := range failed {
			out = append(out, Gauges{Desk: name, Failed: true})
		}
		return out
	}
}

// Registry is deskd's Prometheus metrics, served by Handler. It has a
// prometheus registry of its own (never the global one) and is fed by the
// event bus: one SubscribeAll subscriber, so events are counted in the order
// they were published. Queue depths and next slots are read at each scrape
// from the function given to SetGauges, so a desk that is removed
// disappears.
//
// Failed and interrupted turns carry no model in their events; they are
// labelled with the desk's model from its last desk.started.
type Registry struct {
	reg *prometheus.Registry

	turns         *prometheus.CounterVec   // desk, model, outcome
	turnDuration  *prometheus.HistogramVec // desk, model
	tokens        *prometheus.CounterVec   // desk, model, kind
	cost          *prometheus.CounterVec   // desk, model
	rollovers     *prometheus.CounterVec   // desk
	degraded      *prometheus.CounterVec   // desk
	reloads       prometheus.Counter
	rejections    prometheus.Counter
	modelErrors   *prometheus.CounterVec // desk, model, status
	lastTurn      *prometheus.GaugeVec   // desk
	fallbacks     *prometheus.CounterVec // desk, model
	queueDepthDsc *prometheus.Desc
	failedDsc     *prometheus.Desc
	storageDsc    *prometheus.Desc
	budgets       *prometheus.CounterVec // desk, budget
	nextSlotDsc   *prometheus.Desc
	calendarDsc   *prometheus.Desc // calendar
	rejectedDsc   *prometheus.Desc
	rejSinceDsc   *prometheus.Desc
	nats          *natsMetrics    // nats.go
	tools         *toolMetrics    // tools.go
	cluster       *clusterMetrics // cluster.go

	mu       sync.Mutex
	models   map[string]string // desk -> its model, from desk.started
	gauges   func() []Gauges
	rejected func() []desk.ConfigRejection

	cancel func()
}

// New registers deskd's metrics and starts counting the events of bus.
// Close stops counting.
func New(bus *event.Bus) *Registry { return newRegistry(bus, nil) }

// newRegistry is New; after, if not nil, is called after each event has
// been counted (tests use it to wait for the subscriber).
func newRegistry(bus *event.Bus, after func(event.Event)) *Registry {
	m := &Registry{
		reg: prometheus.NewRegistry(),
		turns: counterVec("deskd_turns_total",
			"Turns that ended, by desk, model and outcome (completed, failed, interrupted).", "desk", "model", "outcome"),
		turnDuration: histogramVec("deskd_turn_duration_seconds",
			"How long completed turns took, model calls and tool loop included.",
			prometheus.ExponentialBuckets(0.25, 2, 13), "desk", "model"), // 0.25s .. 1024s
		tokens: counterVec("deskd_tokens_total",
			"Tokens used by completed turns, by desk, model and kind (input: the whole prompt; output; cached: the prompt's tokens read from the service's prompt cache; cache_write: those written to it).", "desk", "model", "kind"),
		cost: counterVec("deskd_cost_total",
			"Cost of model calls in the currency of the models' prices (usually US dollars); only models with prices count.", "desk", "model"),
		rollovers: counterVec("deskd_rollovers_total",
			"Sessions rolled over (daily or manual), by desk.", "desk"),
		degraded: counterVec("deskd_degraded_rollovers_total",
			"Rollovers whose summary fell back to a mechanical digest because the model failed, by desk.", "desk"),
		reloads: counter("deskd_config_reloads_total",
			"Config reloads that took effect (config.reloaded events)."),
		rejections: counter("deskd_config_rejections_total",
			"Config problems refused on reload (config.rejected events: one per file and field)."),
		modelErrors: counterVec("deskd_model_errors_total",
			"Failed model calls, by desk, model and HTTP status (0: no answer: timeout, dropped connection).", "desk", "model", "status"),
		lastTurn: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "deskd_last_turn_timestamp_seconds",
			Help: "When each desk's last turn ended, on deskd's clock, in Unix seconds.",
		}, []string{"desk"}),
		fallbacks: newFallbacks(),
		queueDepthDsc: prometheus.NewDesc("deskd_queue_depth",
			"Triggers waiting in each desk's queue.", []string{"desk"}, nil),
		storageDsc: prometheus.NewDesc("deskd_storage_degraded",
			"1 while a desk cannot write to its disk or the state folder's free space is below the threshold (GET /healthz answers 503 and says which), 0 otherwise.",
			[]string{"desk"}, nil),
		budgets: counterVec("deskd_budget_exceeded_total",
			"Turns stopped or refused because a budget was spent (budget.exceeded events), by desk and budget.", "desk", "budget"),
		failedDsc: prometheus.NewDesc("deskd_desk_failed",
			"1 while a desk of the config has failed to start (desk.failed: a damaged file of its folder, say); the other desks run. "+
				"Absent once it starts, or its file is removed.", []string{"desk"}, nil),
		nextSlotDsc: prometheus.NewDesc("deskd_next_slot_timestamp_seconds",
			"Each desk's next schedule slot, in Unix seconds; absent when the desk has none.", []string{"desk"}, nil),
		calendarDsc: prometheus.NewDesc("deskd_calendar_days_left",
			"Days from today's trading date to the end (through) of each exchange calendar a desk follows: 0 on its last date, negative past it.",
			[]string{"calendar"}, nil),
		rejectedDsc: prometheus.NewDesc("deskd_config_rejected",
			"1 while a desk's config file is refused (the desk runs on its last good config, or is not started when it has none); "+
				"desk \"\" for the main file or a file that is not one desk's (the whole reload was refused). Absent otherwise.", []string{"desk"}, nil),
		rejSinceDsc: prometheus.NewDesc("deskd_config_rejected_since_timestamp_seconds",
			"Since when each refused config file (deskd_config_rejected) has been refused, in Unix seconds on deskd's clock.", []string{"desk"}, nil),
		models: map[string]string{},
	}
	m.reg.MustRegister(
		m.turns, m.turnDuration, m.tokens, m.cost, m.rollovers, m.degraded, m.reloads, m.rejections,
		m.modelErrors, m.lastTurn, m.budgets, m.fallbacks, statusCollector{m},
		counterFunc("deskd_bus_dropped_total",
			"Event deliveries dropped because a subscriber's mailbox was full.", func() float64 { return float64(bus.Dropped()) }),
		counterFunc("deskd_bus_handler_panics_total",
			"Event handler calls that panicked (and were recovered).", func() float64 { return float64(bus.Panics()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.nats = newNATSMetrics(m.reg)
	m.tools = newToolMetrics(m.reg)
	m.cluster = newClusterMetrics(m.reg)
	// In the publisher's goroutine (quick, no I/O): an event costs its
	// publisher no wake of a goroutine of ours, and none is dropped.
	m.cancel = event.SubscribeAllNow(bus, func(e event.Event) {
		m.observe(e)
		if after != nil {
			after(e)
		}
	})
	return m
}

// Handler serves the metrics in the Prometheus exposition formats. A
// collector that fails (the process collector under the unit's
// ProcSubset=pid, say) costs its own metrics, never the whole answer.
func (m *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, ErrorHandling: promhttp.ContinueOnError})
}

// SetGauges sets the function read at each scrape for queue depths and
// next slots (DeskGauges of the running desks). Until it is set, those
// metrics are absent.
func (m *Registry) SetGauges(gauges func() []Gauges) {
	m.mu.Lock()
	m.gauges = gauges
	m.mu.Unlock()
}

// SetRejections sets the function read at each scrape for the config
// files refused (desk.Set.ConfigRejections). Until it is set, those
// metrics are absent.
func (m *Registry) SetRejections(rejections func() []desk.ConfigRejection) {
	m.mu.Lock()
	m.rejected = rejections
	m.mu.Unlock()
}

// modelError counts one failed model call.
func (m *Registry) modelError(desk, model string, status int) {
	m.modelErrors.WithLabelValues(desk, model, strconv.Itoa(status)).Inc()
}

// addCost adds the cost of a model call to deskd_cost_total.
func (m *Registry) addCost(desk, model string, cost float64) {
	if cost > 0 {
		m.cost.WithLabelValues(desk, model).Add(cost)
	}
}

// Close stops counting events. The handler keeps serving what was counted.
func (m *Registry) Close() { m.cancel() }

// observe counts one event.
func (m *Registry) observe(e event.Event) {
	switch e := e.(type) {
	case event.DeskStarted:
		m.mu.Lock()
		m.models[e.Desk] = modelLabel(e.Model, e.Scripted)
		m.mu.Unlock()
	case event.DeskStopped:
		m.lastTurn.DeleteLabelValues(e.Desk)
	case event.TurnCompleted:
		model := modelLabel(e.Model, e.Scripted)
		m.turns.WithLabelValues(e.Desk, model, outcomeCompleted).Inc()
		m.turnDuration.WithLabelValues(e.Desk, model).Observe(float64(e.DurationMS) / 1000)
		m.tokens.WithLabelValues(e.Desk, model, "input").Add(float64(e.InputTokens))
		m.tokens.WithLabelValues(e.Desk, model, "output").Add(float64(e.OutputTokens))
		m.tokens.WithLabelValues(e.Desk, model, "cached").Add(float64(e.CachedTokens))
		m.tokens.WithLabelValues(e.Desk, model, "cache_write").Add(float64(e.CacheWriteTokens))
		m.addCost(e.Desk, model, e.Cost)
		m.fallback(e, model)
		m.turnEnded(e.Header)
	case event.BudgetExceeded:
		m.budgets.WithLabelValues(e.Desk, e.Budget).Inc()
	case event.ModelFailed:
		m.modelError(e.Desk, e.Model, e.Status)
	case event.TurnFailed:
		m.turns.WithLabelValues(e.Desk, m.modelOf(e.Desk), outcomeFailed).Inc()
		m.turnEnded(e.Header)
	case event.TurnInterrupted:
		m.turns.WithLabelValues(e.Desk, m.modelOf(e.Desk), outcomeInterrupted).Inc()
		m.turnEnded(e.Header)
	case event.SessionStarted:
		if e.Reason == "daily_rollover" || e.Reason == "manual_rollover" {
			m.rollovers.WithLabelValues(e.Desk).Inc()
		}
	case event.SessionSummarized:
		if e.Degraded {
			m.degraded.WithLabelValues(e.Desk).Inc()
		}
	case event.ConfigReloaded:
		m.reloads.Inc()
	case event.ConfigRejected:
		m.rejections.Inc()
	default:
		if !m.tools.observe(e) && !m.cluster.observe(e) {
			m.nats.observe(e)
		}
	}
}

func (m *Registry) turnEnded(h event.Header) {
	m.lastTurn.WithLabelValues(h.Desk).Set(unixSeconds(h.At))
}

func (m *Registry) modelOf(desk string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.models[desk]
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// statusCollector reads queue depths, next slots and config rejections
// at scrape time.
type statusCollector struct{ m *Registry }

func (c statusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.m.queueDepthDsc
	ch <- c.m.failedDsc
	ch <- c.m.storageDsc
	ch <- c.m.nextSlotDsc
	ch <- c.m.calendarDsc
	ch <- c.m.rejectedDsc
	ch <- c.m.rejSinceDsc
}

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	gauges, rejections := c.m.gauges, c.m.rejected
	c.m.mu.Unlock()
	if rejections != nil {
		c.collectRejections(ch, rejections())
	}
	if gauges == nil {
		return
	}
	calendars := map[string]bool{}
	for _, d := range gauges() {
		if d.Failed {
			ch <- prometheus.MustNewConstMetric(c.m.failedDsc, prometheus.GaugeValue, 1, d.Desk)
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.m.queueDepthDsc, prometheus.GaugeValue, float64(d.QueueDepth), d.Desk)
		ch <- prometheus.MustNewConstMetric(c.m.storageDsc, prometheus.GaugeValue, boolValue(d.StorageDegraded), d.Desk)
		if !d.NextSlot.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.m.nextSlotDsc, prometheus.GaugeValue, unixSeconds(d.NextSlot), d.Desk)
		}
		if d.CalendarDaysLeft != nil && !calendars[d.Calendar] { // one series per calendar, whatever the desks following it
			calendars[d.Calendar] = true
			ch <- prometheus.MustNewConstMetric(c.m.calendarDsc, prometheus.GaugeValue, float64(*d.CalendarDaysLeft), d.Calendar)
		}
	}
}

// collectRejections sends one deskd_config_rejected and its since per desk
// with a refused file (the earliest since of its problems).
func (c statusCollector) collectRejections(ch chan<- prometheus.Metric, rs []desk.ConfigRejection) {
	since := map[string]time.Time{}
	var order []string
	for _, r := range rs {
		at, seen := since[r.Desk]
		if !seen {
			order = append(order, r.Desk)
		}
		if !seen || r.Since.Before(at) {
			since[r.Desk] = r.Since
		}
	}
	for _, d := range order {
		ch <- prometheus.MustNewConstMetric(c.m.rejectedDsc, prometheus.GaugeValue, 1, d)
		ch <- prometheus.MustNewConstMetric(c.m.rejSinceDsc, prometheus.GaugeValue, unixSeconds(since[d]), d)
	}
}

// boolValue is a gauge's 1 for true, 0 for false.
func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
