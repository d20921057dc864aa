package desk_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/cluster"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/natsfeed"
	"github.com/deskd/deskd/desk/natstest"
	"github.com/deskd/deskd/router/routertest"
)

// clusterLease is the lease of the cluster tests' hosts: the fake clocks
// decide when it runs out.
const clusterLease = 3 * time.Second

// startClusterHost runs a daemon of host on the desk files desks, in a
// state folder of its own, as one host of the NATS cluster c; its front
// end says it serves on addr.
func startClusterHost(t *testing.T, c *natstest.Cluster, host, addr string, desks map[string]string) *daemonRun {
	t.Helper()
	return startClusterHostWith(t, c, host, addr, desks, false)
}

// clusterTriggers is the NATS trigger ingress of the cluster tests' hosts
// that have one.
var clusterTriggers = config.NATSTriggers{Stream: "MARKET", Subject: "deskd.triggers.>", Consumer: "deskd"}

// startClusterHostWith is startClusterHost, with the NATS trigger
// ingress (clusterTriggers, in cluster mode) as deskd run wires it when
// ingress is set.
func startClusterHostWith(t *testing.T, c *natstest.Cluster, host, addr string, desks map[string]string, ingress bool) *daemonRun {
	t.Helper()
	return startClusterHostMain(t, c.URLs(), host, addr, desks, "", ingress)
}

// startClusterHostMain is startClusterHostWith on the servers urls, models
// (lines of the models section) added to daemonMain's; its connection
// keeps trying while no server answers.
func startClusterHostMain(t *testing.T, urls, host, addr string, desks map[string]string, models string, ingress bool) *daemonRun {
	t.Helper()
	return startClusterHostGrace(t, urls, host, addr, desks, models, noGrace, ingress)
}

// noGrace is the cluster section's setting of a test host that starts a
// desk new at once (cluster.new_desk_grace 0s): the tests of the grace
// itself use startGraceHost.
const noGrace = ", new_desk_grace: 0s"

// startGraceHost is a cluster host on c with the default new_desk_grace
// (3 leases).
func startGraceHost(t *testing.T, c *natstest.Cluster, host, addr string, desks map[string]string) *daemonRun {
	t.Helper()
	return startClusterHostGrace(t, c.URLs(), host, addr, desks, "", "", false)
}

// startClusterHostGrace is startClusterHostMain, grace added to the
// cluster section's settings (noGrace, or "" for the default).
func startClusterHostGrace(t *testing.T, urls, host, addr string, desks map[string]string, models, grace string, ingress bool) *daemonRun {
	t.Helper()
	return startHostIn(t, daemonConfig(t, clusterMain(urls, host, models, grace), desks), urls, addr, ingress, nil)
}

// clusterMain is the main config of host as a cluster host on the NATS
// servers urls: daemonMain's, models (lines of the models section) added,
// grace added to the cluster section's settings (noGrace, or "" for the
// default).
func clusterMain(urls, host, models, grace string) string {
	return daemonMain + models + "nats: {url: \"" + urls + "\"}\ncluster: {host: " + host + ", lease: " + clusterLease.String() + grace + "}\n"
}

// startHostIn runs a daemon on the config folder dir (a cluster host's,
// see clusterMain) connected to the NATS servers urls, the connection
// trying again while no server answers; its front end says it serves on
// addr. With ingress it takes triggers from NATS (clusterTriggers) as
// deskd run wires it: the feed's Guard outermost, around the front end.
// opt, if not nil, changes the daemon's options.
func startHostIn(t *testing.T, dir, urls, addr string, ingress bool, opt func(*desk.DaemonOptions)) *daemonRun {
	t.Helper()
	nc, err := nats.Connect(urls, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return startDaemonOptions(t, dir, func(*config.Config) {}, func(o *desk.DaemonOptions, r *daemonRun) {
		o.NATS = nc
		if opt != nil {
			opt(o)
		}
		serve := o.Serve
		o.Serve = func(ctx context.Context, set *desk.Set, check func() desk.ConfigCheck) (desk.Frontend, error) {
			f, err := serve(ctx, set, check)
			if err != nil || !ingress {
				return addressed{Frontend: f, addr: addr}, err
			}
			feed := natsfeed.Start(natsfeed.Options{Conn: nc, Triggers: clusterTriggers, Desks: set, Bus: o.Bus, Clock: o.Clock, Log: o.Log, Lease: clusterLease})
			r.d.SetIngress(feed)
			return feed.Guard(addressed{Frontend: f, addr: addr}), nil
		}
	})
}

// addressed is a front end that says it serves on addr.
type addressed struct {
	desk.Frontend
	addr string
}

func (a addressed) Addrs() []string { return []string{"/run/deskd.sock", a.addr} }

// statusOf returns the status of desk name as r's set lists it.
func statusOf(r *daemonRun, name string) (desk.Status, bool) {
	for _, st := range r.d.Set().Statuses() {
		if st.Name == name {
			return st, true
		}
	}
	return desk.Status{}, false
}

// waitListed waits until ok accepts the status of desk name on r, and
// returns it; the test fails after 10s.
func waitListed(r *daemonRun, name string, ok func(desk.Status) bool) desk.Status {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		st, found := statusOf(r, name)
		if found && ok(st) {
			return st
		}
		select {
		case <-deadline:
			r.t.Fatalf("the status of desk %s is %+v (found %v), not what was wanted within 10s\n%s", name, st, found, r.log)
		case <-tick.C:
		}
	}
}

