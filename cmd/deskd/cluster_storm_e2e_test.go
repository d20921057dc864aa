//go:build slow

// The cluster storms of issue 25, through the deskd binary on a
// three-node embedded JetStream cluster (cluster_e2e_test.go's rig, lease
// 3s): an owner stopped past its lease and resumed, and its SIGKILLs again
// and again while triggers arrive by HTTP. Slow (about 30 s and 60 s):
// each takeover waits out a lease, each kill restarts a binary.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/cluster"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/natstest"
	"github.com/deskd/deskd/router/routertest"
	"github.com/deskd/deskd/triggers"
)

// stormHosts is where a storm's triggers are sent: the base URL of each
// host's API while it is up (a restarted binary listens on a new port).
type stormHosts struct {
	mu   sync.Mutex
	urls map[string]string // host -> base URL; absent while it is down
}

// set records host's base URL; "" marks it down.
func (h *stormHosts) set(host, url string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.urls == nil {
		h.urls = map[string]string{}
	}
	if url == "" {
		delete(h.urls, host)
		return
	}
	h.urls[host] = url
}

// pick returns the base URL of the i-th host that is up, by name (""
// when none is).
func (h *stormHosts) pick(i int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := make([]string, 0, len(h.urls))
	for n := range h.urls {
		names = append(names, n)
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return h.urls[names[i%len(names)]]
}

// stormSender posts triggers of desk main as a client of a cluster does:
// to any host that is up, following its 421 to the owner (OnOwner), and
// again with the same id after any failure (a host down, stopped, or
// contending; a 503 or a 429) until a host accepts it.
type stormSender struct {
	hosts *stormHosts
	try   time.Duration // the bound of one attempt: a stopped host never answers
	stormTally
}

// stormTally is what a storm's sender sent and what was accepted.
type stormTally struct {
	mu    sync.Mutex
	acked []string // ids accepted (202, or known on a retry; a PubAck), in order
	sent  []string // every id sent at least once
	bad   []string // answers no retry may change (a 400, say)
}

// add appends v to the list *to under the tally's lock.
func (s *stormTally) add(to *[]string, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*to = append(*to, v)
}

// stormText is the trigger text of id: the mock model counts its
// requests by it.
func stormText(id string) string { return "storm trigger <" + id + ">" }

// post sends trigger id until a host accepts it or ctx ends.
func (s *stormSender) post(ctx context.Context, id string, attempt int) {
	s.add(&s.sent, id)
	// The answers after which it is sent again: a host that does not run
	// the desk, or is stopping, or whose queue is full.
	retried := []int{http.StatusMisdirectedRequest, http.StatusServiceUnavailable, http.StatusTooManyRequests}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ; ctx.Err() == nil; attempt++ {
		if base := s.hosts.pick(attempt); base != "" {
			err := s.once(ctx, base, id)
			var he *httpapi.Error
			switch {
			case err == nil:
				s.add(&s.acked, id)
				return
			case errors.As(err, &he) && !slices.Contains(retried, he.Status):
				s.add(&s.bad, fmt.Sprintf("%s: %v", id, err))
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// once is one attempt at base, following 421s.
func (s *stormSender) once(ctx context.Context, base, id string) error {
	c, err := httpapi.Dial(base)
	if err != nil {
		return fmt.Errorf("dial %s: %w", base, err)
	}
	actx, cancel := context.WithTimeout(ctx, s.try)
	defer cancel()
	_, err = c.OnOwner(func(c *httpapi.Client) error {
		_, err := c.PostTrigger(actx, "main", triggers.Request{ID: id, Text: stormText(id)})
		return err
	})
	return err
}

// run posts trigger after trigger (ids prefix001, ...) by workers
// senders at once until ctx ends, and returns when the last is done.
func (s *stormSender) run(ctx context.Context, prefix string, workers int) {
	sendPaced(ctx, prefix, workers, s.post)
}

// sendPaced calls send with id after id (prefix001, ...) by workers
// senders at once, each at a market's pace, until ctx ends, and returns
// when the last is done; send's worker is the sender's number.
func sendPaced(ctx context.Context, prefix string, workers int, send func(ctx context.Context, id string, worker int)) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for w := range workers {
		wg.Go(func() {
			pace := time.NewTicker(50 * time.Millisecond) // a market's pace, not a flood the queue refuses
			defer pace.Stop()
			for ; ctx.Err() == nil; <-pace.C {
				mu.Lock()
				n++
				id := fmt.Sprintf("%s%03d", prefix, n)
				mu.Unlock()
				send(ctx, id, w)
			}
		})
	}
	wg.Wait()
}

// ackedCount is how many triggers were accepted so far.
func (s *stormTally) ackedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acked)
}

// results are the ids accepted, the ids posted, and the answers no retry
// could change.
func (s *stormTally) results() (acked, sent, bad []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.acked), slices.Clone(s.sent), slices.Clone(s.bad)
}

// stormTriggerStream is the kill storm's stream of NATS triggers, on the
// hosts' default subject deskd.triggers.>, made by the test with three
// replicas before the hosts start (docs/NATS.md: ingress that survives a
// node; cmd/deskbench's cluster does the same).
const stormTriggerStream = "STORM_TRIGGERS"

// makeTriggerStream makes stormTriggerStream on c, three replicas, a
// dedupe window of 10 minutes.
func makeTriggerStream(t *testing.T, c *natstest.Cluster) jetstream.JetStream {
	t.Helper()
	_, js := c.Client()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: stormTriggerStream, Subjects: []string{"deskd.triggers.>"},
		Replicas: 3, Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute})
	if err != nil {
		t.Fatalf("make the stream %s: %v", stormTriggerStream, err)
	}
	return js
}

