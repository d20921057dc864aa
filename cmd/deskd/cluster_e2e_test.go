package main

// End-to-end tests of a cluster of deskd hosts (the cluster section) on
// a three-node embedded JetStream cluster, through the binary.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/natstest"
)

// clusterConfig is apiConfig's main file for host of the cluster c
// (lease 3s), in a folder of its own.
func clusterConfig(t *testing.T, c *natstest.Cluster, host string) string {
	t.Helper()
	return clusterModelConfig(t, c, host, "{provider: scripted}")
}

// clusterModelConfig is clusterConfig with model as the models entry of
// "m" (openAIModel, say).
func clusterModelConfig(t *testing.T, c *natstest.Cluster, host, model string) string {
	t.Helper()
	return clusterNATSConfig(t, c, host, model, "")
}

// clusterNATSConfig is clusterModelConfig with more keys of its nats
// section (each line indented two spaces: "  triggers: {...}\n").
func clusterNATSConfig(t *testing.T, c *natstest.Cluster, host, model, nats string) string {
	t.Helper()
	urls := make([]string, len(c.Nodes))
	for i, nd := range c.Nodes {
		urls[i] = nd.URL()
	}
	return apiConfig(t, t.TempDir(), model,
		"nats:\n  url: ["+strings.Join(urls, ", ")+"]\n"+nats+"cluster: {host: "+host+", lease: 3s, new_desk_grace: 0s}\n", "")
}

// deskRunsHere matches the line of a cluster host that runs desk main
// (in the set: it takes triggers), having won its lease.
func deskRunsHere(l stderrLine) bool {
	return l.Str("message") == "cluster: the desk runs on this host, which owns it" && l.Str("desk") == "main"
}

// waitBoth waits for a line of each kind, in either order (an event's
// line is written by the bus's subscriber, after the line the daemon
// logged next, at times), and returns the first kind's.
func waitBoth(t *testing.T, d *deskdProc, deadline time.Time, what string, match func(stderrLine) bool, what2 string, match2 func(stderrLine) bool) stderrLine {
	t.Helper()
	from := d.next
	l := d.waitFor(t, deadline, what, match)
	after := d.next
	d.next = from
	d.waitFor(t, deadline, what2, match2)
	d.next = max(d.next, after)
	return l
}

// logHandOver logs how long desk main took from the owner's SIGTERM to
// running on the standby, by their log lines' times (the figure of
// BENCHMARKS.md's cluster row; not asserted).
func logHandOver(t *testing.T, owner, standby *deskdProc) {
	t.Helper()
	at := func(d *deskdProc, match func(stderrLine) bool) time.Time {
		lines, _ := d.stderr.snapshot()
		for _, l := range lines {
			if match(l) {
				if ts, err := time.Parse(time.RFC3339Nano, l.Str("time")); err == nil {
					return ts
				}
			}
		}
		return time.Time{}
	}
	term, runs := at(owner, logMessage("signal received")), at(standby, deskRunsHere)
	if !term.IsZero() && !runs.IsZero() {
		t.Logf("SIGTERM of the owner to the desk running on the standby: %v", runs.Sub(term).Round(time.Millisecond))
	}
}

// listedDesk is desk main as d's GET /v1/desks lists it.
func listedDesk(t *testing.T, d *deskdProc) desk.Status {
	t.Helper()
	code, body := d.call(t, http.MethodGet, "/v1/desks", "", "")
	var out httpapi.DesksResponse
	if err := json.Unmarshal([]byte(body), &out); err != nil || code != http.StatusOK {
		d.fail(t, "GET /v1/desks = %d %s", code, body)
	}
	for _, st := range out.Desks {
		if st.Name == "main" {
			return st
		}
	}
	d.fail(t, "GET /v1/desks does not list desk main: %s", body)
	return desk.Status{}
}