// postTrigger posts a trigger to desk name through an API on r's set,
// and returns the status and the body.
func postTrigger(t *testing.T, r *daemonRun, name, id string) (int, string) {
	t.Helper()
	api := httpapi.New(httpapi.Options{Desks: r.d.Set()})
	req := httptest.NewRequest(http.MethodPost, "/v1/desks/"+name+"/triggers", strings.NewReader(`{"id":"`+id+`","text":"Check the tape.","kind":"manual"}`))
	req.Host = "127.0.0.1"
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

// TestClusterOneOwnerStandbyAndHandOver: two hosts on the same desk files
// and a 3-node cluster: one owns the desk, the other lists it standby
// with the same owner and epoch and answers a trigger 421 naming the
// owner; the owner's SIGTERM releases the lease and the standby takes the
// desk at once, and goes on with it: the same session, the next turn.
func TestClusterOneOwnerStandbyAndHandOver(t *testing.T) {
	t.Parallel() // waits on NATS and on the clock moved in steps: beside the rest
	c := natstest.StartCluster(t, 3)
	desks := map[string]string{"main": daemonDesk("offline")}
	a := startClusterHost(t, c, "a", "10.0.0.1:7317", desks)
	won := expectAcquired(a, "main")
	if won.Host != "a" || won.Epoch == 0 || won.Previous != "" {
		t.Fatalf("desk.acquired = %+v, want host a, an epoch, no previous owner", won)
	}
	owned := waitListed(a, "main", func(st desk.Status) bool { return st.State != desk.StateStandby && st.Owner != nil })
	if owned.Owner.Host != "a" || owned.Owner.Epoch != won.Epoch {
		t.Fatalf("the owner's status owner = %+v, want host a, epoch %d", owned.Owner, won.Epoch)
	}
	first := a.turn("main", "t1")
	// The owner takes the desk's inbox files (its spool follows the desks
	// it runs).
	writeConfigFile(t, filepath.Join(a.d.Config().StateDir, "inbox", "main"), "in-1.json", `{"text": "from the inbox", "id": "in-1"}`)
	first = expectEvent(a, func(e event.TurnCompleted) bool { return e.Trigger == "in-1" })

	b := startClusterHost(t, c, "b", "10.0.0.2:7317", desks)
	sb := waitListed(b, "main", func(st desk.Status) bool { return st.Owner != nil })
	if sb.State != desk.StateStandby || sb.Owner.Host != "a" || sb.Owner.Epoch != won.Epoch || sb.Owner.Addr != "10.0.0.1:7317" ||
		!sb.Owner.Since.Equal(owned.Owner.Since) {
		t.Fatalf("the standby's status = %+v, owner %+v; want standby, owner a at epoch %d since %v at 10.0.0.1:7317", sb, sb.Owner, won.Epoch, owned.Owner.Since)
	}
	if _, ok := b.d.Set().Get("main"); ok {
		t.Fatal("the standby runs the desk too")
	}
	code, body := postTrigger(t, b, "main", "t-misdirected")
	var mis httpapi.MisdirectedResponse
	if err := json.Unmarshal([]byte(body), &mis); err != nil || code != http.StatusMisdirectedRequest || mis.Owner != "a" || mis.Addr != "10.0.0.1:7317" || mis.Error == "" {
		t.Fatalf("a trigger to the standby = %d %s, want 421 naming owner a at 10.0.0.1:7317", code, body)
	}

	a.stop()
	released := seenEvent(a, func(e event.DeskReleased) bool { return e.Desk == "main" })
	if released == nil {
		t.Fatalf("no desk.released before the owner stopped\n%s", a.log)
	}
	if released.Host != "a" || released.Epoch != won.Epoch {
		t.Fatalf("desk.released = %+v, want host a, epoch %d", released, won.Epoch)
	}
	// The standby takes the desk at once: without waiting out a lease on
	// its clock (a take of the lease that failed is tried again at a third
	// of it).
	took, moved := expectAcquiredIn(b, "main", 15*time.Second) // 15s of real time: a loaded machine's NATS round trips
	if moved >= clusterLease {
		t.Errorf("the standby took the desk once its clock had moved %v, want less than the lease (%v)", moved, clusterLease)
	}
	if took.Host != "b" || took.Previous != "a" || took.Epoch <= won.Epoch {
		t.Fatalf("the standby's desk.acquired = %+v, want host b, previous a, an epoch after %d", took, won.Epoch)
	}
	st := running(b, "main")
	next := b.turn("main", "t2")
	if next.Session != first.Session || next.Turn != first.Turn+1 {
		t.Errorf("the new owner's turn is turn %d of session %s, want turn %d of session %s (the desk goes on)", next.Turn, next.Session, first.Turn+1, first.Session)
	}
	if st.Owner == nil || st.Owner.Host != "b" || st.Owner.Epoch != took.Epoch {
		t.Errorf("the new owner's status owner = %+v, want b at epoch %d", st.Owner, took.Epoch)
	}
}

// TestClusterNATSTriggersGoToTheOwner: with the NATS trigger ingress,
// the owner binds the desk's consumer and takes its triggers; the standby
// takes none; after the owner's SIGTERM the new owner binds it and takes
// the next one, in the same session.
func TestClusterNATSTriggersGoToTheOwner(t *testing.T) {
	t.Parallel() // waits on NATS and on the clock moved in steps: beside the rest
	c := natstest.StartCluster(t, 3)
	_, js := c.Client()
	desks := map[string]string{"main": daemonDesk("offline")}
	subject := natsfeed.DeskSubject(clusterTriggers, "main")
	a := startClusterHostWith(t, c, "a", "10.0.0.1:7317", desks, true)
	expectAcquired(a, "main")
	b := startClusterHostWith(t, c, "b", "10.0.0.2:7317", desks, true)
	waitListed(b, "main", func(st desk.Status) bool { return st.Owner != nil })
	natstest.Publish(t, js, subject, "n1", `{"text":"Check the tape."}`)
	// A consumer's set-up that a busy cluster refused is tried again after
	// a wait on deskd's clock: the clock moves while the turn is waited for.
	first, _ := expectMoving(a, func(e event.TurnCompleted) bool { return e.Trigger == "n1" }, time.Second)

	a.stop()
	expectAcquiredIn(b, "main", 5*time.Second)
	natstest.Publish(t, js, subject, "n2", `{"text":"Check the tape again."}`)
	next, _ := expectMoving(b, func(e event.TurnCompleted) bool { return e.Trigger == "n2" }, time.Second)
	if next.Session != first.Session || next.Turn != first.Turn+1 {
		t.Errorf("n2 is turn %d of session %s on the new owner, want turn %d of session %s", next.Turn, next.Session, first.Turn+1, first.Session)
	}
	for _, r := range []struct {
		run  *daemonRun
		not  string
		host string
	}{{a, "n2", "a"}, {b, "n1", "b"}} {
		if q := seenEvent(r.run, func(e event.TriggerQueued) bool { return e.Trigger == r.not }); q != nil {
			t.Errorf("host %s queued %s, which came while it did not own the desk", r.host, r.not)
		}
	}
}

// TestClusterWaitsForNATS: a host that starts while its NATS server is
// away is ready, lists its desks standby and runs none, trying to open the
// stores again every lease/3; once the server is back it opens them and
// takes the desk.
func TestClusterWaitsForNATS(t *testing.T) {
	t.Parallel() // waits on NATS and on the clock moved in steps: beside the rest
	srv := natstest.Start(t)
	srv.Down()
	a := startClusterHostMain(t, srv.URL(), "a", "", map[string]string{"main": daemonDesk("offline")}, "", false)
	if st, ok := statusOf(a, "main"); !ok || st.State != desk.StateStandby || st.Owner != nil {
		t.Fatalf("desk main with NATS away = %+v (listed %v), want standby, no owner", st, ok)
	}
	a.clk.Advance(2 * clusterLease) // tries again, in vain
	if _, ok := a.d.Set().Get("main"); ok {
		t.Fatal("desk main runs with NATS away")
	}
	srv.Up()
	won := expectAcquired(a, "main")
	if won.Host != "a" || won.Epoch == 0 {
		t.Errorf("desk.acquired once NATS is back = %+v, want host a, an epoch", won)
	}
	a.turn("main", "t1")
}

// TestClusterReloadContendsAndLetsGo: a desk file added on a cluster host
// is contended for and run once won; one removed stops and its lease is
// released, so that no host stands by for it any longer.
func TestClusterReloadContendsAndLetsGo(t *testing.T) {
	t.Parallel() // waits on NATS and on the clock moved in steps: beside the rest
	c := natstest.StartCluster(t, 3)
	a := startClusterHost(t, c, "a", "", map[string]string{"main": daemonDesk("offline")})
	won := expectAcquired(a, "main")
	writeConfigFile(t, a.dir, filepath.Join("desks.d", "fx.yaml"), daemonDesk("offline"))
	a.signal(syscall.SIGHUP)
	expectAcquired(a, "fx")
	a.turn("fx", "f1")

	if err := os.Remove(filepath.Join(a.dir, "desks.d", "main.yaml")); err != nil {
		t.Fatal(err)
	}
	a.signal(syscall.SIGHUP)
	rel := expectEvent(a, func(e event.DeskReleased) bool { return e.Desk == "main" })
	if rel.Host != "a" || rel.Epoch != won.Epoch {
		t.Errorf("desk.released of the removed desk = %+v, want host a, epoch %d", rel, won.Epoch)
	}
	if st, ok := statusOf(a, "main"); ok {
		t.Errorf("the removed desk is still listed: %+v", st)
	}
	_, js := c.Client()
	kv, err := js.KeyValue(t.Context(), cluster.OwnersBucket)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(t.Context(), cluster.Key("main")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("the removed desk's lease key = %v, %v; want it deleted", e, err)
	}
}

// TestClusterLostLeaseStopsTheDesk: another host's write over the desk's
// lease makes the owner's next renewal fail: the desk stops at once,
// writes nothing more to its WAL, is standby again, and is taken back
// once a full lease has passed without the other host renewing.
func TestClusterLostLeaseStopsTheDesk(t *testing.T) {
	t.Parallel() // waits on real time (the clock moved in steps): beside the rest
	c := natstest.StartCluster(t, 3)
	a := startClusterHost(t, c, "a", "10.0.0.1:7317", map[string]string{"main": daemonDesk("offline")})
	won := expectAcquired(a, "main")
	a.turn("main", "t1")

	_, js := c.Client()
	wal, err := js.Stream(t.Context(), cluster.WALStream)
	if err != nil {
		t.Fatal(err)
	}
	takeOver(t, js, "main")
	before := lastWALSeq(t, wal)
	a.clk.Advance(clusterLease / 3) // the renewal is refused
	lost := expectEvent(a, func(e event.DeskLost) bool { return e.Desk == "main" })
	if lost.Host != "a" || lost.Epoch != won.Epoch || lost.Reason == "" {
		t.Fatalf("desk.lost = %+v, want host a, epoch %d, a reason", lost, won.Epoch)
	}
	expectEvent(a, func(e event.DeskStopped) bool { return e.Desk == "main" })
	if _, ok := a.d.Set().Get("main"); ok {
		t.Fatal("the desk still runs after its lease was lost")
	}
	if got := lastWALSeq(t, wal); got != before {
		t.Errorf("the WAL moved from sequence %d to %d after the lease was lost", before, got)
	}
	code, _ := postTrigger(t, a, "main", "t2")
	if code != http.StatusMisdirectedRequest {
		t.Errorf("a trigger after the loss = %d, want 421", code)
	}
	// x never renews: a lease later, a takes the desk back at a new epoch.
	again := expectAcquired(a, "main")
	if again.Epoch <= won.Epoch || again.Previous != "x" {
		t.Errorf("desk.acquired again = %+v, want an epoch after %d, previous x", again, won.Epoch)
	}
}

// expectAcquired waits until r acquires desk name and the desk has
// started, moving r's clock on by a thirtieth of the lease every 25ms (a
// lease to wait out, a take of the lease to try again: a lease of the
// clock passes in 0.75s, ten renewal periods of NATS round trips of a
// few ms each), and returns the desk.acquired; the test fails after 30s.
func expectAcquired(r *daemonRun, name string) event.DeskAcquired {
	r.t.Helper()
	won, _ := expectAcquiredIn(r, name, 0)
	return won
}

// expectAcquiredIn is expectAcquired, moving r's clock only once hold has
// passed, and how far it moved r's clock. Its deadline is 30s: on a
// loaded machine, a new cluster's first writes may take seconds.
func expectAcquiredIn(r *daemonRun, name string, hold time.Duration) (event.DeskAcquired, time.Duration) {
	r.t.Helper()
	won, moved := expectMoving(r, func(e event.DeskAcquired) bool { return e.Desk == name }, hold)
	expectEvent(r, func(e event.DeskStarted) bool { return e.Desk == name })
	running(r, name)
	return won, moved
}

// expectMoving waits for r's event E that ok accepts, as expectEvent
// does, moving r's clock on by a thirtieth of the lease every 25ms once
// hold has passed (a retry that waits on deskd's clock, a lease to wait
// out); it returns the event and how far the clock moved. The test fails
// after 30s.
func expectMoving[E event.Event](r *daemonRun, ok func(E) bool, hold time.Duration) (E, time.Duration) {
	r.t.Helper()
	var moved time.Duration
	moving, held := hold <= 0, time.After(hold)
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case ev := <-r.events:
			r.seen = append(r.seen, ev)
			if x, is := ev.(E); is && ok(x) {
				return x, moved
			}
		case <-held:
			moving = true
		case <-tick.C:
			if moving {
				r.clk.Advance(clusterLease / 30)
				moved += clusterLease / 30
			}
		case <-deadline:
			var zero E
			r.t.Fatalf("no %s event within 30s (the clock moved %v)\n%s", zero.Topic(), moved, r.log)
			return zero, moved
		}
	}
}