// natsStormSender publishes triggers of desk main to deskd.triggers.main
// by JetStream, each with an id of its own as Nats-Msg-Id, the same id
// again after any failure until the stream acknowledges it (a PubAck:
// accepted, whichever host owns the desk, or none).
type natsStormSender struct {
	js  jetstream.JetStream
	try time.Duration // the bound of one publish
	stormTally
}

// publish sends trigger id until the stream acknowledges it or ctx ends.
func (s *natsStormSender) publish(ctx context.Context, id string, _ int) {
	s.add(&s.sent, id)
	body, err := json.Marshal(triggers.Request{Text: stormText(id)})
	if err != nil {
		s.add(&s.bad, fmt.Sprintf("%s: %v", id, err))
		return
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, s.try)
		_, err := s.js.Publish(pctx, "deskd.triggers.main", body, jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			s.add(&s.acked, id)
			return
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// waitKnown waits, until deadline, for the host at base to know every
// trigger of ids (a NATS trigger acknowledged by the stream is queued
// once the desk's owner has pulled it: after a kill, once the lease has
// passed).
func waitKnown(t *testing.T, deadline time.Time, base string, ids []string) {
	t.Helper()
	c, err := httpapi.Dial(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		waitStorm(t, deadline, "the owner "+base+" to know trigger "+id, func() bool {
			_, err := c.WaitTrigger(t.Context(), "main", id, 0)
			var he *httpapi.Error
			if errors.As(err, &he) && he.Status == http.StatusNotFound {
				return false
			}
			if err != nil {
				t.Fatalf("trigger %s on the owner %s: %v", id, base, err)
			}
			return true
		})
	}
}

// waitStorm waits, polling every 100 ms until deadline, for cond; what
// names it in the failure.
func waitStorm(t *testing.T, deadline time.Time, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not by the deadline %s", what, deadline.Format(time.RFC3339))
		}
		<-tick.C
	}
}

