package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/deskd/deskd/desk/event"
)

// clusterMetrics are a cluster host's (config cluster): which desks it
// owns (desk.acquired, desk.lost, desk.released) and how many it took
// over from another host. Without a cluster, they are absent.
type clusterMetrics struct {
	owned     *prometheus.GaugeVec   // desk
	failovers *prometheus.CounterVec // no labels: absent until the first desk.acquired
}

func newClusterMetrics(reg *prometheus.Registry) *clusterMetrics {
	c := &clusterMetrics{
		owned: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "deskd_desk_owned",
			Help: "In a cluster: 1 while this host owns the desk (holds its lease and runs it), 0 once it lost or released it. Absent without a cluster, and for a desk this host never owned."},
			[]string{"desk"}),
		failovers: counterVec("deskd_failovers_total",
			"In a cluster: the desks this host acquired that another host held before (taken over after its lease ran out, or after it released it). Absent without a cluster."),
	}
	reg.MustRegister(c.owned, c.failovers)
	return c
}

// observe counts a desk.acquired, desk.lost or desk.released event; it
// reports whether e was one.
func (c *clusterMetrics) observe(e event.Event) bool {
	switch e := e.(type) {
	case event.DeskAcquired:
		c.owned.WithLabelValues(e.Desk).Set(1)
		f := c.failovers.WithLabelValues() // present from the first acquisition on
		if e.Previous != "" {
			f.Inc()
		}
	case event.DeskLost:
		c.owned.WithLabelValues(e.Desk).Set(0)
	case event.DeskReleased:
		c.owned.WithLabelValues(e.Desk).Set(0)
	default:
		return false
	}
	return true
}