// running waits until r's set has desk name running (it is put in the
// set just after desk.started).
func running(r *daemonRun, name string) desk.Status {
	r.t.Helper()
	return waitListed(r, name, func(desk.Status) bool {
		_, ok := r.d.Set().Get(name)
		return ok
	})
}

// TestClusterLeaseLostDuringATurnDropsTheReply: the lease lost while the
// model's answer is awaited: the desk stops at once (the turn cut short),
// the reply is never recorded, the error names the trigger, and neither
// the WAL nor the desk's local folder is written from the loss on.
func TestClusterLeaseLostDuringATurnDropsTheReply(t *testing.T) {
	t.Parallel() // waits on NATS and on the clock moved in steps: beside the rest
	c := natstest.StartCluster(t, 3)
	release := make(chan struct{})
	api := routertest.New(t, routertest.ChatCompletions, routertest.Options{Answer: func(routertest.Request) routertest.Reply {
		return routertest.Reply{Text: "a reply the new owner never sees", Hold: release}
	}})
	defer close(release)
	models := "  fast: {provider: openai, base_url: " + api.URL() + "/v1, model: gpt-test, api_key_env: " + clusterKeyEnv + "}\n"
	a := startClusterHostMain(t, c.URLs(), "a", "10.0.0.1:7317", map[string]string{"main": daemonDesk("fast")}, models, false)
	won := expectAcquired(a, "main")
	a.submit("main", "t1", "Check the tape.")
	expectEvent(a, func(e event.TurnStarted) bool { return e.Trigger == "t1" })
	api.Await(t, func(routertest.Request) bool { return true })

	_, js := c.Client()
	lost := loseMain(t, js, a)
	if e := seenEvent(a, func(e event.TurnCompleted) bool { return e.Trigger == "t1" }); e != nil {
		t.Errorf("the turn of t1 completed after the lease was lost: %+v", e)
	}
	lost.expectNothingWritten(t, "the lease was lost")
	if !strings.Contains(a.log.String(), `"trigger":"t1"`) || !a.log.hasMessage("cluster: the desk's lease is lost during a turn: its reply is dropped; the new owner shows the trigger interrupted") {
		t.Errorf("no error naming trigger t1's dropped reply in the log\n%s", a.log)
	}

	// x never renews: host b takes the desk a lease later, rebuilds it
	// from the WAL and shows t1 interrupted (its message recorded, no
	// reply), for an operator to decide; it does not run it again.
	b := startClusterHostMain(t, c.URLs(), "b", "10.0.0.2:7317", map[string]string{"main": daemonDesk("fast")}, models, false)
	took := expectAcquired(b, "main")
	if took.Previous != "x" || took.Epoch <= won.Epoch {
		t.Errorf("b's desk.acquired = %+v, want previous x, an epoch after %d", took, won.Epoch)
	}
	st := running(b, "main")
	if len(st.Interrupted) != 1 || st.Interrupted[0].ID != "t1" {
		t.Errorf("the new owner's interrupted triggers = %+v, want t1", st.Interrupted)
	}
	if n := len(api.Requests()); n != 1 {
		t.Errorf("the model had %d requests, want 1: t1 is not run again", n)
	}
}

