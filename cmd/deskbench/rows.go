package main

// The rows of issue 12's table, each measured on a daemon of its own.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// figure is one measured figure of a row.
type figure struct {
	Row    int     `json:"row"`
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Floor  string  `json:"floor,omitempty"`
	Target string  `json:"target,omitempty"`
	// Met says whether the target is met; nil when the figure has none.
	Met  *bool  `json:"met,omitempty"`
	Note string `json:"note,omitempty"`
	// Failed, if set, says why the figure could not be measured: the
	// daemon failed at this size (Value is then 0).
	Failed string `json:"failed,omitempty"`
}

// met returns a *bool for figure.Met.
func met(ok bool) *bool { return &ok }

// bench is one run of the bench: its options, its folder, the deskd binary.
type bench struct {
	o   options
	dir string // the run's temporary folder
	bin string // the deskd binary
	// seq numbers the folders of the run.
	seq int
}

// profile starts a CPU profile of r's deskd into the -profile folder as
// name.pprof, when -profile is set; the function it returns waits for it.
func (b *bench) profile(ctx context.Context, r *running, name string) func() error {
	if b.o.Profile == "" {
		return func() error { return nil }
	}
	return r.s.profile(ctx, filepath.Join(b.o.Profile, name+".pprof"), b.o.ProfileSeconds)
}

// folder returns a new folder for one daemon of the run.
func (b *bench) folder(name string) (string, error) {
	b.seq++
	d := filepath.Join(b.dir, fmt.Sprintf("%02d-%s", b.seq, name))
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("make %s: %w", d, err)
	}
	return d, nil
}

// running is a daemon on a setup with its model server and API client.
type running struct {
	s   setup
	d   *daemon
	m   *modelServer
	api *api
}

// start writes a setup of desks in a new folder, lets prepare add to it
// (nil: nothing), and runs deskd on it until ready. tlsH2 runs the model
// server over TLS with HTTP/2.
func (b *bench) start(ctx context.Context, name string, desks []string, tlsH2 bool, prepare func(setup) error) (*running, error) {
	dir, err := b.folder(name)
	if err != nil {
		return nil, err
	}
	m, err := newModelServer(tlsH2, dir)
	if err != nil {
		return nil, err
	}
	s, err := newSetup(dir, m.BaseURL(), desks, b.o.Profile != "")
	if err == nil && prepare != nil {
		err = prepare(s)
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	var env []string
	if tlsH2 {
		env = append(env, "SSL_CERT_FILE="+filepath.Join(dir, "model-ca.pem"))
	}
	d, err := startDaemon(b.bin, s, env...)
	if err != nil {
		m.Close()
		return nil, err
	}
	if err := d.waitReady(ctx, 5*time.Minute); err != nil {
		_ = d.stop()
		m.Close()
		return nil, err
	}
	return &running{s: s, d: d, m: m, api: newAPI(s.URL(), 128)}, nil
}

// stop stops the daemon and the model server.
func (r *running) stop() error {
	err := r.d.stop()
	r.m.Close()
	return err
}

// turn posts one trigger (market, text eventText(marker, n)) to desk and
// waits until it is answered; it returns the time from sending the POST
// to the request at the model server.
func (r *running) turn(ctx context.Context, desk, marker string, n int) (time.Duration, error) {
	d, _, err := r.timedTurn(ctx, desk, marker, n)
	return d, err
}

// timedTurn is turn that also returns the time from the 202 to the
// request at the model server.
func (r *running) timedTurn(ctx context.Context, desk, marker string, n int) (toModel, acceptedToModel time.Duration, err error) {
	arrived := r.m.expect(marker)
	start := time.Now()
	if err := r.api.post(ctx, desk, marker, eventText(marker, n)); err != nil {
		return 0, 0, err
	}
	accepted := time.Now()
	st, err := r.api.await(ctx, desk, marker)
	if err != nil {
		return 0, 0, err
	}
	if st.State != "answered" {
		return 0, 0, fmt.Errorf("trigger %s of desk %s: %s, want answered", marker, desk, st.State)
	}
	select {
	case <-arrived:
	default:
		return 0, 0, fmt.Errorf("trigger %s of desk %s was answered without a request at the model server", marker, desk)
	}
	a, _ := r.m.arrival(marker)
	return a.At.Sub(start), a.At.Sub(accepted), nil
}

// deskNames returns n desk names.
func deskNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return out
}