// listedBy is desk main as base's GET /v1/desks lists it, and false when
// the host does not answer within a second (down, stopped, stopping).
func listedBy(ctx context.Context, base string) (desk.Status, bool) {
	c, err := httpapi.Dial(base)
	if err != nil {
		return desk.Status{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	out, err := c.Desks(ctx)
	if err != nil {
		return desk.Status{}, false
	}
	for _, st := range out.Desks {
		if st.Name == "main" {
			return st, true
		}
	}
	return desk.Status{}, false
}

// runsMain reports whether host at base lists itself the owner of desk
// main at an epoch after the one given and runs it (not standby), and
// returns that epoch.
func runsMain(ctx context.Context, host, base string, after uint64) (uint64, bool) {
	st, ok := listedBy(ctx, base)
	if !ok || st.Owner == nil || st.Owner.Host != host || st.Owner.Epoch <= after ||
		st.State == desk.StateStandby || st.State == desk.StateStarting {
		return 0, false
	}
	return st.Owner.Epoch, true
}

// checkAnsweredOnce waits on the owner at base for every trigger in
// acked to end, and fails the test unless each is answered, or
// interrupted, and unless the model had each text of sent once when its
// trigger was answered and at most once otherwise.
func checkAnsweredOnce(t *testing.T, llm *routertest.Server, base string, acked, sent []string) map[string]int {
	t.Helper()
	c, err := httpapi.Dial(base)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	stateOf := map[string]triggers.State{}
	for _, id := range acked {
		st, err := c.WaitTrigger(t.Context(), "main", id, time.Minute)
		if err != nil {
			t.Fatalf("trigger %s, accepted, on the owner %s: %v", id, base, err)
		}
		states[string(st.State)]++
		stateOf[id] = st.State
		if st.State != triggers.StateAnswered && st.State != triggers.StateInterrupted {
			t.Errorf("trigger %s, accepted: %s (%s), want answered or interrupted", id, st.State, st.Reason)
		}
	}
	for _, id := range sent {
		n := llm.CountWhere(routertest.UserContains(stormText(id)))
		if stateOf[id] == triggers.StateAnswered && n != 1 || n > 1 {
			t.Errorf("trigger %s (%q): %d model requests, want one", id, stateOf[id], n)
		}
	}
	return states
}

// walRecord is one record of a desk's WAL, read from DESKD_WAL.
type walRecord struct {
	seq   uint64
	op    string
	host  string
	epoch uint64
}

// readWAL returns every record of desk main's WAL subject, in order. A
// read that fails (the cluster's JetStream API has no responder for a
// moment after the storm's kills: "no responders available") is made
// again from the start, for at most a minute.
func readWAL(t *testing.T, c *natstest.Cluster) []walRecord {
	t.Helper()
	_, js := c.Client()
	deadline := time.Now().Add(time.Minute)
	for {
		recs, err := readWALOnce(t.Context(), js)
		if err == nil {
			return recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %s: %v (for a minute)", cluster.Subject("main"), err)
		}
		t.Logf("read %s: %v; reading it again", cluster.Subject("main"), err)
		select {
		case <-t.Context().Done():
			t.Fatalf("read %s: %v", cluster.Subject("main"), t.Context().Err())
		case <-time.After(200 * time.Millisecond): // a pause between tries, not a wait for time to pass
		}
	}
}

// readWALOnce reads desk main's WAL subject from its first record to its
// last, through an ordered consumer of its own.
func readWALOnce(ctx context.Context, js jetstream.JetStream) ([]walRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, cluster.WALStream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", cluster.WALStream, err)
	}
	last, err := st.GetLastMsgForSubject(ctx, cluster.Subject("main"))
	if err != nil {
		return nil, fmt.Errorf("its last record: %w", err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{cluster.Subject("main")}})
	if err != nil {
		return nil, fmt.Errorf("an ordered consumer: %w", err)
	}
	var out []walRecord
	for len(out) == 0 || out[len(out)-1].seq < last.Sequence {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, fmt.Errorf("fetch after %d records: %w", len(out), err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return nil, fmt.Errorf("a record's metadata: %w", err)
			}
			epoch, _ := strconv.ParseUint(m.Headers().Get(cluster.HeaderEpoch), 10, 64)
			out = append(out, walRecord{seq: md.Sequence.Stream, op: m.Headers().Get(cluster.HeaderOp), host: m.Headers().Get(cluster.HeaderHost), epoch: epoch})
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoHeartbeat) {
			return nil, fmt.Errorf("fetch after %d records: %w", len(out), err)
		}
		if n == 0 {
			return nil, fmt.Errorf("no record within 5s, %d read, the last is at %d", len(out), last.Sequence)
		}
	}
	return out, nil
}

