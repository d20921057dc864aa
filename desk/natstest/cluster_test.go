package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// TestClusterReplicatesAcrossNodes: a stream of three replicas on the
// cluster keeps what was published while one node is down, and takes
// new publishes then (two of three is a quorum).
func TestClusterReplicatesAcrossNodes(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	_, js := c.Client()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3}); err != nil {
		t.Fatalf("create a stream of 3 replicas: %v", err)
	}
	natstest.Publish(t, js, "r3.a", "", "one")
	c.Nodes[0].Down()
	natstest.Publish(t, js, "r3.a", "", "two")
	s, err := js.Stream(ctx, "R3")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 || info.Config.Replicas != 3 {
		t.Fatalf("stream state %+v, replicas %d: want 2 messages on 3 replicas", info.State, info.Config.Replicas)
	}
}