// percentile returns the p-th percentile (0 to 100, nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// row1 measures event to model against its floor.
func (b *bench) row1(ctx context.Context) ([]figure, error) {
	r, err := b.start(ctx, "event-to-model", []string{"main"}, false, nil)
	if err != nil {
		return nil, err
	}
	defer r.stop()
	fl, err := newFloor(r.s.State)
	if err != nil {
		return nil, err
	}
	defer fl.close()
	for i := range 5 { // warm up: the first turns open the session's client
		if _, err := r.turn(ctx, "main", fmt.Sprintf("%s1w-%d", markerPrefix, i), i); err != nil {
			return nil, err
		}
		if err := fl.sample(ctx, false); err != nil {
			return nil, err
		}
	}
	lat := make([]time.Duration, 0, b.o.Events)
	var after []time.Duration
	profiled := b.profile(ctx, r, "row1")
	for i := range b.o.Events {
		d, a, err := r.timedTurn(ctx, "main", fmt.Sprintf("%s1-%d", markerPrefix, i), i)
		if err != nil {
			return nil, err
		}
		lat, after = append(lat, d), append(after, a)
		if err := fl.sample(ctx, true); err != nil {
			return nil, err
		}
	}
	if err := profiled(); err != nil {
		return nil, err
	}
	rtt, sync := percentile(fl.rtt, 50), percentile(fl.sync, 50)
	floor := rtt + sync
	p50, p99 := percentile(lat, 50), percentile(lat, 99)
	fls := fmt.Sprintf("%.2f ms (round trip %.2f + fsync %.2f)", ms(floor), ms(rtt), ms(sync))
	return []figure{
		{Row: 1, Name: "event to model, p50", Value: ms(p50), Unit: "ms", Floor: fls,
			Target: fmt.Sprintf("<= 2x floor = %.2f ms", ms(2*floor)), Met: met(p50 <= 2*floor),
			Note: fmt.Sprintf("%.1fx the floor, over %d triggers", float64(p50)/float64(floor), len(lat))},
		{Row: 1, Name: "event to model, p99", Value: ms(p99), Unit: "ms", Floor: fls,
			Target: fmt.Sprintf("<= floor + 5 ms = %.2f ms", ms(floor+5*time.Millisecond)), Met: met(p99 <= floor+5*time.Millisecond)},
		{Row: 1, Name: "of which 202 to model, p50", Value: ms(percentile(after, 50)), Unit: "ms",
			Note: fmt.Sprintf("p99 %.2f ms; the rest is POST to 202 (the ledger's fsync); below 0 when the model request came before the client had the 202", ms(percentile(after, 99)))},
		{Row: 1, Name: "floor: loopback HTTP round trip, p50", Value: ms(rtt), Unit: "ms", Note: "one after each trigger"},
		{Row: 1, Name: "floor: fsync of a small file in the state folder, p50", Value: ms(sync), Unit: "ms",
			Note: fmt.Sprintf("one after each trigger; p99 %.2f ms", ms(percentile(fl.sync, 99)))},
	}, nil
}

// floorSampler samples the two parts of row 1's floor, one of each per call, so
// that they are taken between the row's triggers, under the same load: a
// POST of a small body to a server on loopback over a kept-alive
// connection, and an append of a small record to a file in the state
// folder followed by fsync.
type floorSampler struct {
	srv       *httptest.Server
	api       *api
	file      *os.File
	rtt, sync []time.Duration
}

// newFloor starts the floor's server and creates its file in dir.
func newFloor(dir string) (*floorSampler, error) {
	f, err := os.OpenFile(filepath.Join(dir, "deskbench-fsync.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("fsync floor: %w", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet { // a trigger's long poll, answered at once (row 3's harness floor)
			_, _ = io.WriteString(w, `{"state":"answered","turn":1,"reply":"noted"}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"id":"x","state":"queued"}`)
	}))
	return &floorSampler{srv: srv, api: newAPI(srv.URL, 1), file: f}, nil
}

// sample takes one round trip and one fsync; keep is false for warm-up.
func (f *floorSampler) sample(ctx context.Context, keep bool) error {
	start := time.Now()
	if err := f.api.do(ctx, http.MethodPost, "/", `{"id":"x","text":"market event"}`, http.StatusAccepted, nil); err != nil {
		return fmt.Errorf("loopback round trip: %w", err)
	}
	mid := time.Now()
	d, err := f.fsync()
	if err != nil {
		return err
	}
	if keep {
		f.rtt, f.sync = append(f.rtt, mid.Sub(start)), append(f.sync, d)
	}
	return nil
}