// TestClusterE2EStandbyMisdirectsAndTakesOverOnSIGTERM: two deskd
// binaries on the same desk files and a three-node cluster. The first
// owns desk main; the second lists it standby with the same owner and
// epoch, and answers a trigger 421 naming the owner and its API address,
// where the trigger is taken. The owner's SIGTERM releases the desk, and
// the standby takes it over and answers the next trigger as the next turn
// of the same session.
func TestClusterE2EStandbyMisdirectsAndTakesOverOnSIGTERM(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(90 * time.Second)
	c := natstest.StartCluster(t, 3)
	a := startDeskd(t, "deskd-a", "run", "--config", clusterConfig(t, c, "a"))
	a.waitReady(t)
	won := waitBoth(t, a, deadline, "desk.acquired on a", isEvent("desk.acquired", "desk", "main", "host", "a"), "desk main running on a", deskRunsHere)
	if code, body := a.call(t, http.MethodPost, "/v1/desks/main/triggers?wait=30s", "", `{"id": "t1", "text": "Check the tape."}`); code != http.StatusOK {
		a.fail(t, "POST t1 to the owner = %d %s, want 200", code, body)
	}
	first := a.trigger(t, "t1")

	b := startDeskd(t, "deskd-b", "run", "--config", clusterConfig(t, c, "b"))
	b.waitReady(t)
	aAddr := strings.TrimPrefix(a.URL(t), "http://")
	b.waitFor(t, deadline, "the standby seeing a as the owner", func(l stderrLine) bool {
		return l.Str("message") == "cluster: standing by for the desk, which another host owns" && l.Str("owner") == "a"
	})
	sb, owned := listedDesk(t, b), listedDesk(t, a)
	if sb.State != desk.StateStandby || sb.Owner == nil || sb.Owner.Host != "a" || float64(sb.Owner.Epoch) != won.Num("epoch") ||
		owned.Owner == nil || owned.Owner.Host != "a" || owned.Owner.Epoch != sb.Owner.Epoch || !owned.Owner.Since.Equal(sb.Owner.Since) || sb.Owner.Addr != aAddr {
		t.Fatalf("desk main on the standby = %s, owner %+v; on the owner %+v; want standby, owner a at epoch %v, addr %s", sb.State, sb.Owner, owned.Owner, won.Num("epoch"), aAddr)
	}
	code, body := b.call(t, http.MethodPost, "/v1/desks/main/triggers", "", `{"id": "t-mis", "text": "to the standby"}`)
	var mis httpapi.MisdirectedResponse
	if err := json.Unmarshal([]byte(body), &mis); err != nil || code != http.StatusMisdirectedRequest || mis.Owner != "a" || mis.Addr != aAddr {
		t.Fatalf("POST to the standby = %d %s, want 421 naming owner a at %s", code, body, aAddr)
	}

	a.terminate(t)
	a.waitFor(t, deadline, "desk.released on a", isEvent("desk.released", "desk", "main", "host", "a"))
	took := waitBoth(t, b, deadline, "desk.acquired on b", isEvent("desk.acquired", "desk", "main", "host", "b", "previous", "a"), "desk main running on b", deskRunsHere)
	logHandOver(t, a, b)
	if code, body := b.call(t, http.MethodPost, "/v1/desks/main/triggers?wait=30s", "", `{"id": "t2", "text": "Check the tape again."}`); code != http.StatusOK {
		b.fail(t, "POST t2 to the new owner = %d %s, want 200", code, body)
	}
	next := b.trigger(t, "t2")
	if next["state"] != "answered" || next["session"] != first["session"] || next["turn"] != first["turn"].(float64)+1 {
		t.Errorf("t2 on the new owner = %v, want answered as turn %v+1 of session %v", next, first["turn"], first["session"])
	}
	if st := listedDesk(t, b); st.Owner == nil || st.Owner.Host != "b" || float64(st.Owner.Epoch) != took.Num("epoch") {
		t.Errorf("desk main on the new owner: owner %+v, want b at epoch %v", st.Owner, took.Num("epoch"))
	}
	if code, body := b.call(t, http.MethodGet, "/metrics", "", ""); code != http.StatusOK || !strings.Contains(body, "\ndeskd_desk_owned{desk=\"main\"} 1\n") ||
		!strings.Contains(body, "\ndeskd_failovers_total 1\n") {
		t.Errorf("GET /metrics on the new owner = %d, want deskd_desk_owned{desk=\"main\"} 1 and deskd_failovers_total 1", code)
	}
	b.terminate(t)
}
