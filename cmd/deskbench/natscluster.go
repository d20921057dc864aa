package main

// The cluster subcommand's JetStream: embedded nats-server nodes in the
// bench's process on 127.0.0.1, each with a store folder of its own,
// routed to one another (desk/natstest does the same for tests, which
// the bench may not import: desk/importrules_test.go).

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsCluster is a running JetStream cluster of embedded nodes.
type natsCluster struct {
	nodes []*server.Server
	urls  []string // the nodes' client URLs
}

// startNATSCluster starts n nodes with their stores below dir and waits,
// up to a minute, until the cluster's JetStream has a meta leader that
// every node is current with and that can place a replica on each.
func startNATSCluster(dir string, n int) (*natsCluster, error) {
	c := &natsCluster{}
	var routes []string // the route URLs of the nodes started: each new node routes to them all
	for i := range n {
		name := "n" + strconv.Itoa(i+1)
		opts := &server.Options{
			ServerName: name, Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(dir, name), NoSigs: true,
			Cluster: server.ClusterOpts{Name: "deskbench", Host: "127.0.0.1", Port: -1},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		}
		srv, err := server.NewServer(opts)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("nats node %s: %w", name, err)
		}
		go srv.Start()
		c.nodes = append(c.nodes, srv)
		if !srv.ReadyForConnections(10 * time.Second) {
			c.close()
			return nil, fmt.Errorf("nats node %s: not ready for connections within 10s", name)
		}
		c.urls = append(c.urls, "nats://"+srv.Addr().(*net.TCPAddr).String())
		routes = append(routes, "nats://"+srv.ClusterAddr().String())
	}
	deadline := time.Now().Add(time.Minute)
	for !c.ready() {
		if time.Now().After(deadline) {
			c.close()
			return nil, fmt.Errorf("the nats cluster of %d nodes has no JetStream leader within a minute", n)
		}
		time.Sleep(20 * time.Millisecond) // an election takes a few hundred ms: poll
	}
	return c, nil
}

// ready reports whether the cluster takes a stream of as many replicas
// as it has nodes: a node leads JetStream, every node is current with it,
// and the leader can place a replica on each (it has their stats: before
// that such a stream is refused, "no suitable peers for placement").
// natstest.Cluster.WaitReady is the tests' check; the bench imports no
// package of deskd's.
func (c *natsCluster) ready() bool {
	for _, s := range c.nodes {
		if !s.JetStreamIsCurrent() {
			return false
		}
	}
	for _, s := range c.nodes {
		if s.JetStreamIsLeader() {
			return len(s.JetStreamClusterPeers()) >= len(c.nodes)
		}
	}
	return false
}

// triggerStream is the stream of the hosts' NATS trigger ingress
// (nats.triggers), on its default subject deskd.triggers.>; the bench
// makes it with three replicas (newPublishFloor), as docs/NATS.md
// advises a cluster to.
const triggerStream = "DESKBENCH_TRIGGERS"

// configLines are the main file's nats and cluster sections of host.
func (c *natsCluster) configLines(host string, lease time.Duration) string {
	return fmt.Sprintf("nats:\n  url: [%s]\n  triggers: {stream: %s}\ncluster: {host: %s, lease: %s, new_desk_grace: 0s}\n", strings.Join(c.urls, ", "), triggerStream, host, lease)
}

// close shuts every node down.
func (c *natsCluster) close() {
	for _, s := range c.nodes {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// publishFloor is the bench's own NATS client: the JetStream half of the
// cluster's floor (a publish of a WAL-sized record to a stream of three
// replicas, acknowledged), and the publisher of NATS triggers.
type publishFloor struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// floorSubject is publishFloor's subject, in a stream of its own.
const floorSubject = "deskbench.floor"

// newPublishFloor connects to c and makes the floor's stream and the
// trigger stream.
func newPublishFloor(ctx context.Context, c *natsCluster) (*publishFloor, error) {
	nc, err := nats.Connect(strings.Join(c.urls, ","))
	if err != nil {
		return nil, fmt.Errorf("publish floor: connect: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("publish floor: %w", err)
	}
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "DESKBENCH_FLOOR", Subjects: []string{floorSubject},
		Replicas: min(3, len(c.nodes)), Storage: jetstream.FileStorage, MaxMsgs: 10000})
	if err == nil {
		_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: triggerStream, Subjects: []string{"deskd.triggers.>"},
			Replicas: min(3, len(c.nodes)), Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute})
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("publish floor: make its streams: %w", err)
	}
	return &publishFloor{nc: nc, js: js}, nil
}

// floorRecord is the size of a session record's WAL entry, about.
var floorRecord = []byte(strings.Repeat("x", 400))

// sample publishes one record and returns how long its acknowledgement
// took.
func (p *publishFloor) sample(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	if _, err := p.js.Publish(ctx, floorSubject, floorRecord); err != nil {
		return 0, fmt.Errorf("publish floor: %w", err)
	}
	return time.Since(start), nil
}

// close closes the connection.
func (p *publishFloor) close() { p.nc.Close() }
