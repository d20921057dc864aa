package main

// The cluster subcommand (issue 25's targets): three deskd binaries with
// cluster: {host: a|b|c, lease} on the same desk files, on a three-node
// JetStream cluster in this process, and one deskd without cluster beside
// them. Each round kills the owner of desk main (SIGKILL) while triggers
// arrive, then stops the next owner (SIGTERM), and measures the time from
// the signal to the first answer by a standby; then event to model on the
// cluster's owner and on the single host, each beside its floor. Every
// trigger acknowledged is checked answered exactly once, by id.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

// clusterDesk is the desk the cluster subcommand fails over.
const clusterDesk = "main"

// clusterOptions are the cluster subcommand's settings.
type clusterOptions struct {
	Deskd  string
	Work   string
	Keep   bool
	JSON   bool
	Rounds int
	Events int           // event-to-model triggers per round and mode
	Lease  time.Duration // cluster.lease
	Steady time.Duration // triggers arriving before each signal
	Period time.Duration // between the background triggers
	// Profile, when set, is a folder for CPU profiles of the standbys
	// over each SIGKILL's takeover (ProfileSeconds from the signal); the
	// new owner's is kept.
	Profile        string
	ProfileSeconds int
}

// parseClusterFlags reads the cluster subcommand's command line.
func parseClusterFlags(args []string, stderr io.Writer) (clusterOptions, error) {
	fs := flag.NewFlagSet("deskbench cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o clusterOptions
	fs.StringVar(&o.Deskd, "deskd", "", "the deskd binary (default: build ./cmd/deskd of this module into a temporary folder)")
	fs.StringVar(&o.Work, "work", "", "make the run's folder here (default: the system's temporary folder)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the run's folder and print its path")
	fs.BoolVar(&o.JSON, "json", false, "print the figures as JSON")
	fs.IntVar(&o.Rounds, "rounds", 3, "interleaved rounds: SIGKILL, SIGTERM, event to model on the cluster and on one host")
	fs.IntVar(&o.Events, "events", 200, "event-to-model triggers per round, on the cluster and on one host each")
	fs.DurationVar(&o.Lease, "lease", 3*time.Second, "cluster.lease of the three hosts")
	fs.DurationVar(&o.Steady, "steady", time.Second, "how long triggers arrive before each signal")
	fs.DurationVar(&o.Period, "period", 50*time.Millisecond, "between the triggers posted without waiting, beside the one that waits")
	fs.StringVar(&o.Profile, "profile", "", "write a CPU profile of the new owner over each SIGKILL's takeover here (kill-N-HOST.pprof)")
	fs.IntVar(&o.ProfileSeconds, "profile-seconds", 8, "how long each -profile profile runs from the signal")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.Rounds < 1 || o.Events < 1 || o.Lease < time.Second || o.Steady <= 0 || o.Period <= 0 {
		return o, fmt.Errorf("-rounds and -events want 1 or more, -lease 1s or more, -steady and -period more than 0")
	}
	return o, nil
}

// runCluster is the cluster subcommand.
func runCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseClusterFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	rep := newReport(append([]string{"deskbench", "cluster"}, args...))
	dir, cleanup, err := runFolder(o.Work, "deskbench-cluster-", o.Keep, stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	b := &bench{o: options{Events: o.Events}, dir: dir, bin: o.Deskd}
	if b.bin == "" {
		if b.bin, err = buildDeskd(ctx, dir); err != nil {
			return err
		}
	}
	cr, err := startClusterRig(ctx, b, o, stderr)
	if err != nil {
		return err
	}
	defer cr.close()
	figs, runErr := cr.rounds(ctx)
	rep.Figures = figs
	return errors.Join(printReport(stdout, rep, o.JSON), runErr)
}

// clusterHost is one deskd of the cluster.
type clusterHost struct {
	name string
	s    setup
	d    *daemon // nil while it is down
	api  *api
}

// addr is the host's API address as a 421 names it.
func (h *clusterHost) addr() string { return strings.TrimPrefix(h.s.URL(), "http://") }

// up reports whether the host's deskd runs.
func (h *clusterHost) up() bool {
	if h.d == nil {
		return false
	}
	select {
	case <-h.d.exited:
		return false
	default:
		return true
	}
}

// clusterRig is the cluster subcommand's processes.
type clusterRig struct {
	b      *bench
	o      clusterOptions
	log    io.Writer
	nats   *natsCluster
	m      *modelServer
	hosts  []*clusterHost
	single *running // one host, no cluster
	pub    *publishFloor
	loads  []string // the load average at the end of each round
	kills  int      // SIGKILLs so far, numbering the profiles
}

// startClusterRig starts the NATS cluster, the model server, the three
// hosts (a first, so that it owns the desk) and the single host.
func startClusterRig(ctx context.Context, b *bench, o clusterOptions, log io.Writer) (*clusterRig, error) {
	cr := &clusterRig{b: b, o: o, log: log}
	var err error
	if cr.nats, err = startNATSCluster(filepath.Join(b.dir, "nats"), 3); err != nil {
		return nil, err
	}
	if cr.pub, err = newPublishFloor(ctx, cr.nats); err != nil {
		cr.close()
		return nil, err
	}
	if cr.m, err = newModelServer(false, b.dir); err != nil {
		cr.close()
		return nil, err
	}
	for _, name := range []string{"a", "b", "c"} {
		dir, err := b.folder("host-" + name)
		if err == nil {
			var s setup
			if s, err = newSetup(dir, cr.m.BaseURL(), []string{clusterDesk}, o.Profile != ""); err == nil {
				err = appendFile(s.Config, cr.nats.configLines(name, o.Lease))
				s.Log = filepath.Join(b.dir, "host-"+name+".log") // not in the config's folder, which deskd watches
				cr.hosts = append(cr.hosts, &clusterHost{name: name, s: s, api: newAPI(s.URL(), 8)})
			}
		}
		if err != nil {
			cr.close()
			return nil, err
		}
	}
	for i, h := range cr.hosts {
		if err := cr.up(ctx, h); err != nil {
			cr.close()
			return nil, err
		}
		if i == 0 {
			if _, err := cr.waitOwner(ctx, "", 30*time.Second); err != nil {
				cr.close()
				return nil, err
			}
		}
	}
	if cr.single, err = b.start(ctx, "single", []string{clusterDesk}, false, nil); err != nil {
		cr.close()
		return nil, err
	}
	return cr, nil
}

// appendFile appends text to the file at path.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return f.Close()
}

