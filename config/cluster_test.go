package config_test

import (
	"os"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
)

// clusterNATS is a nats section for the cluster tests.
const clusterNATS = "nats:\n  url: nats://127.0.0.1:4222\n"

// TestClusterDefaults: without a cluster section Cluster is nil (one
// host); with an empty one, host is the hostname and the lease 9s,
// renewed every 3s; set values are kept.
func TestClusterDefaults(t *testing.T) {
	files := map[string]string{"desks.d/main.yaml": baseDesk}
	if c := mustLoad(t, setup(t, baseMain+clusterNATS, files)); c.Cluster != nil {
		t.Fatalf("no cluster section: Cluster = %+v, want nil", c.Cluster)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Skipf("no hostname here: %v", err)
	}
	c := mustLoad(t, setup(t, baseMain+clusterNATS+"cluster: {}\n", files))
	want := config.Cluster{Host: host, Lease: 9 * time.Second, NewDeskGrace: 27 * time.Second}
	if c.Cluster == nil || *c.Cluster != want || c.Cluster.Renew() != 3*time.Second {
		t.Fatalf("cluster: {} = %+v, want %+v renewed every 3s", c.Cluster, want)
	}
	c = mustLoad(t, setup(t, baseMain+clusterNATS+"cluster:\n  host: a\n  lease: 3s\n", files))
	want = config.Cluster{Host: "a", Lease: 3 * time.Second, NewDeskGrace: 9 * time.Second}
	if c.Cluster == nil || *c.Cluster != want || c.Cluster.Renew() != time.Second {
		t.Fatalf("cluster {host: a, lease: 3s} = %+v, want %+v renewed every 1s", c.Cluster, want)
	}
	c = mustLoad(t, setup(t, baseMain+clusterNATS+"cluster: {host: a, new_desk_grace: 0s}\n", files))
	want = config.Cluster{Host: "a", Lease: 9 * time.Second}
	if c.Cluster == nil || *c.Cluster != want {
		t.Fatalf("cluster {host: a, new_desk_grace: 0s} = %+v, want %+v", c.Cluster, want)
	}
}

// TestClusterProblems: each bad setting is one problem of the main file
// naming the field and the reason; a cluster without nats is refused.
func TestClusterProblems(t *testing.T) {
	tests := []struct {
		name, main, field, reason string
	}{
		{"without nats", "cluster: {host: a}\n", "cluster", "needs the nats section"},
		{"bad host", clusterNATS + "cluster: {host: \"a b\"}\n", "cluster.host", "letters, digits"},
		{"empty host", clusterNATS + "cluster: {host: \"\"}\n", "cluster.host", "letters, digits"},
		{"short lease", clusterNATS + "cluster: {host: a, lease: 500ms}\n", "cluster.lease", "out of range"},
		{"long lease", clusterNATS + "cluster: {host: a, lease: 1h}\n", "cluster.lease", "out of range"},
		{"bare number", clusterNATS + "cluster: {host: a, lease: 3}\n", "cluster.lease", "give a unit"},
		{"negative grace", clusterNATS + "cluster: {host: a, new_desk_grace: -1s}\n", "cluster.new_desk_grace", "out of range"},
		{"long grace", clusterNATS + "cluster: {host: a, new_desk_grace: 2h}\n", "cluster.new_desk_grace", "out of range"},
		{"unknown key", clusterNATS + "cluster: {host: a, hosts: [b]}\n", "cluster.hosts", "unknown key"},
		{"not a mapping", clusterNATS + "cluster: a\n", "cluster", "mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load(setup(t, baseMain+tt.main, map[string]string{"desks.d/main.yaml": baseDesk}))
			oneProblem(t, err, want{"deskd.yaml", tt.field, tt.reason})
		})
	}
}

// TestClusterIsPinned: a change of the cluster section takes effect
// after a restart.
func TestClusterIsPinned(t *testing.T) {
	wantRestart(t, "cluster", baseMain+clusterNATS+"cluster: {host: a}\n", baseMain+clusterNATS+"cluster: {host: b}\n")
}

// wantRestart checks that Diff reports field as changed from main file a
// to main file b, taking effect after a restart.
func wantRestart(t *testing.T, field, a, b string) {
	t.Helper()
	files := map[string]string{"desks.d/main.yaml": baseDesk}
	ca, cb := mustLoad(t, setup(t, a, files)), mustLoad(t, setup(t, b, files))
	var found bool
	for _, c := range config.Diff(ca, cb) {
		if c.Field == field {
			found = true
			if !c.Restart {
				t.Errorf("change %q: Restart false, want true", c)
			}
		}
	}
	if !found {
		t.Errorf("Diff: no %s change in %v", field, config.Diff(ca, cb))
	}
}