// takeOver writes another host's lease (x's) over the desk's, as a host
// that took it over would: the owner's next renewal is refused.
// loseMain has another host take desk main's lease from its owner a
// (takeOver), moves a's clock to its refused renewal and waits for the
// desk lost and stopped there; it returns what a had written when the
// lease was taken. The lease lost is a's latest: on a slow machine a
// renewal may come too late and a win the desk again at a new epoch
// before the take-over.
func loseMain(t *testing.T, js jetstream.JetStream, a *daemonRun) lostLease {
	t.Helper()
	var epoch uint64
	for _, e := range seenEvents[event.DeskAcquired](a) {
		if e.Desk == "main" {
			epoch = e.Epoch
		}
	}
	if epoch == 0 {
		t.Fatal("loseMain: host a has not acquired desk main")
	}
	wal, err := js.Stream(t.Context(), cluster.WALStream)
	if err != nil {
		t.Fatal(err)
	}
	takeOver(t, js, "main")
	lost := lostLease{a: a, wal: wal, seq: lastWALSeq(t, wal), folder: treeOf(t, a.d.Config().StateDir+"/desks/main")}
	a.clk.Advance(clusterLease / 3) // the renewal is refused
	expectEvent(a, func(e event.DeskLost) bool { return e.Desk == "main" && e.Epoch == epoch })
	expectEvent(a, func(e event.DeskStopped) bool { return e.Desk == "main" })
	return lost
}