// checkWALEpochs fails the test unless desk main's WAL is one owner after
// another: each epoch's records begin with its fence, by one host, and no
// record of an earlier epoch comes after a later epoch's fence (never two
// owners whose writes both became durable). It returns the epochs in the
// order of their fences.
func checkWALEpochs(t *testing.T, recs []walRecord) []uint64 {
	t.Helper()
	var epochs []uint64
	hostOf := map[uint64]string{}
	defer func() { t.Logf("the WAL's %d records: the epochs fenced, by host: %v", len(recs), hostOf) }()
	for _, r := range recs {
		cur := uint64(0)
		if len(epochs) > 0 {
			cur = epochs[len(epochs)-1]
		}
		switch {
		case r.op == cluster.OpFence && r.epoch > cur:
			epochs = append(epochs, r.epoch)
			hostOf[r.epoch] = r.host
		case r.epoch != cur:
			t.Errorf("WAL record %d (%s) by host %s at epoch %d after the fence of epoch %d (host %s): a write of another owner became durable",
				r.seq, r.op, r.host, r.epoch, cur, hostOf[cur])
		case r.host != hostOf[cur]:
			t.Errorf("WAL record %d (%s) by host %s at epoch %d, whose fence is host %s's", r.seq, r.op, r.host, r.epoch, hostOf[cur])
		}
	}
	return epochs
}

