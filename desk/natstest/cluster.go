package natstest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/desk/testport"
)

// Cluster is a JetStream cluster of embedded nats-servers on 127.0.0.1,
// each node with a store folder of its own, routed to every other.
type Cluster struct {
	tb testing.TB
	// Nodes are the cluster's servers; Down and Up one to lose and
	// regain a node (two of three down: quorum lost).
	Nodes []*Node
}

// Node is one server of a Cluster.
type Node struct {
	c *Cluster
	// Name is its server name, n1, n2, ...
	Name string
	// Dir is its JetStream store folder; a restart keeps it.
	Dir string
	// Port and ClusterPort are its client and route ports, free ones below
	// the ephemeral range (testport), kept across restarts.
	Port, ClusterPort int
	srv               *server.Server
	ran               bool // it has started once: the others route to it
}

// StartCluster starts a cluster of n nodes (n ≥ 1) and waits until its
// JetStream has a meta leader; it is shut down at the end of the test.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c := &Cluster{tb: tb}
	ports := testport.FreeN(tb, 2*n)
	for i := range n {
		c.Nodes = append(c.Nodes, &Node{c: c, Name: "n" + strconv.Itoa(i+1), Dir: tb.TempDir(), Port: ports[2*i], ClusterPort: ports[2*i+1]})
	}
	// Each node routes to those started before it (routes are gossiped).
	for _, nd := range c.Nodes {
		nd.start()
	}
	tb.Cleanup(func() {
		for _, nd := range c.Nodes {
			nd.Down()
		}
	})
	c.WaitReady(30 * time.Second)
	return c
}

// URLs are the client URLs of every node, comma-separated, as
// nats.Connect takes them.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.Nodes))
	for i, nd := range c.Nodes {
		urls[i] = nd.URL()
	}
	return strings.Join(urls, ",")
}

// URL is the node's client URL.
func (nd *Node) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(nd.Port) }

// start starts the node's server without waiting for the cluster. A
// node's first start takes other ports when another process took one of
// its own between testport's guess and the bind (no node routes to it
// yet); a restart keeps them.
func (nd *Node) start() {
	tb := nd.c.tb
	tb.Helper()
	for try := 1; ; try++ {
		err := nd.run()
		if err == nil {
			return
		}
		if !errors.Is(err, errPortTaken) || nd.ran || try == 3 {
			tb.Fatalf("natstest: node %s: %v", nd.Name, err)
		}
		ports := testport.FreeN(tb, 2)
		nd.Port, nd.ClusterPort = ports[0], ports[1]
	}
}

// run is start's one try.
func (nd *Node) run() error {
	var routes []string
	for _, o := range nd.c.Nodes {
		if o != nd && o.ran {
			routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(o.ClusterPort))
		}
	}
	opts := &server.Options{
		ServerName: nd.Name, Host: "127.0.0.1", Port: nd.Port, JetStream: true, StoreDir: nd.Dir, NoSigs: true,
		Cluster: server.ClusterOpts{Name: "deskd-test", Host: "127.0.0.1", Port: nd.ClusterPort},
		Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
	}
	ports := []int{nd.Port, nd.ClusterPort}
	if len(nd.c.Nodes) == 1 {
		opts.Cluster, opts.Routes, ports = server.ClusterOpts{}, nil, ports[:1]
	}
	srv, err := run(opts, ports...)
	if err != nil {
		return err
	}
	nd.srv, nd.ran = srv, true
	return nil
}

// Up starts the node again (with its store) and waits until the cluster
// is ready.
func (nd *Node) Up() {
	nd.c.tb.Helper()
	if nd.srv != nil {
		return
	}
	nd.start()
	nd.c.WaitReady(30 * time.Second)
}

// Down shuts the node down and waits until it has.
func (nd *Node) Down() { shutdown(&nd.srv) }

// WaitReady waits, up to timeout, until a node that is up is the
// JetStream meta leader, every node that is up is current with it, and
// the leader can place replicas on every node that is up (it has their
// stats: before that a stream of as many replicas is refused, "no
// suitable peers for placement").
func (c *Cluster) WaitReady(timeout time.Duration) {
	c.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		leader, current, up, placeable := false, true, 0, 0
		for _, nd := range c.Nodes {
			if nd.srv == nil {
				continue
			}
			up++
			if nd.srv.JetStreamIsLeader() {
				leader = true
				placeable = up // a lone server places on itself
				if nd.srv.JetStreamIsClustered() {
					placeable = len(nd.srv.JetStreamClusterPeers())
				}
			}
			current = current && nd.srv.JetStreamIsCurrent()
		}
		if leader && current && placeable >= up {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("natstest: the cluster has no JetStream leader within %v", timeout)
		}
		<-time.After(20 * time.Millisecond) // an election takes a few hundred ms: poll, do not spin
	}
}

// Client connects to the cluster (every node's URL, reconnecting
// forever) and returns the connection and its JetStream, both closed at
// the end of the test. The first JetStream request is retried until the
// cluster answers it.
func (c *Cluster) Client() (*nats.Conn, jetstream.JetStream) {
	c.tb.Helper()
	nc, js := connect(c.tb, c.URLs())
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return nc, js
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("natstest: the cluster's JetStream does not answer: %v", fmt.Errorf("account info: %w", err))
		}
		<-time.After(50 * time.Millisecond)
	}
}
