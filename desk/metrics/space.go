package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// spaceGauge is deskd_state_free_bytes, read at each scrape from the
// state folder's free-space probe (desk.SpaceProbe.FreeBytes); absent
// before the probe's first successful look.
type spaceGauge struct {
	desc *prometheus.Desc
	read func() (uint64, bool)
}

// Describe is prometheus.Collector's.
func (g *spaceGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect is prometheus.Collector's.
func (g *spaceGauge) Collect(ch chan<- prometheus.Metric) {
	if free, ok := g.read(); ok {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(free))
	}
}

// SetFreeSpace registers deskd_state_free_bytes, read at each scrape from
// read (desk.Daemon.FreeSpace). Call it once: a second call is an error.
func (m *Registry) SetFreeSpace(read func() (uint64, bool)) error {
	g := &spaceGauge{read: read, desc: prometheus.NewDesc("deskd_state_free_bytes",
		"Bytes free to deskd on the state folder's file system (below the threshold, 256 MiB, storage shows degraded and /healthz answers 503).", nil, nil)}
	if err := m.reg.Register(g); err != nil {
		return fmt.Errorf("register deskd_state_free_bytes: %w", err)
	}
	return nil
}