// fsync appends a small record to the floor's file, fsyncs it and returns
// how long that took.
func (f *floorSampler) fsync() (time.Duration, error) {
	start := time.Now()
	if _, err := f.file.WriteString(`{"at":"2026-12-01T10:00:00Z","id":"x","state":"queued","trigger":{"text":"market event"}}` + "\n"); err != nil {
		return 0, fmt.Errorf("fsync floor: %w", err)
	}
	if err := f.file.Sync(); err != nil {
		return 0, fmt.Errorf("fsync floor: %w", err)
	}
	return time.Since(start), nil
}

// close stops the server and removes the file.
func (f *floorSampler) close() {
	f.srv.Close()
	f.file.Close()
	os.Remove(f.file.Name())
}

// row2 measures the daemon's CPU per turn on a desk whose session already
// holds CPURecords records.
func (b *bench) row2(ctx context.Context) ([]figure, error) {
	date, err := tradingDate(time.Now())
	if err != nil {
		return nil, err
	}
	h := history{Desk: "main", Date: date, Start: time.Now().Add(-2 * time.Hour).Truncate(time.Second), Records: b.o.CPURecords, Triggers: b.o.CPURecords / 2}
	r, err := b.start(ctx, "cpu-per-turn", []string{"main"}, false, func(s setup) error { return writeHistory(s.State, h) })
	if err != nil {
		return nil, err
	}
	defer r.stop()
	var st struct {
		Session   string `json:"session"`
		Exchanges int    `json:"exchanges"`
	}
	if err := r.api.do(ctx, http.MethodGet, "/v1/desks/main", "", http.StatusOK, &st); err != nil {
		return nil, err
	}
	if st.Session != h.sessionID() || st.Exchanges < b.o.CPURecords/2 {
		return nil, fmt.Errorf("the desk did not resume the generated session %s of %d records: status says session %s, %d exchanges",
			h.sessionID(), b.o.CPURecords, st.Session, st.Exchanges)
	}
	for i := range 5 {
		if _, err := r.turn(ctx, "main", fmt.Sprintf("%s2w-%d", markerPrefix, i), i); err != nil {
			return nil, err
		}
	}
	cpu0, src, err := cpuTime(r.d.Pid())
	if err != nil {
		return nil, err
	}
	profiled := b.profile(ctx, r, "row2")
	start := time.Now()
	for i := range b.o.CPUTurns {
		if _, err := r.turn(ctx, "main", fmt.Sprintf("%s2-%d", markerPrefix, i), i); err != nil {
			return nil, err
		}
	}
	wall := time.Since(start)
	cpu1, _, err := cpuTime(r.d.Pid())
	if err != nil {
		return nil, err
	}
	if err := profiled(); err != nil {
		return nil, err
	}
	per := (cpu1 - cpu0) / time.Duration(b.o.CPUTurns)
	return []figure{
		{Row: 2, Name: fmt.Sprintf("CPU per turn at a %d-record session", b.o.CPURecords), Value: ms(per), Unit: "ms",
			Target: "<= 0.5 ms", Met: met(per <= 500*time.Microsecond),
			Note: fmt.Sprintf("deskd's CPU (%s) over %d turns, the API's POST and long-poll GET included; wall %.2f ms a turn",
				src, b.o.CPUTurns, ms(wall/time.Duration(b.o.CPUTurns)))},
	}, nil
}

// throughput is what row 3's run saw, for rows 3 and 7.
type throughput struct {
	turns      int
	elapsed    time.Duration
	exactlyOne int      // markers the model server saw exactly once, of answered triggers
	problems   []string // triggers not answered exactly once
	conns      int64
	protos     map[string]int
	desks      int
	harness    float64       // the harness's turns/s against a server that answers at once
	spent      costs         // what the run cost deskd and the bench
	syncP50    time.Duration // fsync of a small file in the state folder during the run, p50
	load       string        // the load averages at the run's end
}

