package desk_test

// Fixes of issue 25's cluster mode, each held by a test that fails
// without it.

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/natsfeed"
	"github.com/deskd/deskd/desk/natstest"
)

// startGuardedHost is a cluster host wired as deskd run wires one with
// nats.triggers: the NATS feed's Guard outermost, around a front end that
// serves on addr.
func startGuardedHost(t *testing.T, c *natstest.Cluster, host, addr string, desks map[string]string) *daemonRun {
	t.Helper()
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	dir := daemonConfig(t, daemonMain+"nats: {url: \""+c.URLs()+"\"}\ncluster: {host: "+host+", lease: "+clusterLease.String()+"}\n", desks)
	return startDaemonOptions(t, dir, func(*config.Config) {}, func(o *desk.DaemonOptions, r *daemonRun) {
		o.NATS = nc
		serve := o.Serve
		o.Serve = func(ctx context.Context, set *desk.Set, check func() desk.ConfigCheck) (desk.Frontend, error) {
			f, err := serve(ctx, set, check)
			if err != nil {
				return f, err
			}
			feed := natsfeed.Start(natsfeed.Options{Conn: nc, Triggers: clusterTriggers, Desks: set, Bus: o.Bus, Clock: o.Clock, Log: o.Log, Lease: clusterLease})
			r.d.SetIngress(feed)
			return feed.Guard(addressed{Frontend: f, addr: addr}), nil
		}
	})
}

// TestClusterGuardedFrontendNamesItsAddr: with nats.triggers the front end
// deskd run hands the daemon is the feed's Guard around the API; the
// owner's lease still names the API's address, so the standby's 421 says
// where the owner serves (issue 25 fix item 1).
func TestClusterGuardedFrontendNamesItsAddr(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	desks := map[string]string{"main": daemonDesk("offline")}
	a := startGuardedHost(t, c, "a", "10.0.0.1:7317", desks)
	expectAcquired(a, "main")
	b := startGuardedHost(t, c, "b", "10.0.0.2:7317", desks)
	waitListed(b, "main", func(st desk.Status) bool { return st.Owner != nil })
	code, body := postTrigger(t, b, "main", "t-misdirected")
	var mis httpapi.MisdirectedResponse
	if err := json.Unmarshal([]byte(body), &mis); err != nil || code != http.StatusMisdirectedRequest || mis.Owner != "a" || mis.Addr != "10.0.0.1:7317" {
		t.Fatalf("a trigger to the standby = %d %s, want 421 naming owner a at 10.0.0.1:7317", code, body)
	}
}
