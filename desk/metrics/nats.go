package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/deskd/deskd/desk/event"
)

// natsMetrics are the NATS ingress's: the messages handed back for
// backpressure (from nats.backpressure), and whether the connection is
// up, read at scrape time from the function given to SetNATS.
type natsMetrics struct {
	naks      *prometheus.CounterVec // desk, reason
	connected *upGauge
}

func newNATSMetrics(reg *prometheus.Registry) *natsMetrics {
	n := &natsMetrics{
		naks: counterVec("deskd_nats_naks_total",
			"NATS trigger messages handed back to be delivered again later (backpressure), by desk and reason: "+
				"queue_full, paused, storage, stopped or error.", "desk", "reason"),
		connected: newUpGauge("deskd_nats_connected",
			"1 while deskd is connected to NATS, 0 while it is not (it keeps trying). Absent when NATS is not configured.", ""),
	}
	reg.MustRegister(n.naks, n.connected)
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
	m.nats.connected.set(func() map[string]bool { return map[string]bool{"": connected()} })
}