// runThroughput posts Turns triggers over Desks desks, Inflight at a time,
// each waited for until answered.
func (b *bench) runThroughput(ctx context.Context) (throughput, error) {
	desks := deskNames("d", b.o.Desks)
	r, err := b.start(ctx, "turns-per-second", desks, false, nil)
	if err != nil {
		return throughput{}, err
	}
	defer r.stop()
	fl, err := newFloor(r.s.State)
	if err != nil {
		return throughput{}, err
	}
	defer fl.close()
	// The harness's own ceiling: the same posts and long polls, as many
	// in flight, against a server that answers each at once.
	floorStart := time.Now()
	if _, err := drive(ctx, newAPI(fl.srv.URL, 128), desks, b.o.Inflight, b.o.Turns); err != nil {
		return throughput{}, fmt.Errorf("the harness's floor: %w", err)
	}
	harness := float64(b.o.Turns) / time.Since(floorStart).Seconds()
	c0, err := r.costs(ctx)
	if err != nil {
		return throughput{}, err
	}
	stopSyncs := fl.fsyncEvery(20 * time.Millisecond)
	profiled := b.profile(ctx, r, "row3")
	start := time.Now()
	problems, err := drive(ctx, r.api, desks, b.o.Inflight, b.o.Turns)
	elapsed := time.Since(start)
	syncs, serr := stopSyncs()
	if err != nil {
		return throughput{}, err
	}
	if serr != nil {
		return throughput{}, serr
	}
	c1, err := r.costs(ctx)
	if err != nil {
		return throughput{}, err
	}
	if err := profiled(); err != nil {
		return throughput{}, err
	}
	t := throughput{turns: b.o.Turns, elapsed: elapsed, conns: r.m.conns.Load(), protos: r.m.protocols(), desks: len(desks),
		harness: harness, spent: c1.minus(c0), syncP50: percentile(syncs, 50), load: loadAverage()}
	for i := range b.o.Turns {
		marker := fmt.Sprintf("%s3-%d", markerPrefix, i)
		switch a, ok := r.m.arrival(marker); {
		case !ok:
			problems = append(problems, marker+": no request at the model server")
		case a.Count != 1:
			problems = append(problems, fmt.Sprintf("%s: %d requests at the model server", marker, a.Count))
		default:
			t.exactlyOne++
		}
	}
	if n := r.m.reqs.Load(); n != int64(b.o.Turns) {
		problems = append(problems, fmt.Sprintf("the model server answered %d requests for %d triggers", n, b.o.Turns))
	}
	t.problems = problems
	return t, nil
}

