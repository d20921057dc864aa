package main

// deskd trigger and deskd status on a cluster, through two deskd
// binaries on a three-node JetStream cluster (cluster_e2e_test.go's rig).

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/natstest"
)

// clusterPair starts a three-node JetStream cluster and two deskd
// binaries on the same desk files (clusterConfig): a, which owns desk main
// and runs it, and b, which stands by for it with a as its owner.
func clusterPair(t *testing.T, deadline time.Time) (a, b *deskdProc) {
	t.Helper()
	return clusterPairOn(t, deadline, natstest.StartCluster(t, 3), "{provider: scripted}")
}

// clusterPairOn is clusterPair on the cluster c, with model as the models
// entry of "m" (clusterModelConfig; the fake model service's key in each
// process's environment, as startAPIBinary gives it).
func clusterPairOn(t *testing.T, deadline time.Time, c *natstest.Cluster, model string) (a, b *deskdProc) {
	t.Helper()
	a = startAPIBinary(t, "deskd-a", clusterModelConfig(t, c, "a", model))
	a.waitFor(t, deadline, "desk main running on a", deskRunsHere)
	b = startAPIBinary(t, "deskd-b", clusterModelConfig(t, c, "b", model))
	b.waitFor(t, deadline, "the standby seeing a as the owner", func(l stderrLine) bool {
		return l.Str("message") == "cluster: standing by for the desk, which another host owns" && l.Str("owner") == "a"
	})
	return a, b
}

// TestTriggerFollowsOwnerE2E: deskd trigger --wait sent to the standby b
// follows its 421 to the owner a, which answers it in one turn; stderr
// says which host took it; the same id again through b is a duplicate,
// no second turn. deskd status on b shows the owner (host, epoch, since)
// and that b stands by for desk main, and where it runs; on a, that a owns
// it. deskd pause through b is not sent on: it names the owner and its
// address, and the desk is not paused.
func TestTriggerFollowsOwnerE2E(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(90 * time.Second)
	a, b := clusterPair(t, deadline)
	aURL := a.URL(t)
	code, out := deskdCLI(t, "trigger", "main", "Check the tape.", "--id", "f1", "--wait", "--timeout", "1m", "--addr", b.URL(t))
	if code != 0 || !strings.Contains(out, "f1: answered") || !strings.Contains(out, "its owner is host a: sent to "+aURL) ||
		!strings.Contains(out, "trigger f1 taken by host a at "+aURL) {
		t.Fatalf("deskd trigger --wait through the standby = %d\n%s", code, out)
	}
	if got := a.trigger(t, "f1"); got["state"] != "answered" {
		t.Errorf("f1 on the owner = %v, want answered", got)
	}
	if code, out := deskdCLI(t, "trigger", "main", "Check the tape.", "--id", "f1", "--addr", b.URL(t)); code != 0 || !strings.Contains(out, "f1: already known, answered") {
		t.Errorf("f1 again through the standby = %d\n%s\nwant already known", code, out)
	}
	owned := listedDesk(t, a)
	if owned.Exchanges != 1 || owned.Owner == nil {
		t.Fatalf("desk main on the owner: %d turns, owner %+v; want 1 turn, owner a", owned.Exchanges, owned.Owner)
	}

	code, out = deskdCLI(t, "status", "--addr", b.URL(t))
	ownerCell := "a (epoch " + strconv.FormatUint(owned.Owner.Epoch, 10) + ", since " + owned.Owner.Since.UTC().Format(time.RFC3339) + ")"
	if code != 0 || !strings.Contains(out, "OWNER") || !strings.Contains(out, string(desk.StateStandby)) || !strings.Contains(out, ownerCell) ||
		!strings.Contains(out, "this host stands by for 1 desk") || !strings.Contains(out, "  main  runs on host a at "+strings.TrimPrefix(aURL, "http://")) {
		t.Errorf("deskd status on the standby = %d\n%s\nwant owner %s and desk main stood by for", code, out, ownerCell)
	}
	if code, out = deskdCLI(t, "status", "--addr", aURL); code != 0 || !strings.Contains(out, ownerCell) || strings.Contains(out, "stands by") {
		t.Errorf("deskd status on the owner = %d\n%s\nwant owner %s and no desk stood by for", code, out, ownerCell)
	}

	if code, out = deskdCLI(t, "pause", "main", "--reason", "lunch", "--addr", b.URL(t)); code != 1 ||
		!strings.Contains(out, `desk "main" runs on host a`) || !strings.Contains(out, "the owner, host a, serves at "+strings.TrimPrefix(aURL, "http://")) {
		t.Errorf("deskd pause through the standby = %d\n%s\nwant exit 1 naming the owner and its address", code, out)
	}
	if st := listedDesk(t, a); st.Paused != nil {
		t.Errorf("desk main on the owner is paused (%+v): the pause was sent on", st.Paused)
	}
}
