package config

import (
	"os"
	"regexp"
	"time"
)

// This file reads the main file's cluster section: this host's name in a
// cluster of deskd hosts that share one NATS JetStream, and the length of
// the lease by which a host owns a desk (docs/SCALING.md).
//
//	cluster:
//	  host: a       # default: the hostname
//	  lease: 3s     # default 9s; renewed every lease/3
//	  new_desk_grace: 9s  # default 3 leases; 0s: none

// Defaults and bounds of the cluster section.
const (
	// DefaultClusterLease is cluster.lease when not set.
	DefaultClusterLease = 9 * time.Second
	// MinClusterLease is the shortest lease: a third of it is the renewal
	// period, which must leave room for a JetStream round trip.
	MinClusterLease = time.Second
	// MaxClusterLease is the longest lease: a desk whose owner dies waits
	// this long for a standby.
	MaxClusterLease = 5 * time.Minute
	// DefaultNewDeskGraceLeases is cluster.new_desk_grace when not set,
	// in leases.
	DefaultNewDeskGraceLeases = 3
	// MaxNewDeskGrace is the longest new_desk_grace.
	MaxNewDeskGrace = time.Hour
)

// Cluster is the main file's cluster section. Config.Cluster is nil when
// the section is absent: one host, local disk only. It needs the nats
// section (the leases and the replicated folders live in its JetStream),
// and is read at start only: a change takes effect after a restart.
type Cluster struct {
	// Host is this host's name in the cluster (host, default the
	// hostname): 1 to 64 letters, digits, '.', '_' or '-', different on
	// every host. It is what the other hosts report as a desk's owner.
	Host string
	// Lease is how long a host owns a desk without renewing (lease,
	// default 9s, 1s to 5m). The owner renews every Lease/3; a standby
	// takes a desk over once a full Lease has passed since the last
	// renewal it saw.
	Lease time.Duration
	// NewDeskGrace is how long a host with no folder for a desk that the
	// cluster's stores know nothing of leaves it to the hosts that may
	// have its folder (its single-host history), before it starts the
	// desk new (new_desk_grace, default 3 leases, 0 to 1h; 0: at once,
	// for a cluster whose desks all start new).
	NewDeskGrace time.Duration
}

// Renew is how often the owner of a desk renews its lease: a third of
// the lease.
func (c Cluster) Renew() time.Duration { return c.Lease / 3 }

var clusterHostRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// loadCluster reads the cluster section into c.Cluster; absent leaves it
// nil. hostname is the default of host. It runs after loadNATS: the
// section is refused without nats.
func loadCluster(root node, c *Config, hostname func() (string, error)) {
	n, st := root.mapping("cluster")
	if st != set {
		return
	}
	n.only("host", "lease", "new_desk_grace")
	c.Cluster = &Cluster{Lease: DefaultClusterLease}
	cl := c.Cluster
	if c.NATS == nil {
		if _, ok := root.get("nats"); !ok {
			root.problem("cluster", "needs the nats section: a cluster keeps its leases and the desks' folders in NATS JetStream")
		}
	}
	if h, st := n.str("host"); st == set {
		cl.Host = h
		if !clusterHostRE.MatchString(h) {
			n.problem("host", "%q: want 1 to 64 letters, digits, '.', '_' or '-'", h)
		}
	} else if st == absent {
		h, err := hostname()
		switch {
		case err != nil:
			n.problem("host", "not set, and the hostname cannot be read (%v): set host", err)
		case !clusterHostRE.MatchString(h):
			n.problem("host", "not set, and the hostname %q is not a host name deskd takes (1 to 64 letters, digits, '.', '_' or '-'): set host", h)
		default:
			cl.Host = h
		}
	}
	if d, st := n.duration("lease"); st == set {
		cl.Lease = d
		if d < MinClusterLease || d > MaxClusterLease {
			n.problem("lease", "%v is out of range: want %v to %v (default %v)", d, MinClusterLease, MaxClusterLease, DefaultClusterLease)
		}
	}
	cl.NewDeskGrace = DefaultNewDeskGraceLeases * cl.Lease
	if d, st := n.duration("new_desk_grace"); st == set {
		cl.NewDeskGrace = d
		if d < 0 || d > MaxNewDeskGrace {
			n.problem("new_desk_grace", "%v is out of range: want 0s to %v (default %d leases)", d, MaxNewDeskGrace, DefaultNewDeskGraceLeases)
		}
	}
}

// osHostname is loadCluster's default of host.
func osHostname() (string, error) { return os.Hostname() }