// drive posts turns triggers over desks through a, inflight at a time,
// each awaited until it is final, and returns the triggers not answered
// "noted"; the first error stops it.
func drive(ctx context.Context, a *api, desks []string, inflight, turns int) ([]string, error) {
	var (
		next     atomic.Int64
		mu       sync.Mutex
		problems []string
		firstErr error
		wg       sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= turns || ctx.Err() != nil {
					return
				}
				desk, marker := desks[i%len(desks)], fmt.Sprintf("%s3-%d", markerPrefix, i)
				err := a.post(ctx, desk, marker, eventText(marker, i))
				var st triggerStatus
				if err == nil {
					st, err = a.await(ctx, desk, marker)
				}
				mu.Lock()
				switch {
				case err != nil && firstErr == nil:
					firstErr = err
					cancel()
				case err == nil && (st.State != "answered" || st.Reply != "noted"):
					problems = append(problems, fmt.Sprintf("%s on %s: %s %q", marker, desk, st.State, st.Reply))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return problems, firstErr
}

// row3 reports turns per second.
func (b *bench) row3(t throughput) []figure {
	rate := float64(t.turns) / t.elapsed.Seconds()
	once := len(t.problems) == 0 && t.exactlyOne == t.turns
	note := ""
	if !once {
		note = fmt.Sprintf("%d problems, first: %s", len(t.problems), t.problems[0])
	}
	return append([]figure{
		{Row: 3, Name: fmt.Sprintf("turns/s, %d desks, instant model, %d in flight", t.desks, b.o.Inflight), Value: rate, Unit: "turns/s",
			Floor:  fmt.Sprintf("the harness alone: %.0f turns/s", t.harness),
			Target: ">= 800", Met: met(rate >= 800), Note: fmt.Sprintf("%d triggers in %.2f s; load %s at the end", t.turns, t.elapsed.Seconds(), t.load)},
	}, append(t.spent.figures(t.turns, t.syncP50),
		figure{Row: 3, Name: "triggers answered exactly once", Value: float64(t.exactlyOne), Unit: "of " + strconv.Itoa(t.turns),
			Target: "all", Met: met(once), Note: note},
	)...)
}

// row4 measures start-up on desks with long histories.
func (b *bench) row4(ctx context.Context) ([]figure, error) {
	date, err := tradingDate(time.Now())
	if err != nil {
		return nil, err
	}
	desks := deskNames("h", b.o.StartDesks)
	dir, err := b.folder("start-up")
	if err != nil {
		return nil, err
	}
	m, err := newModelServer(false, dir)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	s, err := newSetup(dir, m.BaseURL(), desks, false)
	if err != nil {
		return nil, err
	}
	genStart := time.Now()
	base := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	var (
		wg   sync.WaitGroup
		errs = make([]error, len(desks))
		sem  = make(chan struct{}, 2)
	)
	for i, d := range desks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = writeHistory(s.State, history{Desk: d, Date: date, Start: base, Records: b.o.StartRecords, Triggers: b.o.StartRecords})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	gen := time.Since(genStart)
	size, err := dirSize(s.State)
	if err != nil {
		return nil, err
	}
	d, err := startDaemon(b.bin, s)
	if err != nil {
		return nil, err
	}
	defer d.stop()
	health, err := firstHealthy(ctx, s.URL(), d)
	if err != nil {
		return nil, err
	}
	if err := d.waitReady(ctx, 10*time.Minute); err != nil {
		return nil, err
	}
	ready := d.ReadyAt.Sub(d.Started)
	rss, hwm, err := memoryOf(d.Pid())
	if err != nil {
		return nil, err
	}
	shape := fmt.Sprintf("%d desks x (%d-record session + %d-entry ledger), %.0f MiB on disk, generated in %.1f s (in the page cache)",
		len(desks), b.o.StartRecords, b.o.StartRecords, float64(size)/(1<<20), gen.Seconds())
	figs := []figure{
		{Row: 4, Name: "start to first 200 on /healthz", Value: health.Seconds(), Unit: "s", Target: "<= 3 s", Met: met(health <= 3*time.Second), Note: shape + "; first start: files no deskd wrote or closed (no persisted indexes), the one-off upgrade, whose target is 3 s (a second start's 1 s)"},
		{Row: 4, Name: "start to \"deskd ready\"", Value: ready.Seconds(), Unit: "s", Target: "<= 3 s", Met: met(ready <= 3*time.Second)},
		{Row: 4, Name: "RSS after ready (VmRSS)", Value: float64(rss) / (1 << 20), Unit: "MiB", Target: "<= 150 MiB", Met: met(rss <= 150<<20)},
		{Row: 4, Name: "peak RSS by ready (VmHWM)", Value: float64(hwm) / (1 << 20), Unit: "MiB", Target: "<= 150 MiB", Met: met(hwm <= 150<<20)},
	}
	// The steady state: the same desks started again after a clean stop,
	// which left what deskd keeps to start fast (the ledgers' indexes).
	if err := d.stop(); err != nil {
		return nil, fmt.Errorf("stop deskd after its first start: %w", err)
	}
	second := func(note string) []figure {
		fail := func(err error) []figure {
			return []figure{{Row: 4, Name: "second start (after a clean stop)", Unit: "s", Target: "<= 1 s", Failed: err.Error(), Note: note}}
		}
		d2, err := startDaemon(b.bin, s)
		if err != nil {
			return fail(err)
		}
		defer d2.stop()
		health2, err := firstHealthy(ctx, s.URL(), d2)
		if err != nil {
			return fail(err)
		}
		if err := d2.waitReady(ctx, 10*time.Minute); err != nil {
			return fail(err)
		}
		ready2 := d2.ReadyAt.Sub(d2.Started)
		rss2, hwm2, err := memoryOf(d2.Pid())
		if err != nil {
			return fail(err)
		}
		return []figure{
			{Row: 4, Name: "second start (after a clean stop) to first 200 on /healthz", Value: health2.Seconds(), Unit: "s", Target: "<= 1 s", Met: met(health2 <= time.Second), Note: note},
			{Row: 4, Name: "second start to \"deskd ready\"", Value: ready2.Seconds(), Unit: "s", Target: "<= 1 s", Met: met(ready2 <= time.Second)},
			{Row: 4, Name: "second start: RSS after ready (VmRSS)", Value: float64(rss2) / (1 << 20), Unit: "MiB", Target: "<= 150 MiB", Met: met(rss2 <= 150<<20)},
			{Row: 4, Name: "second start: peak RSS by ready (VmHWM)", Value: float64(hwm2) / (1 << 20), Unit: "MiB", Target: "<= 150 MiB", Met: met(hwm2 <= 150<<20)},
		}
	}
	more := second("the desks' folders as the first deskd left them")
	figs = append(figs, more...)
	if len(more) == 1 {
		// It failed: try again with each desk's state.json as generated
		// (the one file a start needs that a clean stop rewrote), so
		// that the start-up of the rest (the ledgers' indexes) is
		// measured still; the failure above stays reported.
		for i, dk := range desks {
			h := history{Desk: dk, Date: date, Start: base}
			js, err := json.MarshalIndent(deskState{Session: h.sessionID(), Date: h.Date}, "", "  ")
			if err == nil {
				err = os.WriteFile(filepath.Join(s.State, "desks", dk, "state.json"), append(js, '\n'), 0o644)
			}
			if err != nil {
				return nil, fmt.Errorf("restore state.json of desk %d: %w", i, err)
			}
		}
		figs = append(figs, second("after the failure above: each desk's state.json restored as generated, the rest as the first deskd left it")...)
	}
	return figs, nil
}

// dirSize returns the bytes of the files below dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", dir, err)
	}
	return n, nil
}

