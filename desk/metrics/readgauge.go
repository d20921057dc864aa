package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// upGauge is a 1-or-0 gauge read at each scrape from a function set after
// the registry is made (SetNATS, SetMCP); it is absent until then. It has
// at most one label: read returns the state by its value ("" for a gauge
// without a label).
type upGauge struct {
	desc *prometheus.Desc

	mu   sync.Mutex
	read func() map[string]bool
}

// newUpGauge returns the gauge name, with label (or none: "").
func newUpGauge(name, help, label string) *upGauge {
	var labels []string
	if label != "" {
		labels = []string{label}
	}
	return &upGauge{desc: prometheus.NewDesc(name, help, labels, nil)}
}

// set sets the function read at each scrape.
func (g *upGauge) set(read func() map[string]bool) {
	g.mu.Lock()
	g.read = read
	g.mu.Unlock()
}

// Describe is prometheus.Collector's.
func (g *upGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect is prometheus.Collector's: each value read, once set.
func (g *upGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	read := g.read
	g.mu.Unlock()
	if read == nil {
		return
	}
	for label, up := range read() {
		v := 0.0
		if up {
			v = 1
		}
		if label == "" {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v)
		} else {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, label)
		}
	}
}
