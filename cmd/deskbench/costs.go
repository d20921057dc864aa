package main

// What a run of turns costs: deskd's CPU and its fsyncs (read from its
// /metrics), beside the bench's own CPU and an fsync's time, the floors
// a reader judges them by.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The counters of deskd's group commit the bench reads from /metrics.
const (
	metricSyncedWrites = "deskd_durable_synced_writes_total"
	metricFlushes      = "deskd_durable_flushes_total"
	metricSyncFS       = "deskd_durable_syncfs_total"
)

// costs is what deskd and the bench had spent at one instant, or between
// two (minus).
type costs struct {
	cpu     time.Duration // deskd's CPU
	cpuSrc  string        // where it was read
	self    time.Duration // the bench's own CPU: its harness and model server
	writes  float64       // deskd's synced writes
	flushes float64       // deskd's flushes (fsyncs and syncfs calls)
	syncfss float64       // of which syncfs calls
}

// costs reads what r's deskd and this process have spent so far.
func (r *running) costs(ctx context.Context) (costs, error) {
	cpu, src, err := cpuTime(r.d.Pid())
	if err != nil {
		return costs{}, err
	}
	self, err := selfCPU()
	if err != nil {
		return costs{}, err
	}
	m, err := r.api.counters(ctx)
	if err != nil {
		return costs{}, err
	}
	c := costs{cpu: cpu, cpuSrc: src, self: self, writes: m[metricSyncedWrites], flushes: m[metricFlushes], syncfss: m[metricSyncFS]}
	if _, ok := m[metricFlushes]; !ok {
		return c, fmt.Errorf("GET /metrics: no %s (a deskd without the group commit's metrics?)", metricFlushes)
	}
	return c, nil
}

// minus returns what was spent from b to c.
func (c costs) minus(b costs) costs {
	return costs{cpu: c.cpu - b.cpu, cpuSrc: c.cpuSrc, self: c.self - b.self,
		writes: c.writes - b.writes, flushes: c.flushes - b.flushes, syncfss: c.syncfss - b.syncfss}
}

// figures are row 3's figures of what turns turns cost, each beside its
// floor; syncP50 is an fsync's time during the run.
func (c costs) figures(turns int, syncP50 time.Duration) []figure {
	n := float64(turns)
	perTurn := c.cpu / time.Duration(turns)
	return []figure{
		{Row: 3, Name: "deskd CPU per turn under load", Value: ms(perTurn), Unit: "ms",
			Floor:  fmt.Sprintf("the bench's own CPU: %.2f ms a turn (harness and model server)", ms(c.self/time.Duration(turns))),
			Target: "<= 0.5 ms", Met: met(perTurn <= 500*time.Microsecond),
			Note: fmt.Sprintf("deskd's CPU (%s) over the run, the API's POST and long-poll GET included", c.cpuSrc)},
		{Row: 3, Name: "fsyncs per turn under load", Value: c.flushes / n, Unit: "flushes",
			Floor:  fmt.Sprintf("an fsync of a small file in the state folder meanwhile: %.2f ms p50", ms(syncP50)),
			Target: "well under 1", Met: met(c.flushes/n < 1),
			Note: fmt.Sprintf("deskd's /metrics: %.2f synced writes a turn, %.3f flushes a synced write; %.0f flushes, %.0f of them syncfs",
				c.writes/n, c.flushes/max(c.writes, 1), c.flushes, c.syncfss)},
	}
}

// selfCPU returns this process's user and system CPU time.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// counters returns the samples without labels of deskd's GET /metrics,
// by name.
func (a *api) counters(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics = %d, want 200", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("GET /metrics: read the answer: %w", err)
	}
	return out, nil
}

// fsyncEvery takes an fsync of the floor's file every period until the
// function it returns is called, which returns their times.
func (f *floorSampler) fsyncEvery(period time.Duration) func() ([]time.Duration, error) {
	var (
		wg    sync.WaitGroup
		times []time.Duration
		err   error
	)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			d, e := f.fsync()
			if e != nil {
				err = e
				return
			}
			times = append(times, d)
		}
	}()
	return func() ([]time.Duration, error) {
		close(stop)
		wg.Wait()
		return times, err
	}
}

// loadAverage returns the machine's 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	if f := strings.Fields(string(b)); len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