// firstHealthy polls GET /healthz every millisecond from the daemon's
// start until it answers 200, and returns the time since the start.
func firstHealthy(ctx context.Context, base string, d *daemon) (time.Duration, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
		if err != nil {
			return 0, err
		}
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(d.Started), nil
			}
		}
		select {
		case <-d.exited:
			return 0, fmt.Errorf("deskd exited before /healthz answered:\n%s", d.lastLines())
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return 0, errors.New("/healthz did not answer 200 within 10 minutes")
}

// deskStatus is the part of GET /v1/desks/{desk} row 5 reads.
type deskStatus struct {
	NextSchedule string `json:"next_schedule"`
}

// row5 measures a desk file edit to its change in the desk's status.
func (b *bench) row5(ctx context.Context) ([]figure, error) {
	r, err := b.start(ctx, "edit-to-status", []string{"main"}, false, nil)
	if err != nil {
		return nil, err
	}
	defer r.stop()
	var lat []time.Duration
	for k := range b.o.Edits {
		name := fmt.Sprintf("edit-%d", k)
		text := deskFile("main", fmt.Sprintf("schedules:\n  - name: %s\n    cron: \"0 0 1 1 *\"\n    text: \"New year.\"\n", name))
		start := time.Now()
		if err := r.s.writeDesk("main", text); err != nil {
			return nil, err
		}
		for {
			var st deskStatus
			if err := r.api.do(ctx, http.MethodGet, "/v1/desks/main", "", http.StatusOK, &st); err != nil {
				return nil, err
			}
			if st.NextSchedule == name {
				break
			}
			if time.Since(start) > time.Minute {
				return nil, fmt.Errorf("edit %d: the status shows schedule %q a minute after the edit, want %q", k, st.NextSchedule, name)
			}
			time.Sleep(time.Millisecond) // polling a real process: nothing to wait on
		}
		lat = append(lat, time.Since(start))
	}
	p50 := percentile(lat, 50)
	return []figure{
		{Row: 5, Name: "desk file edit to visible in status, p50", Value: ms(p50), Unit: "ms", Target: "<= 100 ms", Met: met(p50 <= 100*time.Millisecond),
			Note: fmt.Sprintf("%d edits of a schedule, max %.0f ms", len(lat), ms(percentile(lat, 100)))},
	}, nil
}

// idle is what row 6 reads of one daemon.
type idle struct {
	first      time.Duration // start to ready, the first start (each desk's folder and session created)
	ready      time.Duration // start to ready, a restart on the same state
	rss        int64         // after the restart's ready
	fds        int
	goroutines int
	// firstStop and stop are SIGTERM to exit (which must be 0) after the
	// first start and after the restart.
	firstStop, stop time.Duration
}