// TestClusterE2EStoppedOwnerIsFenced: a owns desk main; a trigger's turn
// is with the model when a is stopped (SIGSTOP) while triggers keep
// arriving through b. b takes the desk past a's lease and answers the
// triggers sent after; the model then answers a's turn, and a is resumed
// (SIGCONT): it is fenced, stops the desk (its /v1/desks lists it
// standby), and nothing it wrote after b's fence is in the WAL: every
// record after it is of b's epoch. Every trigger accepted is answered once
// or (the held one) interrupted, and no text reached the model twice.
// The binary: SIGSTOP, SIGCONT.
func TestClusterE2EStoppedOwnerIsFenced(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	deadline := time.Now().Add(3 * time.Minute)
	llm, release := newFakeLLM(t, "HOLD")
	c := natstest.StartCluster(t, 3)
	a, b := clusterPairOn(t, deadline, c, openAIModel(llm))
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = a.signal(syscall.SIGCONT)
		}
	})
	if code, body := a.call(t, http.MethodPost, "/v1/desks/main/triggers?wait=30s", "", `{"id": "p1", "text": "`+stormText("p1")+`"}`); code != http.StatusOK {
		a.fail(t, "POST p1 to the owner = %d %s, want 200", code, body)
	}
	first, ok := runsMain(t.Context(), "a", a.URL(t), 0)
	if !ok {
		t.Fatalf("a does not list itself the owner of desk main")
	}
	if code, body := a.call(t, http.MethodPost, "/v1/desks/main/triggers", "", `{"id": "held", "text": "HOLD `+stormText("held")+`"}`); code != http.StatusAccepted {
		a.fail(t, "POST held to the owner = %d %s, want 202", code, body)
	}
	llm.Await(t, routertest.UserContains(stormText("held")))
	if err := a.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()

	hosts := &stormHosts{}
	hosts.set("b", b.URL(t))
	s := &stormSender{hosts: hosts, try: time.Second}
	ctx, stop := context.WithCancel(t.Context())
	var sending sync.WaitGroup
	sending.Go(func() { s.run(ctx, "q", 2) })
	var took uint64
	waitStorm(t, deadline, "b to take desk main over", func() bool {
		e, ok := runsMain(t.Context(), "b", b.URL(t), first)
		took = e
		return ok
	})
	t.Logf("b runs desk main at epoch %d (a's was %d), %v after a's SIGSTOP", took, first, time.Since(stoppedAt).Round(time.Millisecond))
	n := s.ackedCount()
	waitStorm(t, deadline, "b to accept two triggers more", func() bool { return s.ackedCount() >= n+2 })
	release <- struct{}{} // a's turn has its answer, to read once resumed
	if err := a.signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	resumedAt := time.Now()
	waitStorm(t, deadline, "a, resumed, to list desk main standby", func() bool {
		st, ok := listedBy(t.Context(), a.URL(t))
		return ok && st.State == desk.StateStandby
	})
	// The event's line is written by the bus's subscriber, after the
	// listing changed at times.
	lost := isEvent("desk.lost", "desk", "main", "host", "a")
	waitStorm(t, deadline, "a's desk.lost of desk main", func() bool { return a.count(lost) > 0 })
	lines, _ := a.stderr.snapshot()
	for _, l := range lines {
		if lost(l) {
			t.Logf("a, resumed: desk.lost at epoch %v: %s (listed standby and logged %v after SIGCONT)", l.Num("epoch"), l.Str("reason"), time.Since(resumedAt).Round(time.Millisecond))
		}
	}
	// a woke to a desk taken: its stores answer, nothing failed there.
	if n := a.count(isEvent("storage.failed", "desk", "main")); n > 0 {
		t.Errorf("a, resumed, reported storage.failed %d times for desk main: b took it, a's stores did not fail", n)
	}
	n = s.ackedCount()
	waitStorm(t, deadline, "b to accept two triggers more after a's resume", func() bool { return s.ackedCount() >= n+2 })
	stop()
	sending.Wait()
	t.Logf("triggers sent from a's SIGSTOP for %v, %v after its SIGCONT", time.Since(stoppedAt).Round(time.Millisecond), time.Since(resumedAt).Round(time.Millisecond))

	acked, sent, bad := s.results()
	if len(bad) > 0 {
		t.Errorf("triggers refused: %v", bad)
	}
	states := checkAnsweredOnce(t, llm, b.URL(t), append([]string{"p1", "held"}, acked...), append([]string{"p1", "held"}, sent...))
	// held's model call was made on a, its answer never durable: b shows
	// it interrupted and does not run it again (checkAnsweredOnce: one
	// model request). Its "sent" mark is not durable before the request
	// goes out (as on one host, where a crash of the machine can lose it),
	// so b may say it was never sent.
	if held := b.trigger(t, "held"); held["state"] != "interrupted" {
		t.Errorf("held on b = %v, want interrupted: a's answer to it never became durable", held)
	} else {
		t.Logf("held on b: interrupted, model_called %v: %v", held["model_called"], held["reason"])
	}
	if st := listedDesk(t, b); st.Owner == nil || st.Owner.Host != "b" || st.Owner.Epoch != took {
		t.Errorf("desk main on b in the end: owner %+v, want b at epoch %d", st.Owner, took)
	}
	epochs := checkWALEpochs(t, readWAL(t, c))
	if len(epochs) == 0 || epochs[len(epochs)-1] != took {
		t.Errorf("the WAL's fences are of epochs %v, want the last b's, %d", epochs, took)
	}
	t.Logf("%d triggers accepted (%v), the WAL's epochs %v", len(acked)+2, states, epochs)
}

