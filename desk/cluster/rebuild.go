package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// HeaderSnapshotSeq is the header of a snapshot object: the WAL sequence
// the snapshot covers (every record up to it is in the snapshot).
const HeaderSnapshotSeq = "Deskd-Wal-Seq"

// Rebuilt says what Rebuild did.
type Rebuilt struct {
	// Snapshot is the WAL sequence the snapshot covered; 0: no snapshot.
	Snapshot uint64
	// Through is the last WAL sequence applied (or Snapshot).
	Through uint64
	// Records is how many WAL records were applied after the snapshot.
	Records int
	// Epoch is the epoch of the last fence read; 0: none.
	Epoch uint64
}

// Rebuild makes dir, which must be missing or empty, the desk's folder as
// its WAL has it through sequence through (0: the subject's last record
// now): the latest snapshot unpacked, then every record after it applied
// in order. Each append must begin where its file ends (a gap or an
// overlap that differs stops the rebuild with an error naming the file
// and the sequence); a record of an epoch older than a fence before it is
// an error too. Every file and folder written is fsynced before it
// returns.
func Rebuild(ctx context.Context, s *Stores, desk, dir string, through uint64) (Rebuilt, error) {
	var r Rebuilt
	fail := func(err error) (Rebuilt, error) {
		return r, fmt.Errorf("cluster: rebuild desk %s into %s: %w", desk, dir, err)
	}
	if err := freshDir(dir); err != nil {
		return fail(err)
	}
	f := &folder{dir: dir, files: map[string]*openFile{}}
	defer f.closeAll()
	snap, err := s.Snapshots.Get(ctx, desk)
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound):
	case err != nil:
		return fail(fmt.Errorf("read the snapshot: %w", err))
	default:
		info, err := snap.Info()
		if err != nil {
			_ = snap.Close()
			return fail(fmt.Errorf("read the snapshot's info: %w", err))
		}
		if r.Snapshot, err = strconv.ParseUint(info.Headers.Get(HeaderSnapshotSeq), 10, 64); err != nil {
			_ = snap.Close()
			return fail(fmt.Errorf("the snapshot's %s header %q is not a sequence", HeaderSnapshotSeq, info.Headers.Get(HeaderSnapshotSeq)))
		}
		err = f.untar(snap)
		_ = snap.Close()
		if err != nil {
			return fail(fmt.Errorf("unpack the snapshot: %w", err))
		}
	}
	r.Through = r.Snapshot
	if through == 0 {
		if through, err = lastSeq(ctx, s.WAL, Subject(desk)); err != nil {
			return fail(err)
		}
	}
	if through > r.Snapshot {
		if err := f.replay(ctx, s.WAL, desk, &r, through); err != nil {
			return fail(err)
		}
	}
	if err := f.sync(); err != nil {
		return fail(err)
	}
	return r, nil
}

// freshDir makes dir if it is missing, and fails if it holds anything.
func freshDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("the folder is not empty (%s, ...): rebuild into a fresh one", ents[0].Name())
	}
	return nil
}

// folder is a desk folder being rebuilt: its open files and their sizes.
type folder struct {
	dir   string
	files map[string]*openFile
	dirs  []string // folders made, to fsync
}

type openFile struct {
	f    *os.File
	size int64
}