// idleDaemon starts deskd on n desks with nothing to do, stops it, starts
// it again on the same state (the steady state: every desk resumes its
// session) and measures the second daemon.
func (b *bench) idleDaemon(ctx context.Context, n int) (idle, error) {
	r, err := b.start(ctx, fmt.Sprintf("idle-%d", n), deskNames("i", n), false, nil)
	if err != nil {
		return idle{}, err
	}
	defer r.m.Close()
	out := idle{first: r.d.ReadyAt.Sub(r.d.Started)}
	at := time.Now()
	if err := r.d.stop(); err != nil {
		return out, err
	}
	out.firstStop = time.Since(at)
	d, err := startDaemon(b.bin, r.s)
	if err != nil {
		return out, err
	}
	defer d.stop() // a no-op once it has stopped below
	if err := d.waitReady(ctx, 10*time.Minute); err != nil {
		return out, err
	}
	out.ready = d.ReadyAt.Sub(d.Started)
	if out.rss, _, err = memoryOf(d.Pid()); err != nil {
		return out, err
	}
	if out.fds, err = openFDs(d.Pid()); err != nil {
		return out, err
	}
	if out.goroutines, err = goroutines(ctx, r.api); err != nil {
		return out, err
	}
	at = time.Now()
	if err := d.stop(); err != nil {
		return out, err
	}
	out.stop = time.Since(at)
	return out, nil
}

// fdLimit returns the soft and hard limits on open files of this process
// (which the daemon inherits).
func fdLimit() string {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%d soft, %d hard", l.Cur, l.Max)
}

// goroutines reads go_goroutines from GET /metrics (-1 if it has none).
func goroutines(ctx context.Context, a *api) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("GET /metrics: go_goroutines %q: %w", v, err)
			}
			return int(n), nil
		}
	}
	return -1, sc.Err()
}

// row6 measures idle desks against a daemon of none.
func (b *bench) row6(ctx context.Context) ([]figure, error) {
	zero, err := b.idleDaemon(ctx, 0)
	if err != nil {
		return nil, err
	}
	n := b.o.IdleDesks
	many, err := b.idleDaemon(ctx, n)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// The daemon fails at this size (too many open files, say): that is
		// the figure.
		why := fmt.Sprintf("deskd failed with %d desks (open files limit %s): %v", n, fdLimit(), err)
		return []figure{
			{Row: 6, Name: fmt.Sprintf("%d idle desks: start to ready", n), Unit: "s", Target: "<= 3 s", Met: met(false), Failed: why},
			{Row: 6, Name: "RSS per idle desk", Unit: "KiB", Target: "<= 40 KiB", Met: met(false), Failed: "see above"},
			{Row: 6, Name: "open fds per idle desk", Unit: "fds", Target: "<= 1", Met: met(false), Failed: "see above"},
		}, nil
	}
	perKiB := float64(many.rss-zero.rss) / float64(n) / 1024
	perFD := float64(many.fds-zero.fds) / float64(n)
	perG := float64(many.goroutines-zero.goroutines) / float64(n)
	base := fmt.Sprintf("after a restart: 0 desks: RSS %.1f MiB, %d fds, %d goroutines; %d desks: RSS %.1f MiB, %d fds, %d goroutines",
		float64(zero.rss)/(1<<20), zero.fds, zero.goroutines, n, float64(many.rss)/(1<<20), many.fds, many.goroutines)
	return []figure{
		{Row: 6, Name: fmt.Sprintf("%d idle desks: restart to ready", n), Value: many.ready.Seconds(), Unit: "s", Target: "<= 3 s", Met: met(many.ready <= 3*time.Second),
			Note: fmt.Sprintf("every desk resumes its session; 0 desks: %.2f s", zero.ready.Seconds())},
		{Row: 6, Name: fmt.Sprintf("%d idle desks: first start to ready", n), Value: many.first.Seconds(), Unit: "s", Target: "<= 3 s", Met: met(many.first <= 3*time.Second),
			Note: fmt.Sprintf("every desk's folder and first session created; 0 desks: %.2f s", zero.first.Seconds())},
		{Row: 6, Name: fmt.Sprintf("%d idle desks: stop (SIGTERM to exit 0)", n), Value: max(many.stop, many.firstStop).Seconds(), Unit: "s", Target: "<= 5 s", Met: met(max(many.stop, many.firstStop) <= 5*time.Second),
			Note: fmt.Sprintf("the slower of the two stops: after the first start %.2f s, after the restart %.2f s; 0 desks: %.2f s", many.firstStop.Seconds(), many.stop.Seconds(), zero.stop.Seconds())},
		{Row: 6, Name: "RSS per idle desk", Value: perKiB, Unit: "KiB", Target: "<= 40 KiB", Met: met(perKiB <= 40), Note: base},
		{Row: 6, Name: "open fds per idle desk", Value: perFD, Unit: "fds", Target: "<= 1", Met: met(perFD <= 1)},
		{Row: 6, Name: "goroutines per idle desk", Value: perG, Unit: "goroutines", Note: "go_goroutines of /metrics"},
	}, nil
}