// up starts h's deskd on its folder (kept from its last run) until ready.
func (cr *clusterRig) up(ctx context.Context, h *clusterHost) error {
	d, err := startDaemon(cr.b.bin, h.s)
	if err != nil {
		return err
	}
	if err := d.waitReady(ctx, 2*time.Minute); err != nil {
		_ = d.cmd.Process.Kill()
		return fmt.Errorf("host %s: %w", h.name, err)
	}
	h.d = d
	return nil
}

// close stops everything the rig started.
func (cr *clusterRig) close() {
	for _, h := range cr.hosts {
		if h.up() {
			if err := h.d.stop(); err != nil {
				fmt.Fprintf(cr.log, "deskbench: host %s: %v\n", h.name, err)
			}
		}
	}
	if cr.single != nil {
		_ = cr.single.stop()
	}
	if cr.m != nil {
		cr.m.Close()
	}
	if cr.pub != nil {
		cr.pub.close()
	}
	if cr.nats != nil {
		cr.nats.close()
	}
}

// listed is what GET /v1/desks says of the desk.
type listed struct {
	State string `json:"state"`
	Owner *struct {
		Host  string `json:"host"`
		Epoch uint64 `json:"epoch"`
	} `json:"owner"`
}

// placement asks host h where the desk is.
func (h *clusterHost) placement(ctx context.Context) (listed, error) {
	var out struct {
		Desks []struct {
			Name string `json:"name"`
			listed
		} `json:"desks"`
	}
	if err := h.api.do(ctx, http.MethodGet, "/v1/desks", "", http.StatusOK, &out); err != nil {
		return listed{}, err
	}
	for _, d := range out.Desks {
		if d.Name == clusterDesk {
			return d.listed, nil
		}
	}
	return listed{}, fmt.Errorf("host %s does not list desk %s", h.name, clusterDesk)
}

