package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/deskd/deskd/memory/durable"
)

// untar unpacks a snapshot into the folder.
func (fd *folder) untar(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := checkFile(h.Name); err != nil {
			return fmt.Errorf("entry %q: %w", h.Name, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := fd.mkdirs(filepath.Join(fd.dir, filepath.FromSlash(h.Name))); err != nil {
				return err
			}
		case tar.TypeReg:
			data, err := io.ReadAll(tr)
			if err != nil {
				return fmt.Errorf("entry %s: %w", h.Name, err)
			}
			if err := fd.apply(OpReplace, h.Name, "", 0, data); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %s: type %q is neither a file nor a folder", h.Name, h.Typeflag)
		}
	}
}

// tarDir packs dir's files and folders (sorted, paths relative to dir),
// but for temporary files (durable.IsTemp), which nothing replicates.
func tarDir(dir string) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		if !d.IsDir() && durable.IsTemp(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: filepath.ToSlash(rel), Mode: int64(fi.Mode().Perm())})
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Mode: int64(fi.Mode().Perm()), Size: int64(len(data))}); err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		default:
			return fmt.Errorf("%s is neither a file nor a folder", p)
		}
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Compact writes a new snapshot of the desk: its folder rebuilt, in
// scratch (a fresh folder of the caller's, removed after), from the
// latest snapshot and the WAL through its last record now, packed and
// stored in SnapshotsBucket with the sequence it covers; then it purges
// the desk's WAL records before that sequence (the last covered record
// stays, so that the owner's next expected sequence still holds). Any
// host may compact: it reads only the stores, never a live folder.
func Compact(ctx context.Context, s *Stores, desk, scratch string) (Rebuilt, error) {
	defer os.RemoveAll(scratch)
	r, err := Rebuild(ctx, s, desk, scratch, 0)
	if err != nil {
		return r, fmt.Errorf("cluster: compact desk %s: %w", desk, err)
	}
	if r.Through == r.Snapshot {
		return r, nil // nothing new
	}
	data, err := tarDir(scratch)
	if err != nil {
		return r, fmt.Errorf("cluster: compact desk %s: pack the folder: %w", desk, err)
	}
	meta := jetstream.ObjectMeta{Name: desk, Headers: nats.Header{HeaderSnapshotSeq: []string{strconv.FormatUint(r.Through, 10)}}}
	if _, err := s.Snapshots.Put(ctx, meta, bytes.NewReader(data)); err != nil {
		return r, fmt.Errorf("cluster: compact desk %s: store the snapshot: %w", desk, err)
	}
	if err := s.WAL.Purge(ctx, jetstream.WithPurgeSubject(Subject(desk)), jetstream.WithPurgeSequence(r.Through)); err != nil {
		return r, fmt.Errorf("cluster: compact desk %s: purge the WAL before %d: %w", desk, r.Through, err)
	}
	return r, nil
}

// Records is how many records of the desk's WAL the stream holds now:
// those since its last snapshot (Compact purges the ones before), plus
// the one it covers.
func Records(ctx context.Context, s *Stores, desk string) (uint64, error) {
	subject := Subject(desk)
	info, err := s.WAL.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, fmt.Errorf("cluster: count the WAL records of desk %s: %w", desk, err)
	}
	return info.State.Subjects[subject], nil
}

// onlyFences reports whether every record on subject through sequence
// last is a fence; it reads them in order and stops at the first that is
// not.
func onlyFences(ctx context.Context, st jetstream.Stream, subject string, last uint64) (bool, error) {
	for seq := uint64(1); seq <= last; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if err != nil {
			return false, fmt.Errorf("read the record of %s at or after sequence %d: %w", subject, seq, err)
		}
		if m.Header.Get(HeaderOp) != OpFence {
			return false, nil
		}
		seq = m.Sequence + 1
	}
	return true, nil
}

// Known reports whether the stores hold anything of the desk: a
// snapshot, or a WAL record besides fences. A desk they do not know is
// new to the cluster, or still only in the folder of the host it ran on
// before (Seed).
func Known(ctx context.Context, s *Stores, desk string) (bool, error) {
	last, err := lastSeq(ctx, s.WAL, Subject(desk))
	if err == nil {
		var has bool
		if has, err = known(ctx, s, desk, last); err == nil {
			return has, nil
		}
	}
	return false, fmt.Errorf("cluster: desk %s: %w", desk, err)
}

// known is Known, the WAL read through sequence last. Fences alone (of
// owners that stopped before their Seed) hold nothing of the desk.
func known(ctx context.Context, s *Stores, desk string, last uint64) (bool, error) {
	if _, err := s.Snapshots.GetInfo(ctx, desk); err == nil {
		return true, nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, fmt.Errorf("read the snapshot's info: %w", err)
	}
	only, err := onlyFences(ctx, s.WAL, Subject(desk), last)
	return !only && err == nil, err
}

// Seed lets a cluster start from a desk folder that one host has today:
// when the desk has no snapshot and its WAL holds no record but fences,
// the last w's (w: the desk's writer from Fence, its first owner; the
// fences before it, of owners that stopped before their Seed), it packs the folder
// dir as it is (but for temporary files) into the desk's snapshot,
// covering the fence, and reports true; Rebuild then gives that folder
// back. Otherwise (a snapshot, or records: the stores have the desk
// already), or when dir does not exist, it does nothing and reports
// false. Call it after Fence and before the desk writes.
func Seed(ctx context.Context, s *Stores, desk, dir string, w *Writer) (bool, error) {
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("cluster: seed desk %s from %s: %w", desk, dir, err)
	}
	if w.desk != desk {
		return fail(fmt.Errorf("the writer is desk %s's", w.desk))
	}
	fence, stopped := w.State()
	if stopped != nil {
		return fail(stopped)
	}
	if last, err := lastSeq(ctx, s.WAL, Subject(desk)); err != nil || last != fence {
		if err == nil {
			err = fmt.Errorf("the WAL's last record is %d, not the writer's fence %d", last, fence)
		}
		return fail(err)
	}
	if has, err := known(ctx, s, desk, fence); err != nil {
		return fail(err)
	} else if has {
		return false, nil
	}
	if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return fail(err)
	} else if !fi.IsDir() {
		return fail(errors.New("not a folder"))
	}
	data, err := tarDir(dir)
	if err != nil {
		return fail(fmt.Errorf("pack the folder: %w", err))
	}
	meta := jetstream.ObjectMeta{Name: desk, Headers: nats.Header{HeaderSnapshotSeq: []string{strconv.FormatUint(fence, 10)}}}
	if _, err := s.Snapshots.Put(ctx, meta, bytes.NewReader(data)); err != nil {
		return fail(fmt.Errorf("store the snapshot: %w", err))
	}
	return true, nil
}