// row7 reports the model connections of row 3's run, and the protocol
// against a server that offers HTTP/2 over TLS.
func (b *bench) row7(ctx context.Context, t throughput) ([]figure, error) {
	r, err := b.start(ctx, "model-h2", []string{"main"}, true, nil)
	if err != nil {
		return nil, err
	}
	defer r.stop()
	for i := range b.o.H2Turns {
		if _, err := r.turn(ctx, "main", fmt.Sprintf("%s7-%d", markerPrefix, i), i); err != nil {
			return nil, err
		}
	}
	h2 := r.m.protocols()
	return []figure{
		{Row: 7, Name: "model connections over row 3's run", Value: float64(t.conns), Unit: "TCP connections",
			Target: fmt.Sprintf("a kept-alive pool: <= %d desks, ideally far fewer", t.desks), Met: met(t.conns <= int64(t.desks)),
			Note: fmt.Sprintf("%d requests over %s (plain HTTP server)", t.turns, protoList(t.protos))},
		{Row: 7, Name: "requests over HTTP/2 against a TLS server offering h2", Value: float64(h2["HTTP/2.0"]), Unit: "of " + strconv.Itoa(b.o.H2Turns),
			Target: "all (HTTP/2 where the server speaks it)", Met: met(h2["HTTP/2.0"] == b.o.H2Turns),
			Note: fmt.Sprintf("%s, %d TCP connections", protoList(h2), r.m.conns.Load())},
	}, nil
}

// protoList names the protocols of protos with their counts.
func protoList(protos map[string]int) string {
	var out []string
	for p, n := range protos {
		out = append(out, fmt.Sprintf("%s x%d", p, n))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// row8 measures the request body at a desk's Turns8-th turn.
func (b *bench) row8(ctx context.Context) ([]figure, error) {
	// main has the default settings; bounded sets compact_at_tokens.
	const bound = 8000
	r, err := b.start(ctx, "request-size", []string{"main"}, false, func(s setup) error {
		return s.writeDesk("bounded", deskFile("bounded", fmt.Sprintf("compact_at_tokens: %d\n", bound)))
	})
	if err != nil {
		return nil, err
	}
	defer r.stop()
	type sizes struct{ first, last, most int }
	measure := func(desk string) (sizes, error) {
		var z sizes
		for i := range b.o.Turns8 {
			marker := fmt.Sprintf("%s8-%s-%d", markerPrefix, desk, i)
			if _, err := r.turn(ctx, desk, marker, i); err != nil {
				return z, err
			}
			a, _ := r.m.arrival(marker) // its last request: the turn's, after any compaction
			if i == 0 {
				z.first = a.Bytes
			}
			z.last, z.most = a.Bytes, max(z.most, a.Bytes)
		}
		return z, nil
	}
	def, err := measure("main")
	if err != nil {
		return nil, err
	}
	bounded, err := measure("bounded")
	if err != nil {
		return nil, err
	}
	growth := 0.0
	if b.o.Turns8 > 1 {
		growth = float64(def.last-def.first) / float64(b.o.Turns8-1)
	}
	return []figure{
		{Row: 8, Name: fmt.Sprintf("request body at turn %d", b.o.Turns8), Value: float64(def.last) / 1000, Unit: "KB",
			Target: "bounded by a per-desk compaction setting",
			Note:   fmt.Sprintf("default desk settings (compact_at_tokens 0: only compact_share of the window); turn 1: %d B, +%.0f B a turn", def.first, growth)},
		{Row: 8, Name: fmt.Sprintf("request body at turn %d, compact_at_tokens %d", b.o.Turns8, bound), Value: float64(bounded.last) / 1000, Unit: "KB",
			Target: "bounded by a per-desk compaction setting", Met: met(bounded.most <= 4*bound*4/3),
			Note: fmt.Sprintf("largest turn request over the %d turns: %d B (a token is ~4 bytes: the bound is ~%d KB)", b.o.Turns8, bounded.most, 4*bound/1000)},
	}, nil
}
