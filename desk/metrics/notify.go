package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// NotifyCounts is what the notification metrics read at each scrape: for
// each target, its name, how many notifications wait in its outbox, and
// how many it will never get (given up, or not kept). desk/notify's
// Notifier has it through NotifyCounts.
type NotifyCounts interface {
	NotifyCounts() (targets []string, pending, failed []int64)
}

// SetNotify adds the notification metrics, read from n at each scrape:
// deskd_notify_pending{target} and deskd_notify_failed_total{target}.
// Without it (no notify targets) they are absent. Call it once.
func (m *Registry) SetNotify(n NotifyCounts) {
	m.reg.MustRegister(&notifyCollector{n: n})
}

var (
	notifyPendingDesc = prometheus.NewDesc("deskd_notify_pending",
		"Notifications waiting in the target's outbox to be posted (retried with backoff while the target fails).", []string{"target"}, nil)
	notifyFailedDesc = prometheus.NewDesc("deskd_notify_failed_total",
		"Notifications the target will never get: given up after its give_up_after, or not kept (its outbox full, or its disk refused the write).", []string{"target"}, nil)
)

// notifyCollector reads a NotifyCounts at each scrape.
type notifyCollector struct{ n NotifyCounts }

// Describe sends the two descriptions.
func (c *notifyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- notifyPendingDesc
	ch <- notifyFailedDesc
}

// Collect sends each target's two values.
func (c *notifyCollector) Collect(ch chan<- prometheus.Metric) {
	targets, pending, failed := c.n.NotifyCounts()
	for i, t := range targets {
		ch <- prometheus.MustNewConstMetric(notifyPendingDesc, prometheus.GaugeValue, float64(pending[i]), t)
		ch <- prometheus.MustNewConstMetric(notifyFailedDesc, prometheus.CounterValue, float64(failed[i]), t)
	}
}