// TestClusterE2EKillStorm: three deskd on the same desk files; triggers
// posted by HTTP to any host, following 421s, the same id again after any
// failure, and published by JetStream to deskd.triggers.main (nats.triggers,
// a stream of three replicas), a Nats-Msg-Id of its own each, the same
// again until its PubAck, while the owner of desk main is killed
// (SIGKILL) and started again five times, each time once a standby has
// taken the desk over and accepted triggers. In the end every trigger
// accepted (a 202, a PubAck) is answered once or shown interrupted on the
// last owner, read back by id through its API, no trigger's text reached
// the mock model twice, and the WAL is one owner after another. The
// binary: SIGKILL.
func TestClusterE2EKillStorm(t *testing.T) {
	deskdBinary(t)
	t.Parallel()
	const kills = 5
	deadline := time.Now().Add(5 * time.Minute)
	llm, _ := newFakeLLM(t, "")
	c := natstest.StartCluster(t, 3)
	js := makeTriggerStream(t, c)
	names := []string{"a", "b", "c"}
	cfg, proc := map[string]string{}, map[string]*deskdProc{}
	hosts := &stormHosts{}
	started := time.Now()
	for _, h := range names {
		cfg[h] = clusterNATSConfig(t, c, h, openAIModel(llm), "  triggers: {stream: "+stormTriggerStream+"}\n")
		proc[h] = startAPIBinary(t, "deskd-"+h, cfg[h])
		hosts.set(h, proc[h].URL(t))
	}
	s := &stormSender{hosts: hosts, try: 3 * time.Second}
	ctx, stop := context.WithCancel(t.Context())
	var sending sync.WaitGroup
	sending.Go(func() { s.run(ctx, "s", 2) })
	ns := &natsStormSender{js: js, try: 3 * time.Second}
	sending.Go(func() { sendPaced(ctx, "n", 1, ns.publish) })
	t.Cleanup(func() { stop(); sending.Wait() })

	var epoch uint64
	owner := ""
	findOwner := func(what string) {
		waitStorm(t, deadline, what, func() bool {
			for _, h := range names {
				if e, ok := runsMain(t.Context(), h, proc[h].URL(t), epoch); ok {
					owner, epoch = h, e
					return true
				}
			}
			return false
		})
	}
	findOwner("an owner of desk main")
	t.Logf("host %s runs desk main at epoch %d, %v after the three hosts started", owner, epoch, time.Since(started).Round(time.Millisecond))
	for k := 1; k <= kills; k++ {
		n := s.ackedCount()
		nn := ns.ackedCount()
		waitStorm(t, deadline, "three triggers accepted under the owner "+owner, func() bool { return s.ackedCount() >= n+3 })
		waitStorm(t, deadline, "three NATS triggers acknowledged under the owner "+owner, func() bool { return ns.ackedCount() >= nn+3 })
		killed := owner
		hosts.set(killed, "")
		killedAt := time.Now()
		killNow(t, proc[killed])
		if k%2 == 0 { // a standby takes the desk over before the killed host is back
			findOwner(fmt.Sprintf("a standby to take desk main over after kill %d (of host %s)", k, killed))
			t.Logf("kill %d: host %s runs desk main %v after the SIGKILL (as polled; not asserted)", k, owner, time.Since(killedAt).Round(time.Millisecond))
		}
		proc[killed] = startAPIBinary(t, fmt.Sprintf("deskd-%s (%d)", killed, k+1), cfg[killed])
		hosts.set(killed, proc[killed].URL(t))
		if k%2 == 1 { // the killed host is back at once: it or a standby takes the desk
			findOwner(fmt.Sprintf("a new owner of desk main after kill %d (of host %s)", k, killed))
		}
		t.Logf("kill %d of host %s: host %s runs desk main at epoch %d", k, killed, owner, epoch)
	}
	n := s.ackedCount()
	waitStorm(t, deadline, "three triggers accepted under the last owner "+owner, func() bool { return s.ackedCount() >= n+3 })
	stop()
	sending.Wait()

	acked, sent, bad := s.results()
	if len(bad) > 0 {
		t.Errorf("triggers refused: %v", bad)
	}
	nacked, nsent, nbad := ns.results()
	if len(nbad) > 0 {
		t.Errorf("NATS triggers not sent: %v", nbad)
	}
	waitKnown(t, deadline, proc[owner].URL(t), nacked)
	states := checkAnsweredOnce(t, llm, proc[owner].URL(t), append(acked, nacked...), append(sent, nsent...))
	epochs := checkWALEpochs(t, readWAL(t, c))
	if len(epochs) < kills+1 || epochs[len(epochs)-1] != epoch {
		t.Errorf("the WAL's fences are of epochs %v, want at least %d, the last %d", epochs, kills+1, epoch)
	}
	t.Logf("%d kills, %d triggers posted, %d accepted, %d published by NATS, %d acknowledged: %v; the WAL's epochs %v",
		kills, len(sent), len(acked), len(nsent), len(nacked), states, epochs)
	for _, h := range names { // the takeovers that failed (not asserted: a cold cluster's first fences time out)
		lines, _ := proc[h].stderr.snapshot()
		for _, l := range lines {
			if l.Event() == "desk.failed" {
				t.Logf("host %s (its last process): desk.failed at %s: %s", h, l.Str("time"), l.Str("reason"))
			}
		}
	}
}
