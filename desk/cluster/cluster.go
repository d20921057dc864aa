// Package cluster is what lets a desk move between deskd hosts that
// share a NATS JetStream (docs/SCALING.md): the lease by which exactly
// one host owns a desk, the desk's write-ahead log on a stream, fenced
// by the owner's epoch, the snapshots of a desk folder, and the rebuild
// of a folder from the latest snapshot and the log after it.
//
// A desk is owned by the holder of key desk.<name> in the KV bucket
// DESKD_OWNERS. The KV revision of the write that won the lease is the
// desk's epoch; renewals keep it. The owner renews every lease/3 and
// holds the desk only until a full lease has passed since it sent its
// last successful renewal; a standby takes the desk only once a full
// lease has passed since it saw that renewal, so the owner always knows
// it has lost the desk before another host can win it.
//
// Every durable write of a desk goes to subject deskd.wal.<desk> of the
// stream DESKD_WAL, published with Nats-Expected-Last-Subject-Sequence:
// a new owner's first record is its fence, which moves the subject on,
// so every publish of an older owner is refused, and a refused writer
// stops for good (it never retries). Replicas is the file layer through
// which memory/durable's writes of a desk's folder reach its WAL: a write
// is durable only once it is fsynced locally and acknowledged by the
// stream, and a host that does not own the desk writes nothing there.
package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// The names in JetStream, fixed by the contract of issue 25.
const (
	// OwnersBucket is the KV bucket of the leases, one key per desk.
	OwnersBucket = "DESKD_OWNERS"
	// WALStream is the stream of every desk's write-ahead log.
	WALStream = "DESKD_WAL"
	// WALSubjectPrefix is followed by the desk's name: a desk's WAL
	// subject.
	WALSubjectPrefix = "deskd.wal."
	// SnapshotsBucket is the object store of the desks' snapshots, one
	// object per desk, named after it.
	SnapshotsBucket = "DESKD_SNAPSHOTS"
)

// Key is the desk's key in OwnersBucket.
func Key(desk string) string { return "desk." + desk }

// Subject is the desk's subject in WALStream.
func Subject(desk string) string { return WALSubjectPrefix + desk }

// Stores are a cluster's three JetStream stores.
type Stores struct {
	// JS is the JetStream they are in.
	JS jetstream.JetStream
	// Owners is OwnersBucket.
	Owners jetstream.KeyValue
	// WAL is WALStream.
	WAL jetstream.Stream
	// Snapshots is SnapshotsBucket.
	Snapshots jetstream.ObjectStore
}

// Open creates the stores if they do not exist (file storage, replicas
// copies each: 3 on a cluster of three nodes or more) and returns them.
// Stores that exist are used as they are.
func Open(ctx context.Context, js jetstream.JetStream, replicas int) (*Stores, error) {
	if replicas < 1 {
		return nil, fmt.Errorf("cluster: open the stores: %d replicas: want at least 1", replicas)
	}
	s := &Stores{JS: js}
	var err error
	if s.Owners, err = js.KeyValue(ctx, OwnersBucket); errors.Is(err, jetstream.ErrBucketNotFound) {
		s.Owners, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: OwnersBucket, History: 1,
			Storage: jetstream.FileStorage, Replicas: replicas, Description: "deskd: the owner of each desk (its lease)"})
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: open the KV bucket %s: %w", OwnersBucket, err)
	}
	if s.WAL, err = js.Stream(ctx, WALStream); errors.Is(err, jetstream.ErrStreamNotFound) {
		s.WAL, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: WALStream, Subjects: []string{WALSubjectPrefix + ">"},
			Storage: jetstream.FileStorage, Replicas: replicas, Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardNew,
			MaxMsgSize: MaxRecord, Description: "deskd: each desk's durable writes, in order"})
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: open the stream %s: %w", WALStream, err)
	}
	if s.Snapshots, err = js.ObjectStore(ctx, SnapshotsBucket); errors.Is(err, jetstream.ErrBucketNotFound) {
		s.Snapshots, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: SnapshotsBucket,
			Storage: jetstream.FileStorage, Replicas: replicas, Description: "deskd: the latest snapshot of each desk's folder"})
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: open the object store %s: %w", SnapshotsBucket, err)
	}
	// A KV bucket and an object store answer reads by "direct get", which
	// any replica serves, a follower that has not applied the last write
	// yet among them: a rebuild just after a seed or a compaction could
	// read the snapshot before it (and start a desk empty), a lease the
	// renewal before. deskd's reads decide takeovers, so they go to the
	// stream's leader: direct gets are turned off (also on stores made by
	// an older deskd).
	// Another host may turn them off between this host's binding and its
	// check, so the stores are bound again whatever the check found: a
	// handle bound while direct gets were on would keep asking for them.
	if err := leaderReads(ctx, js, "KV_"+OwnersBucket); err != nil {
		return nil, fmt.Errorf("cluster: open the KV bucket %s: %w", OwnersBucket, err)
	}
	if s.Owners, err = js.KeyValue(ctx, OwnersBucket); err != nil {
		return nil, fmt.Errorf("cluster: open the KV bucket %s: %w", OwnersBucket, err)
	}
	if err := leaderReads(ctx, js, "OBJ_"+SnapshotsBucket); err != nil {
		return nil, fmt.Errorf("cluster: open the object store %s: %w", SnapshotsBucket, err)
	}
	if s.Snapshots, err = js.ObjectStore(ctx, SnapshotsBucket); err != nil {
		return nil, fmt.Errorf("cluster: open the object store %s: %w", SnapshotsBucket, err)
	}
	return s, nil
}

// leaderReads turns off direct gets on the stream called name, so that
// every read of it is answered by its leader.
func leaderReads(ctx context.Context, js jetstream.JetStream, name string) error {
	st, err := js.Stream(ctx, name)
	if err != nil {
		return fmt.Errorf("read the stream %s: %w", name, err)
	}
	cfg := st.CachedInfo().Config
	if !cfg.AllowDirect {
		return nil
	}
	cfg.AllowDirect = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("turn off direct gets on the stream %s: %w", name, err)
	}
	return nil
}
