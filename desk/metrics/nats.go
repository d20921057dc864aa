package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/deskd/deskd/desk/event"
)

// natsMetrics are the NATS ingress's: the messages handed back for
// backpressure (from nats.backpressure), and whether the connection is
// up, read at scrape time from the function given to SetNATS.
type natsMetrics struct {
	naks         *prometheus.CounterVec // desk, reason
	connectedDsc *prometheus.Desc

	mu        sync.Mutex
	connected func() bool
}

func newNATSMetrics(reg *prometheus.Registry) *natsMetrics {
	n := &natsMetrics{
		naks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "deskd_nats_naks_total",
			Help: "NATS trigger messages handed back to be delivered again later (backpressure), by desk and reason: " +
				"queue_full, paused, storage, stopped or error.",
		}, []string{"desk", "reason"}),
		connectedDsc: prometheus.NewDesc("deskd_nats_connected",
			"1 while deskd is connected to NATS, 0 while it is not (it keeps trying). Absent when NATS is not configured.", nil, nil),
	}
	reg.MustRegister(n.naks, n)
	return n
}

// observe counts a NATS event; other events are ignored.
func (n *natsMetrics) observe(e event.Event) {
	if bp, ok := e.(event.NATSBackpressure); ok {
		n.naks.WithLabelValues(bp.Desk, bp.Reason).Inc()
	}
}

// SetNATS sets the function read at each scrape for deskd_nats_connected
// (natsconn.Conn's state). Until it is set, that metric is absent.
func (m *Registry) SetNATS(connected func() bool) {
	m.nats.mu.Lock()
	m.nats.connected = connected
	m.nats.mu.Unlock()
}

// Describe is prometheus.Collector's: the connection gauge.
func (n *natsMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- n.connectedDsc }

// Collect is prometheus.Collector's: the connection gauge, when set.
func (n *natsMetrics) Collect(ch chan<- prometheus.Metric) {
	n.mu.Lock()
	f := n.connected
	n.mu.Unlock()
	if f == nil {
		return
	}
	v := 0.0
	if f() {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(n.connectedDsc, prometheus.GaugeValue, v)
}