// lostLease is what the old owner a of desk main had written when its
// lease was taken (loseMain): the WAL's last sequence and a's desk folder.
type lostLease struct {
	a      *daemonRun
	wal    jetstream.Stream
	seq    uint64
	folder map[string][32]byte
}

// expectNothingWritten fails t if the WAL or a's desk folder has changed
// since the lease was taken; since says what came after it, for the
// message ("the lease was lost").
func (l lostLease) expectNothingWritten(t *testing.T, since string) {
	t.Helper()
	if got := lastWALSeq(t, l.wal); got != l.seq {
		t.Errorf("the WAL moved from sequence %d to %d after %s", l.seq, got, since)
	}
	if got := treeOf(t, l.a.d.Config().StateDir+"/desks/main"); !maps.Equal(got, l.folder) {
		t.Errorf("the desk's folder changed after %s:\nbefore %v\nafter  %v", since, l.folder, got)
	}
}

func takeOver(t *testing.T, js jetstream.JetStream, name string) {
	t.Helper()
	kv, err := js.KeyValue(t.Context(), cluster.OwnersBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(t.Context(), cluster.Key(name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(t.Context(), cluster.Key(name), []byte(`{"host":"x","since":"2026-03-02T10:00:00Z","renewed":"2026-03-02T10:00:00Z"}`), e.Revision()); err != nil {
		t.Fatal(err)
	}
}

// treeOf is every file below dir with its content's hash.
func treeOf(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = sha256.Sum256(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lastWALSeq is the stream's last sequence.
func lastWALSeq(t *testing.T, wal jetstream.Stream) uint64 {
	t.Helper()
	info, err := wal.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// seenEvent returns the first event of type E that ok accepts among those
// r has had, read so far or still queued (r stopped); nil if none.
func seenEvent[E event.Event](r *daemonRun, ok func(E) bool) *E {
	for {
		select {
		case e := <-r.events:
			r.seen = append(r.seen, e)
			continue
		default:
		}
		break
	}
	for _, e := range r.seen {
		if x, is := e.(E); is && ok(x) {
			return &x
		}
	}
	return nil
}