// open returns the file rel, created (with its folders) if missing.
func (fd *folder) open(rel string) (*openFile, error) {
	if of := fd.files[rel]; of != nil {
		return of, nil
	}
	p := filepath.Join(fd.dir, filepath.FromSlash(rel))
	if err := fd.mkdirs(filepath.Dir(p)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	of := &openFile{f: f, size: fi.Size()}
	fd.files[rel] = of
	return of, nil
}

// mkdirs makes p and its parents inside the folder, noting each for sync.
func (fd *folder) mkdirs(p string) error {
	if p == fd.dir || slices.Contains(fd.dirs, p) {
		return nil
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := fd.mkdirs(filepath.Dir(p)); err != nil {
		return err
	}
	if err := os.Mkdir(p, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fd.dirs = append(fd.dirs, p)
	return nil
}

// apply applies one WAL record.
func (fd *folder) apply(op, rel string, offset int64, data []byte) error {
	switch op {
	case OpAppend:
		of, err := fd.open(rel)
		if err != nil {
			return err
		}
		switch {
		case offset == of.size:
		case offset > of.size:
			return fmt.Errorf("%s: an append at %d, but the file ends at %d (a gap)", rel, offset, of.size)
		default: // already there (a snapshot taken as it was written): it must be the same bytes
			have := make([]byte, min(int64(len(data)), of.size-offset))
			if _, err := of.f.ReadAt(have, offset); err != nil || !bytes.Equal(have, data[:len(have)]) {
				return fmt.Errorf("%s: an append at %d, but the file ends at %d with other bytes (an overlap)", rel, offset, of.size)
			}
			data, offset = data[len(have):], offset+int64(len(have))
		}
		if _, err := of.f.WriteAt(data, offset); err != nil {
			return err
		}
		of.size = offset + int64(len(data))
	case OpReplace:
		if of := fd.files[rel]; of != nil {
			_ = of.f.Close()
			delete(fd.files, rel)
		}
		of, err := fd.open(rel)
		if err != nil {
			return err
		}
		if err := of.f.Truncate(0); err != nil {
			return err
		}
		if _, err := of.f.WriteAt(data, 0); err != nil {
			return err
		}
		of.size = int64(len(data))
	default:
		return fmt.Errorf("%s: unknown record kind %q", rel, op)
	}
	return nil
}

// replay applies the desk's WAL records after r.Snapshot through through.
func (fd *folder) replay(ctx context.Context, wal jetstream.Stream, desk string, r *Rebuilt, through uint64) error {
	cons, err := wal.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{Subject(desk)},
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: r.Snapshot + 1})
	if err != nil {
		return fmt.Errorf("read the WAL: %w", err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(2048))
	if err != nil {
		return fmt.Errorf("read the WAL: %w", err)
	}
	defer it.Stop()
	for r.Through < through {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			var pending string
			if info, ierr := cons.Info(context.WithoutCancel(ctx)); ierr == nil {
				pending = fmt.Sprintf(" (the reader has %d pending, delivered through %d)", info.NumPending, info.Delivered.Stream)
			}
			return fmt.Errorf("read the WAL after sequence %d of %d%s: %w", r.Through, through, pending, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("read the WAL after sequence %d: %w", r.Through, err)
		}
		seq := md.Sequence.Stream
		if seq > through {
			break
		}
		if err := fd.record(m.Headers(), m.Data(), r); err != nil {
			return fmt.Errorf("WAL sequence %d: %w", seq, err)
		}
		r.Through = seq
		r.Records++
	}
	return nil
}

// record checks one WAL record's epoch and applies it.
func (fd *folder) record(h nats.Header, data []byte, r *Rebuilt) error {
	epoch, err := strconv.ParseUint(h.Get(HeaderEpoch), 10, 64)
	if err != nil {
		return fmt.Errorf("its %s header %q is not an epoch", HeaderEpoch, h.Get(HeaderEpoch))
	}
	op := h.Get(HeaderOp)
	if op == OpFence {
		if epoch < r.Epoch {
			return fmt.Errorf("a fence of epoch %d after one of epoch %d", epoch, r.Epoch)
		}
		r.Epoch = epoch
		return nil
	}
	if epoch != r.Epoch && r.Epoch != 0 {
		return fmt.Errorf("a record of epoch %d after the fence of epoch %d", epoch, r.Epoch)
	}
	rel := h.Get(HeaderFile)
	if err := checkFile(rel); err != nil {
		return fmt.Errorf("file %q: %w", rel, err)
	}
	var offset int64
	if op == OpAppend {
		if offset, err = strconv.ParseInt(h.Get(HeaderOffset), 10, 64); err != nil || offset < 0 {
			return fmt.Errorf("%s: its %s header %q is not an offset", rel, HeaderOffset, h.Get(HeaderOffset))
		}
	}
	return fd.apply(op, rel, offset, data)
}

// sync fsyncs every file written, then every folder made, and the folder.
func (fd *folder) sync() error {
	for rel, of := range fd.files {
		if err := of.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", rel, err)
		}
	}
	dirs := append([]string{fd.dir}, fd.dirs...)
	for _, d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(d string) error {
	f, err := os.Open(d)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync the folder %s: %w", d, err)
	}
	return nil
}

func (fd *folder) closeAll() {
	for _, of := range fd.files {
		_ = of.f.Close()
	}
}
