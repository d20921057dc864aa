//go:build slow

package desk_test

// The cluster tests that wait out real time: quorum lost and regained on
// three NATS nodes (10 s of /healthz held at 503), and a new desk's grace
// of 3 leases moved in 100 ms steps. CI runs them (-tags slow); the quick
// loop leaves them out.

import (
	"net/http"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/natstest"
)

// TestClusterNewDeskStartsAfterTheGrace: a brand-new desk on a fresh
// cluster (no host has a folder for it, the stores know nothing of it)
// still starts, once the first owner's grace (3 leases on its clock) is
// over (issue 25 fix item 5).
func TestClusterNewDeskStartsAfterTheGrace(t *testing.T) {
	t.Parallel() // waits on real time (NATS nodes, the clock moved in steps): beside the rest
	c := natstest.StartCluster(t, 3)
	a := startGraceHost(t, c, "a", "10.0.0.1:7317", map[string]string{"main": daemonDesk("offline")})
	_, moved := expectAcquiredIn(a, "main", 0)
	if moved < 3*clusterLease-clusterLease/10 {
		t.Fatalf("the new desk started after %v of the clock, within the first owner's grace of 3 leases (%v)", moved, 3*clusterLease)
	}
	if r := a.turn("main", "t1"); r.Turn != 1 {
		t.Fatalf("the new desk's first turn is turn %d, want 1", r.Turn)
	}
}

// TestClusterQuorumLossSaysSo: docs/SCALING.md, "The NATS cluster loses
// quorum": no desk can make a write durable, so every desk stops taking
// triggers and turns "and says so (storage.failed, /healthz 503)". Two
// of three nodes down: a trigger is refused (not 202), a storage.failed
// is published for the desk, and /healthz answers 503, also once the
// lease has run out on the owner's clock.
// Once quorum returns, the owner takes the desk again and goes on, and
// /healthz is 200. (The reviewer's test, extended: issue 25 fix item 4.)
func TestClusterQuorumLossSaysSo(t *testing.T) {
	t.Parallel() // waits on real time (NATS nodes, the clock moved in steps): beside the rest
	c := natstest.StartCluster(t, 3)
	a := startClusterHost(t, c, "a", "10.0.0.1:7317", map[string]string{"main": daemonDesk("offline")})
	expectAcquired(a, "main")
	a.turn("main", "t1")
	c.Nodes[1].Down()
	c.Nodes[2].Down()
	if code, body := postTrigger(t, a, "main", "t2"); code == http.StatusAccepted {
		t.Fatalf("a trigger while quorum is lost = %d %s, want it refused", code, body)
	}
	for range 4 { // past the lease: the renewals fail without quorum
		a.clk.Advance(clusterLease / 3)
	}
	for deadline := time.Now().Add(10 * time.Second); seenEvent(a, func(e event.StorageFailed) bool { return e.Desk == "main" }) == nil; {
		if time.Now().After(deadline) { // the lease's loss reaches the main loop after the clock moved
			t.Fatalf("no storage.failed for desk main within 10s of the lease running out while quorum is lost\n%s", a.log)
		}
		<-time.After(20 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		w := healthz(a)
		st, _ := statusOf(a, "main")
		if w.Code != http.StatusServiceUnavailable && st.State == desk.StateStandby {
			t.Fatalf("/healthz while quorum is lost, the desk %s = %d %s; want 503", st.State, w.Code, w.Body)
		}
		if time.Now().After(deadline) {
			break
		}
		<-time.After(50 * time.Millisecond)
	}
	c.Nodes[1].Up()
	c.Nodes[2].Up()
	for deadline := time.Now().Add(60 * time.Second); ; {
		if d, ok := a.d.Set().Get("main"); ok && d.Status().State != desk.StateStandby {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the owner did not take the desk again within 60s of quorum's return\n%s", a.log)
		}
		a.clk.Advance(clusterLease / 30)
		<-time.After(20 * time.Millisecond)
	}
	if r := a.turn("main", "t3"); r.Turn < 2 {
		t.Fatalf("t3 after quorum's return is turn %d, want the desk to go on from t1", r.Turn)
	}
	w := healthz(a)
	if w.Code != http.StatusOK {
		t.Fatalf("/healthz once quorum is back = %d %s, want 200", w.Code, w.Body)
	}
}
