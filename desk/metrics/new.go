package metrics

import "github.com/prometheus/client_golang/prometheus"

// The constructors of deskd's metrics: each takes the name and the help
// text, and what the metric is by (its labels) or reads.

// counterVec is a counter by labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// counter is a counter without labels.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// histogramVec is a histogram of buckets, by labels.
func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// counterFunc is a counter that read returns at each scrape.
func counterFunc(name, help string, read func() float64) prometheus.CounterFunc {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, read)
}

// gaugeFunc is a gauge that read returns at each scrape.
func gaugeFunc(name, help string, read func() float64) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, read)
}