// waitOwner waits until every host that is up names the same owner, not
// notHost, which runs the desk, and returns it.
func (cr *clusterRig) waitOwner(ctx context.Context, notHost string, max time.Duration) (*clusterHost, error) {
	deadline := time.Now().Add(max)
	var last string
	for {
		owner, why := cr.agreedOwner(ctx, notHost)
		if owner != nil {
			return owner, nil
		}
		last = why
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no agreed owner of desk %s within %s: %s", clusterDesk, max, last)
		}
		if err := pause(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// agreedOwner is waitOwner's one look: the owner, or why there is none.
func (cr *clusterRig) agreedOwner(ctx context.Context, notHost string) (*clusterHost, string) {
	var owner *clusterHost
	var epoch uint64
	for _, h := range cr.hosts {
		if !h.up() {
			continue
		}
		l, err := h.placement(ctx)
		if err != nil {
			return nil, err.Error()
		}
		if l.Owner == nil || l.Owner.Host == notHost {
			return nil, fmt.Sprintf("host %s: state %s, owner %+v", h.name, l.State, l.Owner)
		}
		if owner == nil {
			owner, epoch = cr.host(l.Owner.Host), l.Owner.Epoch
		}
		if owner == nil || owner.name != l.Owner.Host || epoch != l.Owner.Epoch {
			return nil, fmt.Sprintf("the hosts disagree: %s says %s at epoch %d", h.name, l.Owner.Host, l.Owner.Epoch)
		}
		if (h == owner) != (l.State != "standby" && l.State != "starting") {
			return nil, fmt.Sprintf("host %s: state %s, owner %s", h.name, l.State, l.Owner.Host)
		}
	}
	if owner == nil || !owner.up() {
		return nil, "the owner named is not up"
	}
	return owner, ""
}

// host returns the host called name, or nil.
func (cr *clusterRig) host(name string) *clusterHost {
	for _, h := range cr.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}

// next returns the host after h, round the three.
func (cr *clusterRig) next(h *clusterHost) *clusterHost {
	return cr.hosts[(slices.Index(cr.hosts, h)+1)%len(cr.hosts)]
}

// hostAt returns the host whose API address is addr, or nil.
func (cr *clusterRig) hostAt(addr string) *clusterHost {
	for _, h := range cr.hosts {
		if h.addr() == addr {
			return h
		}
	}
	return nil
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// failover is what one signal's round of triggers saw.
type failover struct {
	sig      syscall.Signal
	victim   string
	at       time.Time // the signal sent
	answered time.Time // the first answer by another host after it
	by       string    // that host
	seen     time.Time // the first word of the new owner (a 421 naming it, its 503 while it starts)
	takeover takeover  // the new owner's log of it
	// natsAnswered is the first answer (Deskd-Reply-To) of a NATS
	// trigger published after the signal; natsLate the last answer of one
	// published before it and answered after it (zero: none).
	natsAnswered, natsLate time.Time
}

// takeover is what a new owner's log says of taking the desk over: the
// records its folder was rebuilt from and when, and when the desk ran.
type takeover struct {
	records, snapshot uint64
	rebuilt, runs     time.Time
}

// takeoverAfter reads the log at path for the first takeover of the desk
// logged at or after t (its times are to the millisecond).
func takeoverAfter(path string, t time.Time) (takeover, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return takeover{}, fmt.Errorf("read the new owner's log: %w", err)
	}
	var to takeover
	for _, line := range strings.Split(string(b), "\n") {
		var l struct {
			Desk     string    `json:"desk"`
			Message  string    `json:"message"`
			Time     time.Time `json:"time"`
			Records  uint64    `json:"records"`
			Snapshot uint64    `json:"snapshot"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || l.Desk != clusterDesk || l.Time.Before(t.Truncate(time.Millisecond)) {
			continue
		}
		switch {
		case to.rebuilt.IsZero() && strings.HasPrefix(l.Message, "cluster: the desk's folder rebuilt"):
			to.rebuilt, to.records, to.snapshot = l.Time, l.Records, l.Snapshot
		case to.runs.IsZero() && l.Message == "cluster: the desk runs on this host, which owns it":
			to.runs = l.Time
			return to, nil
		}
	}
	return to, nil
}

// rounds runs the interleaved rounds and returns their figures.
func (cr *clusterRig) rounds(ctx context.Context) ([]figure, error) {
	var kills, terms []failover
	var single, clustered []e2m
	l := newLedger()
	var errs []error
	for round := range cr.o.Rounds {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
			f, err := cr.failover(ctx, l, sig)
			if err != nil {
				errs = append(errs, fmt.Errorf("round %d, %s: %w", round+1, sig, err))
				if ctx.Err() != nil {
					return cr.figures(kills, terms, clustered, single, l), errors.Join(errs...)
				}
				continue
			}
			fmt.Fprintf(cr.log, "deskbench: round %d: %s of %s answered by %s after %.0f ms\n", round+1, sig, f.victim, f.by, ms(f.answered.Sub(f.at)))
			if sig == syscall.SIGKILL {
				kills = append(kills, f)
			} else {
				terms = append(terms, f)
			}
		}
		owner, err := cr.waitOwner(ctx, "", time.Minute)
		if err == nil {
			var e e2m
			if e, err = cr.eventToModel(ctx, &running{s: owner.s, d: owner.d, m: cr.m, api: owner.api}, fmt.Sprintf("c%d", round), true); err == nil {
				clustered = append(clustered, e)
				if e, err = cr.eventToModel(ctx, cr.single, fmt.Sprintf("s%d", round), false); err == nil {
					single = append(single, e)
				}
			}
		}
		cr.loads = append(cr.loads, loadAverage())
		if err != nil {
			errs = append(errs, fmt.Errorf("round %d, event to model: %w", round+1, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	if err := cr.check(ctx, l); err != nil {
		errs = append(errs, err)
	}
	return cr.figures(kills, terms, clustered, single, l), errors.Join(errs...)
}

// failover signals the owner of the desk while triggers arrive (one that
// waits for its answer, one posted every Period beside it) and measures
// the time to the first answer by another host; then starts the victim
// again, a standby.
func (cr *clusterRig) failover(ctx context.Context, l *ledger, sig syscall.Signal) (failover, error) {
	owner, err := cr.waitOwner(ctx, "", time.Minute)
	if err != nil {
		return failover{}, err
	}
	f := failover{sig: sig, victim: owner.name}
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	firstAnswer := make(chan struct{})
	natsAnswer := make(chan struct{}) // closed at the first answer of a NATS trigger published after the signal
	sent := false
	note := func(o outcome) {
		mu.Lock()
		defer mu.Unlock()
		if !sent || o.by == f.victim {
			return
		}
		if f.seen.IsZero() && !o.newOwnerSeen.IsZero() {
			f.seen = o.newOwnerSeen
		}
		if o.answered && f.answered.IsZero() {
			f.answered, f.by = o.at, o.by
			close(firstAnswer)
		}
	}
	answers, err := cr.watchNATSAnswers(func(id string, at time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if !sent || at.Before(f.at) {
			return
		}
		if l.publishedAt(id).After(f.at) {
			if f.natsAnswered.IsZero() {
				f.natsAnswered = at
				close(natsAnswer)
			}
		} else if at.After(f.natsLate) {
			f.natsLate = at
		}
	})
	if err != nil {
		stop()
		return f, err
	}
	defer answers.Unsubscribe()
	every := func(do func()) { // do, once a period, until the drivers stop
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(cr.o.Period)
			defer t.Stop()
			for {
				select {
				case <-dctx.Done():
					return
				case <-t.C:
					do()
				}
			}
		}()
	}
	every(func() { cr.publishTrigger(dctx, l, answers.Subject) }) // NATS, answered on the inbox
	every(func() { note(cr.send(dctx, l, f.victim, false)) })     // HTTP without waiting
	wg.Add(1)
	go func() { // the trigger that waits, one after another
		defer wg.Done()
		for dctx.Err() == nil {
			note(cr.send(dctx, l, f.victim, true))
		}
	}()
	err = pause(ctx, cr.o.Steady)
	profiles := map[string]func() error{} // by standby, each profiling from the signal on
	if err == nil && cr.o.Profile != "" && sig == syscall.SIGKILL {
		cr.kills++
		for _, h := range cr.hosts {
			if h != owner && h.up() {
				profiles[h.name] = h.s.profile(ctx, cr.profilePath(h.name), cr.o.ProfileSeconds)
			}
		}
	}
	if err == nil {
		mu.Lock()
		f.at, sent = time.Now(), true
		err = owner.d.cmd.Process.Signal(sig)
		mu.Unlock()
	}
	if err == nil {
		t := time.NewTimer(cr.o.Lease + 30*time.Second)
		select {
		case <-firstAnswer:
			err = pause(ctx, cr.o.Steady) // triggers go on arriving a while after
			if err == nil {
				// Row 12 needs a NATS trigger published after the signal
				// answered: the new owner binds the desk's consumer a while
				// after its first HTTP answer (longer on a loaded machine).
				select {
				case <-natsAnswer:
				case <-t.C:
				case <-ctx.Done():
					err = ctx.Err()
				}
			}
		case <-t.C:
			err = fmt.Errorf("no host answered a trigger within %s of the %s of %s", cr.o.Lease+30*time.Second, sig, owner.name)
		case <-ctx.Done():
			err = ctx.Err()
		}
		t.Stop()
	}
	stop()
	wg.Wait()
	// The inbox's callbacks go on until the deferred Unsubscribe: from
	// here on they record nothing, so f is this goroutine's alone.
	mu.Lock()
	sent = false
	mu.Unlock()
	for name, wait := range profiles { // the new owner's kept
		if perr := wait(); perr != nil {
			err = errors.Join(err, perr)
		}
		if name != f.by {
			_ = os.Remove(cr.profilePath(name))
		}
	}
	if by := cr.host(f.by); by != nil && err == nil {
		f.takeover, err = takeoverAfter(by.s.Log, f.at)
	}
	select {
	case <-owner.d.exited:
	case <-time.After(30 * time.Second):
		_ = owner.d.cmd.Process.Kill()
		<-owner.d.exited
		err = errors.Join(err, fmt.Errorf("host %s did not end within 30s of %s", owner.name, sig))
	}
	if sig == syscall.SIGTERM {
		if st := owner.d.cmd.ProcessState; st != nil && !st.Success() {
			err = errors.Join(err, fmt.Errorf("host %s exited with %s after SIGTERM: %s", owner.name, st, owner.d.lastLine()))
		}
	}
	if upErr := cr.up(ctx, owner); upErr != nil {
		err = errors.Join(err, upErr)
	}
	return f, err
}

// profilePath is where the profile of host over the current SIGKILL's
// takeover goes.
func (cr *clusterRig) profilePath(host string) string {
	return filepath.Join(cr.o.Profile, fmt.Sprintf("kill-%d-%s.pprof", cr.kills, host))
}

// outcome is what one send saw.
type outcome struct {
	by           string    // the host that answered (200 or 202)
	at           time.Time // when
	answered     bool      // a final state answered
	newOwnerSeen time.Time // a 421 named a host other than avoid, or a 503 of one starting
}

// send posts a new trigger of the desk to the host believed to own it,
// following 421s and going round the hosts past refused connections and
// 503s, until a host acknowledges it (wait false: 202) or answers it
// (wait true: 200, the trigger final), and records it in l. avoid is the
// host signalled: a word of another owner is noted.
func (cr *clusterRig) send(ctx context.Context, l *ledger, avoid string, wait bool) outcome {
	id := l.next()
	body, _ := json.Marshal(map[string]string{"id": id, "text": eventText(id, 0)})
	path := "/v1/desks/" + clusterDesk + "/triggers"
	if wait {
		path += "?wait=30s"
	}
	var o outcome
	h := l.guess(cr)
	for ctx.Err() == nil {
		code, resp, err := h.api.raw(ctx, http.MethodPost, path, string(body))
		now := time.Now()
		switch {
		case err != nil: // a host down: the next
			h = cr.next(h)
			_ = pause(ctx, 10*time.Millisecond)
		case code == http.StatusMisdirectedRequest:
			var mis struct{ Owner, Addr string }
			_ = json.Unmarshal(resp, &mis)
			to := cr.hostAt(mis.Addr)
			if to == nil && mis.Owner != "" && mis.Addr == "" { // a defect of deskd's, counted: found by its name
				l.noAddr(h.name, mis.Owner)
				to = cr.host(mis.Owner)
			}
			if to != nil {
				if mis.Owner != avoid && o.newOwnerSeen.IsZero() {
					o.newOwnerSeen = now
				}
				if to == h || !to.up() {
					_ = pause(ctx, 10*time.Millisecond)
				}
				h = to
			} else {
				_ = pause(ctx, 10*time.Millisecond) // no owner now
			}
		case code == http.StatusServiceUnavailable: // starting the desk it has won, or stopping: ask round
			if h.name != avoid && o.newOwnerSeen.IsZero() {
				o.newOwnerSeen = now
			}
			h = cr.next(h)
			_ = pause(ctx, 10*time.Millisecond)
		case code == http.StatusOK || code == http.StatusAccepted:
			var st triggerStatus
			_ = json.Unmarshal(resp, &st)
			o.by, o.at, o.answered = h.name, now, code == http.StatusOK && st.State == "answered"
			l.acked(id, h)
			return o
		default:
			l.fail(fmt.Errorf("POST trigger %s to host %s = %d: %s", id, h.name, code, strings.TrimSpace(string(resp))))
			return o
		}
	}
	l.unsent(id) // never acknowledged: the client gave up
	return o
}

// natsHost stands for the stream in the ledger: a NATS trigger is
// acknowledged by its PubAck.
const natsHost = "nats"

// publishTrigger publishes a new NATS trigger of the desk (its id the
// Nats-Msg-Id, answered on inbox) and records it in l once the stream
// has stored it.
func (cr *clusterRig) publishTrigger(ctx context.Context, l *ledger, inbox string) {
	id := l.next()
	body, _ := json.Marshal(map[string]string{"text": eventText(id, 0)})
	msg := nats.NewMsg("deskd.triggers." + clusterDesk)
	msg.Data = body
	msg.Header.Set("Nats-Msg-Id", id)
	msg.Header.Set("Deskd-Reply-To", inbox)
	at := time.Now()
	if _, err := cr.pub.js.PublishMsg(ctx, msg); err != nil {
		if ctx.Err() == nil {
			l.fail(fmt.Errorf("publish NATS trigger %s: %w", id, err))
		}
		l.unsent(id)
		return
	}
	l.ackedNATS(id, at)
}

// watchNATSAnswers subscribes to a new inbox and calls answered for each
// answer (Deskd-Status 200, state answered) that arrives on it.
func (cr *clusterRig) watchNATSAnswers(answered func(id string, at time.Time)) (*nats.Subscription, error) {
	sub, err := cr.pub.nc.Subscribe(nats.NewInbox(), func(m *nats.Msg) {
		at := time.Now()
		var st struct{ ID, State string }
		if m.Header.Get("Deskd-Status") == "200" && json.Unmarshal(m.Data, &st) == nil && st.State == "answered" {
			answered(st.ID, at)
		}
	})
	if err == nil {
		err = cr.pub.nc.Flush()
	}
	if err != nil {
		return nil, fmt.Errorf("subscribe to the NATS triggers' answers: %w", err)
	}
	return sub, nil
}

// raw sends a request and returns the status and body; err is a
// transport error only.
func (a *api) raw(ctx context.Context, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}

// ledger is the bench's own record of the triggers it sent: which were
// acknowledged, by whom, and what became of each.
type ledger struct {
	mu     sync.Mutex
	n      int
	owner  *clusterHost // the last host that acknowledged one
	ids    []string     // acknowledged, in order
	by     map[string]string
	gaveUp []string // sent, never acknowledged: the client gave up
	errs   []error
	sentAt map[string]time.Time // a NATS trigger's id: when it was published
	// noAddrs counts the 421s that named an owner without its address,
	// by "host: owner".
	noAddrs map[string]int
	final   map[string]string   // id: its final state on the owner at the end
	turns   map[string][]string // "session turn n": the ids answered as that turn
}

// newLedger returns an empty ledger.
func newLedger() *ledger {
	return &ledger{by: map[string]string{}, sentAt: map[string]time.Time{}, noAddrs: map[string]int{}, final: map[string]string{}, turns: map[string][]string{}}
}

// next returns a new trigger id (a bench marker).
func (l *ledger) next() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return fmt.Sprintf("%sf-%d", markerPrefix, l.n)
}

// guess is the host to send to first: the last that acknowledged, or a.
func (l *ledger) guess(cr *clusterRig) *clusterHost {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owner != nil {
		return l.owner
	}
	return cr.hosts[0]
}

// acked records that host h acknowledged trigger id.
func (l *ledger) acked(id string, h *clusterHost) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.owner = h
	if _, ok := l.by[id]; !ok {
		l.ids = append(l.ids, id)
	}
	l.by[id] = h.name
}

// ackedNATS records that the stream stored NATS trigger id, published
// at at.
func (l *ledger) ackedNATS(id string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = append(l.ids, id)
	l.by[id], l.sentAt[id] = natsHost, at
}

// noAddr records a 421 of host that named owner without its API address.
func (l *ledger) noAddr(host, owner string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.noAddrs[host+" naming "+owner]++
}

// publishedAt is when NATS trigger id was published (zero: not one the
// stream has stored yet).
func (l *ledger) publishedAt(id string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sentAt[id]
}

// unsent records a trigger never acknowledged: the client gave up.
func (l *ledger) unsent(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gaveUp = append(l.gaveUp, id)
}

// fail records an answer the bench did not expect.
func (l *ledger) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

// check asks the desk's owner for the final state of every trigger
// acknowledged, and the model server how often each reached it.
func (cr *clusterRig) check(ctx context.Context, l *ledger) error {
	owner, err := cr.waitOwner(ctx, "", time.Minute)
	if err != nil {
		return fmt.Errorf("the exactly-once check: %w", err)
	}
	// A NATS trigger may not be queued yet: pulled by a host that died, it
	// comes back after its AckWait (the lease); handed back, after its
	// backoff. A 404 is asked again until this deadline.
	deadline := time.Now().Add(cr.o.Lease + 30*time.Second)
	for _, id := range slices.Concat(l.ids, l.gaveUp) {
		get := func() (int, []byte, error) {
			return owner.api.raw(ctx, http.MethodGet, "/v1/desks/"+clusterDesk+"/triggers/"+id+"?wait=30s", "")
		}
		code, resp, err := get()
		for err == nil && code == http.StatusNotFound && l.by[id] == natsHost && time.Now().Before(deadline) {
			if err = pause(ctx, 250*time.Millisecond); err == nil {
				code, resp, err = get()
			}
		}
		var st triggerStatus
		switch {
		case err != nil:
			return fmt.Errorf("the exactly-once check: GET trigger %s on %s: %w", id, owner.name, err)
		case code == http.StatusNotFound:
			l.final[id] = fmt.Sprintf("LOST (404 on the owner %s, acknowledged by %s)", owner.name, l.by[id])
			continue
		case code != http.StatusOK || json.Unmarshal(resp, &st) != nil:
			return fmt.Errorf("the exactly-once check: GET trigger %s on %s = %d: %s", id, owner.name, code, resp)
		}
		l.final[id] = st.State
		if st.State == "answered" {
			l.turns[fmt.Sprintf("%s turn %d", st.Session, st.Turn)] = append(l.turns[fmt.Sprintf("%s turn %d", st.Session, st.Turn)], id)
		}
	}
	return nil
}

// tally is the exactly-once check's verdict.
type tally struct {
	acked, answered, interrupted, other, lost int
	gaveUpKnown                               int      // triggers never acknowledged that deskd knows
	twice                                     []string // ids that reached the model more than once
	sameTurn                                  []string // turns that answered more than one id
	unanswered                                []string // ids not answered (interrupted, lost, other), with their state
}

// tally counts l's final states and the model's requests per id.
func (l *ledger) tally(count func(id string) int) tally {
	t := tally{acked: len(l.ids)}
	for _, id := range l.ids {
		switch s := l.final[id]; s {
		case "answered":
			t.answered++
		case "interrupted":
			t.interrupted++
			t.unanswered = append(t.unanswered, id+": interrupted")
		case "":
			t.lost++
			t.unanswered = append(t.unanswered, id+": not checked")
		default:
			if strings.HasPrefix(s, "LOST") {
				t.lost++
			} else {
				t.other++
			}
			t.unanswered = append(t.unanswered, id+": "+s)
		}
		if n := count(id); n > 1 {
			t.twice = append(t.twice, fmt.Sprintf("%s (%d requests)", id, n))
		}
	}
	for _, id := range l.gaveUp { // unacknowledged: if deskd took one, it runs once too
		if s := l.final[id]; s != "" && !strings.HasPrefix(s, "LOST") {
			t.gaveUpKnown++
		}
		if n := count(id); n > 1 {
			t.twice = append(t.twice, fmt.Sprintf("%s (%d requests, unacknowledged)", id, n))
		}
	}
	for turn, ids := range l.turns {
		if len(ids) > 1 {
			t.sameTurn = append(t.sameTurn, fmt.Sprintf("%s: %s", turn, strings.Join(ids, " ")))
		}
	}
	slices.Sort(t.sameTurn)
	return t
}

// e2m is one round's event to model on one daemon, with its floor and
// its timeline.
type e2m struct {
	p50, p99    time.Duration
	accepted    time.Duration // p50 of POST to 202
	rtt, fsync  time.Duration // p50s of the floor's parts
	publish     time.Duration // p50 of a JetStream publish alone (the cluster only)
	publishP99  time.Duration
	walRecords  float64       // mean WAL records published between a POST and its model request (the cluster only)
	firstWAL    time.Duration // p50 of POST to the first of them, seen by a subscriber
	lastWAL     time.Duration // p50 of POST to the last of them
	triggers    int
	clusterMode bool
}

// eventToModel measures event to model on r's desk, with the floor's
// parts sampled after each trigger (and the JetStream publish alone on a
// cluster, and the WAL's records published during each trigger, seen by a
// subscriber of its subjects).
func (cr *clusterRig) eventToModel(ctx context.Context, r *running, tag string, clustered bool) (e2m, error) {
	fl, err := newFloor(r.s.State)
	if err != nil {
		return e2m{}, err
	}
	defer fl.close()
	var wal *walWatch
	if clustered {
		if wal, err = watchWAL(cr.pub.nc); err != nil {
			return e2m{}, err
		}
		defer wal.close()
	}
	var lat, acc, pub, firsts, last []time.Duration
	records := 0
	for i := range cr.o.Events + 5 {
		start := time.Now()
		d, a, err := r.timedTurn(ctx, clusterDesk, fmt.Sprintf("%se%s-%d", markerPrefix, tag, i), i)
		if err != nil {
			return e2m{}, err
		}
		keep := i >= 5 // the first five warm up
		if wal != nil && keep {
			ats := wal.between(start, start.Add(d))
			records += len(ats)
			if len(ats) > 0 {
				firsts, last = append(firsts, ats[0].Sub(start)), append(last, ats[len(ats)-1].Sub(start))
			}
		}
		if err := fl.sample(ctx, keep); err != nil {
			return e2m{}, err
		}
		if clustered {
			p, err := cr.pub.sample(ctx)
			if err != nil {
				return e2m{}, err
			}
			if keep {
				pub = append(pub, p)
			}
		}
		if keep {
			lat, acc = append(lat, d), append(acc, d-a)
		}
	}
	return e2m{p50: percentile(lat, 50), p99: percentile(lat, 99), accepted: percentile(acc, 50), rtt: percentile(fl.rtt, 50), fsync: percentile(fl.sync, 50),
		publish: percentile(pub, 50), publishP99: percentile(pub, 99), walRecords: float64(records) / float64(len(lat)), firstWAL: percentile(firsts, 50), lastWAL: percentile(last, 50),
		triggers: len(lat), clusterMode: clustered}, nil
}

// walWatch notes when each record of the WAL (deskd.wal.>) is published.
type walWatch struct {
	sub *nats.Subscription
	mu  sync.Mutex
	at  []time.Time
}

// watchWAL subscribes to the WAL's subjects on nc.
func watchWAL(nc *nats.Conn) (*walWatch, error) {
	w := &walWatch{}
	sub, err := nc.Subscribe("deskd.wal.>", func(*nats.Msg) {
		now := time.Now()
		w.mu.Lock()
		w.at = append(w.at, now)
		w.mu.Unlock()
	})
	if err == nil {
		err = nc.Flush()
	}
	if err != nil {
		return nil, fmt.Errorf("watch the WAL: %w", err)
	}
	w.sub = sub
	return w, nil
}

// between returns when the records seen from start to end were seen.
func (w *walWatch) between(start, end time.Time) []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Time
	for _, at := range w.at {
		if !at.Before(start) && !at.After(end) {
			out = append(out, at)
		}
	}
	return out
}

// close ends the subscription.
func (w *walWatch) close() { _ = w.sub.Unsubscribe() }

// spread is min / median / max of ds in ms, with no decimals.
func spread(ds []time.Duration) string { return spreadOf(ds, 0) }

// spreadFine is spread with two decimals.
func spreadFine(ds []time.Duration) string { return spreadOf(ds, 2) }

// spreadOf is min / median / max of ds in ms, with digits decimals.
func spreadOf(ds []time.Duration, digits int) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%.*f / %.*f / %.*f", digits, ms(s[0]), digits, ms(s[len(s)/2]), digits, ms(s[len(s)-1]))
}

// after is t's time after at in ms ("?" when t is zero).
func after(at, t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return fmt.Sprintf("%.0f ms", ms(t.Sub(at)))
}

// figures are the cluster subcommand's rows: 9 the failovers (HTTP), 10
// event to model, 11 the exactly-once check, 12 the failovers of the NATS
// ingress.
func (cr *clusterRig) figures(kills, terms []failover, clustered, single []e2m, l *ledger) []figure {
	var figs []figure
	for _, fo := range []struct {
		name   string
		fs     []failover
		target time.Duration
	}{{"SIGKILL of the owner to a standby's first answer", kills, cr.o.Lease + 2*time.Second}, {"SIGTERM of the owner to a standby's first answer", terms, time.Second}} {
		var took, seen []time.Duration
		var timeline []string
		for _, f := range fo.fs {
			took = append(took, f.answered.Sub(f.at))
			if !f.seen.IsZero() {
				seen = append(seen, f.seen.Sub(f.at))
			}
			word := "none"
			if !f.seen.IsZero() {
				word = fmt.Sprintf("%.0f ms", ms(f.seen.Sub(f.at)))
			}
			to := f.takeover
			timeline = append(timeline, fmt.Sprintf("%s->%s: new owner's first word %s, folder rebuilt from snapshot %d + %d WAL records %s, desk running %s, answer %.0f ms",
				f.victim, f.by, word, to.snapshot, to.records, after(f.at, to.rebuilt), after(f.at, to.runs), ms(f.answered.Sub(f.at))))
		}
		if len(took) == 0 {
			figs = append(figs, figure{Row: 9, Name: fo.name, Unit: "ms", Failed: "no round measured it"})
			continue
		}
		renew := cr.o.Lease / 3
		floor := fmt.Sprintf("the lease less the time since its last renewal: %s to %s", cr.o.Lease-renew, cr.o.Lease)
		if fo.fs[0].sig == syscall.SIGTERM {
			floor = "0 (the lease is released)"
		}
		figs = append(figs, figure{Row: 9, Name: fo.name + " (median)", Value: ms(percentile(took, 50)), Unit: "ms", Floor: floor,
			Target: "<= " + fo.target.String(), Met: met(slices.Max(took) <= fo.target),
			Note: fmt.Sprintf("min/median/max %s ms over %d rounds; %s", spread(took), len(took), strings.Join(timeline, "; "))})
	}
	for _, fo := range []struct {
		sig string
		fs  []failover
	}{{"SIGKILL", kills}, {"SIGTERM", terms}} {
		var first, late []time.Duration
		for _, f := range fo.fs {
			if !f.natsAnswered.IsZero() {
				first = append(first, f.natsAnswered.Sub(f.at))
			}
			if !f.natsLate.IsZero() {
				late = append(late, f.natsLate.Sub(f.at))
			}
		}
		if len(first) == 0 {
			figs = append(figs, figure{Row: 12, Name: fo.sig + " of the owner to the first answer of a NATS trigger published after it", Unit: "ms", Failed: "no round measured it"})
			continue
		}
		figs = append(figs, figure{Row: 12, Name: fo.sig + " of the owner to the first answer of a NATS trigger published after it (median)", Value: ms(percentile(first, 50)), Unit: "ms",
			Note: fmt.Sprintf("min/median/max %s ms over %d rounds; the last answer of a NATS trigger published before the signal: %s ms after it (%d rounds had one), the AckWait being the lease",
				spread(first), len(first), spread(late), len(late))})
	}
	var cp50, cp99, sp50, sp99, rtt, fsync, pub, pubP99, cacc, sacc, firstWAL, lastWAL []time.Duration
	var walRecords []string
	for _, e := range clustered {
		cp50, cp99 = append(cp50, e.p50), append(cp99, e.p99)
		cacc, firstWAL, lastWAL = append(cacc, e.accepted), append(firstWAL, e.firstWAL), append(lastWAL, e.lastWAL)
		walRecords = append(walRecords, fmt.Sprintf("%.2f", e.walRecords))
		rtt, fsync, pub, pubP99 = append(rtt, e.rtt), append(fsync, e.fsync), append(pub, e.publish), append(pubP99, e.publishP99)
	}
	for _, e := range single {
		sp50, sp99, sacc = append(sp50, e.p50), append(sp99, e.p99), append(sacc, e.accepted)
		rtt, fsync = append(rtt, e.rtt), append(fsync, e.fsync)
	}
	if len(cp50) > 0 && len(sp50) > 0 {
		floor := fmt.Sprintf("round trip %s + max(fsync %s, JetStream publish %s) ms (min/median/max)", spreadFine(rtt), spreadFine(fsync), spreadFine(pub))
		figs = append(figs,
			figure{Row: 10, Name: "event to model p50, cluster (median of rounds)", Value: ms(percentile(cp50, 50)), Unit: "ms", Floor: floor,
				Target: fmt.Sprintf("<= 2x one host = %.2f ms", ms(2*percentile(sp50, 50))), Met: met(percentile(cp50, 50) <= 2*percentile(sp50, 50)),
				Note: fmt.Sprintf("min/median/max %s ms; %.2fx one host's; %d triggers a round", spreadFine(cp50), float64(percentile(cp50, 50))/float64(percentile(sp50, 50)), clustered[0].triggers)},
			figure{Row: 10, Name: "event to model p99, cluster (median of rounds)", Value: ms(percentile(cp99, 50)), Unit: "ms",
				Note: "min/median/max " + spreadFine(cp99) + " ms"},
			figure{Row: 10, Name: "event to model p50, one host (median of rounds)", Value: ms(percentile(sp50, 50)), Unit: "ms",
				Floor: fmt.Sprintf("round trip + fsync = %.2f ms", ms(percentile(rtt, 50)+percentile(fsync, 50))), Note: "min/median/max " + spreadFine(sp50) + " ms"},
			figure{Row: 10, Name: "event to model p99, one host (median of rounds)", Value: ms(percentile(sp99, 50)), Unit: "ms",
				Note: "min/median/max " + spreadFine(sp99) + " ms"},
			figure{Row: 10, Name: "of which POST to 202 p50, cluster (median of rounds)", Value: ms(percentile(cacc, 50)), Unit: "ms",
				Note: fmt.Sprintf("min/median/max %s ms; one host's %s ms; WAL records published between a POST and its model request, mean a round: %s; POST to the first of them seen by a subscriber p50 %s ms, to the last %s ms",
					spreadFine(cacc), spreadFine(sacc), strings.Join(walRecords, ", "), spreadFine(firstWAL), spreadFine(lastWAL))},
			figure{Row: 10, Name: "floor: JetStream publish of 400 B, R3, p50 (median of rounds)", Value: ms(percentile(pub, 50)), Unit: "ms",
				Note: "min/median/max " + spreadFine(pub) + " ms; p99 " + spreadFine(pubP99) + " ms; one after each trigger"},
		)
	} else {
		figs = append(figs, figure{Row: 10, Name: "event to model, cluster and one host", Unit: "ms", Failed: "no round measured it"})
	}
	t := l.tally(func(id string) int { a, _ := cr.m.arrival(id); return a.Count })
	signals := slices.Concat(kills, terms)
	slices.SortFunc(signals, func(a, b failover) int { return a.at.Compare(b.at) })
	for i, tw := range t.twice { // when each request came, after which signal
		id, _, _ := strings.Cut(tw, " ")
		a, _ := cr.m.arrival(id)
		var when []string
		for _, at := range a.Times {
			w := "before any signal"
			for _, f := range signals {
				if !at.Before(f.at) {
					w = fmt.Sprintf("%+.0f ms after the %s of %s", ms(at.Sub(f.at)), f.sig, f.victim)
				}
			}
			when = append(when, w)
		}
		t.twice[i] = fmt.Sprintf("%s, acknowledged by %s, %s: requests %s", tw, l.by[id], l.final[id], strings.Join(when, ", "))
	}
	ok := t.lost == 0 && t.other == 0 && len(t.twice) == 0 && len(t.sameTurn) == 0 && len(l.errs) == 0
	note := fmt.Sprintf("%d acknowledged: %d answered, %d interrupted, %d lost, %d other; %d reached the model twice; %d turns answered two ids; %d given up unacknowledged at the end of a phase (%d of them known to deskd); %d errors",
		t.acked, t.answered, t.interrupted, t.lost, t.other, len(t.twice), len(t.sameTurn), len(l.gaveUp), t.gaveUpKnown, len(l.errs))
	if len(t.unanswered) > 0 {
		note += "; not answered: " + strings.Join(first(t.unanswered, 10), ", ")
	}
	if len(t.twice) > 0 {
		note += "; TWICE: " + strings.Join(first(t.twice, 10), ", ")
	}
	if len(t.sameTurn) > 0 {
		note += "; SAME TURN: " + strings.Join(first(t.sameTurn, 10), ", ")
	}
	for _, err := range first(l.errs, 5) {
		note += "; ERROR " + err.Error()
	}
	var noAddr []string
	total := 0
	for k, n := range l.noAddrs {
		noAddr, total = append(noAddr, fmt.Sprintf("%s: %d", k, n)), total+n
	}
	slices.Sort(noAddr)
	figs = append(figs, figure{Row: 11, Name: "421s naming the owner without its API address", Value: float64(total), Unit: "answers",
		Target: "none (the contract: addr, the owner's API address)", Met: met(total == 0),
		Note: "the client then found the owner by its name; " + strings.Join(noAddr, ", ")})
	figs = append(figs, figure{Row: 11, Name: "load average at the end of each round", Value: float64(len(cr.loads)), Unit: "rounds",
		Note: strings.Join(cr.loads, "; ")})
	figs = append(figs, figure{Row: 11, Name: "acknowledged triggers answered (or shown interrupted) exactly once", Value: float64(t.answered + t.interrupted), Unit: "triggers",
		Target: fmt.Sprintf("all %d, none twice", t.acked), Met: met(ok), Note: note})
	return figs
}

// first returns the first n of s.
func first[T any](s []T, n int) []T { return s[:min(n, len(s))] }
