package desk_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/natstest"
)

// TestClusterPauseSurvivesATakeover: an operator pauses a desk on its
// owner (the kill switch) and the owner stops (SIGTERM); the standby
// that takes the desk over must find it paused: the pause file is a
// durable write of the desk's folder like any other, replicated to the
// WAL, not written to the owner's local disk alone.
func TestClusterPauseSurvivesATakeover(t *testing.T) {
	t.Parallel() // waits on NATS and on the clock moved in steps: beside the rest
	c := natstest.StartCluster(t, 3)
	desks := map[string]string{"main": daemonDesk("offline")}
	a := startClusterHost(t, c, "a", "10.0.0.1:7317", desks)
	expectAcquired(a, "main")
	running(a, "main")
	d, ok := a.d.Set().Get("main")
	if !ok {
		t.Fatal("the owner does not run the desk")
	}
	if _, changed, err := d.Pause("ops", "halt trading"); err != nil || !changed {
		t.Fatalf("pause on the owner: %v (changed %v)", err, changed)
	}
	b := startClusterHost(t, c, "b", "10.0.0.2:7317", desks)
	waitListed(b, "main", func(st desk.Status) bool { return st.Owner != nil })
	a.stop()
	expectAcquiredIn(b, "main", 5*time.Second)
	nd, ok := b.d.Set().Get("main")
	if !ok {
		t.Fatal("the new owner does not run the desk")
	}
	if p := nd.Paused(); p == nil || p.By != "ops" || p.Reason != "halt trading" {
		t.Fatalf("the desk on the new owner: paused %+v, want the pause by ops (halt trading) that the old owner recorded", p)
	}
}
