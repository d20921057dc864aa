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
	"strings"

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
	// Through is the last WAL sequence applied (or Snapshot). A replace
	// or link in parts whose last part is after the sequence rebuilt
	// through is not applied, and Through is before its first part.
	Through uint64
	// Records is how many WAL records were applied after the snapshot
	// (through Through).
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
// an error too, and so are a truncate past a file's end, a link to a name
// taken, a remove or rename of what is not there. A replace or link in
// parts is applied whole at its last part, or not at all (the rebuild
// ends before it, or a fence comes first). Every file and folder written
// is fsynced before it returns.
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
	dirs  []string // folders made or changed, to fsync
	// pending is the replace or link whose parts are being read.
	pending *parts
	// synced are the results of fsyncs of files closed early (forget).
	synced []error
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

// apply applies one WAL record (a whole one: the parts of a replace or
// a link joined). from is a rename's source; offset an append's start or
// a truncate's size.
func (fd *folder) apply(op, rel, from string, offset int64, data []byte) error {
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
	case OpReplace, OpLink:
		if op == OpLink {
			if _, err := os.Lstat(fd.path(rel)); err == nil {
				return fmt.Errorf("%s: a link to a name that is taken", rel)
			}
		}
		fd.forget(rel)
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
	case OpTruncate:
		of, err := fd.open(rel)
		if err != nil {
			return err
		}
		if offset > of.size {
			return fmt.Errorf("%s: a truncate to %d, but the file ends at %d", rel, offset, of.size)
		}
		if err := of.f.Truncate(offset); err != nil {
			return err
		}
		of.size = offset
	case OpRemove:
		fd.forget(rel)
		if err := os.Remove(fd.path(rel)); err != nil {
			return fmt.Errorf("%s: remove: %w", rel, err)
		}
		fd.dirty(filepath.Dir(fd.path(rel)))
	case OpRename:
		if err := checkFile(from); err != nil {
			return fmt.Errorf("rename from %q: %w", from, err)
		}
		fd.forget(from)
		fd.forget(rel)
		if err := fd.mkdirs(filepath.Dir(fd.path(rel))); err != nil {
			return err
		}
		if err := os.Rename(fd.path(from), fd.path(rel)); err != nil {
			return fmt.Errorf("rename %s to %s: %w", from, rel, err)
		}
		fd.dirty(filepath.Dir(fd.path(from)))
		fd.dirty(filepath.Dir(fd.path(rel)))
		if fi, err := os.Stat(fd.path(rel)); err == nil && fi.IsDir() {
			fd.dirty(fd.path(rel))
		}
	case OpMkdir:
		if err := fd.mkdirs(fd.path(rel)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s: unknown record kind %q", rel, op)
	}
	return nil
}

// path is the file rel's path.
func (fd *folder) path(rel string) string { return filepath.Join(fd.dir, filepath.FromSlash(rel)) }

// forget closes the open files at rel or below it (a file replaced,
// removed or moved: its next write opens it anew).
func (fd *folder) forget(rel string) {
	for name, of := range fd.files {
		if name == rel || strings.HasPrefix(name, rel+"/") {
			// Written bytes must still be durable: fsync before closing.
			fd.synced = append(fd.synced, of.f.Sync())
			_ = of.f.Close()
			delete(fd.files, name)
		}
	}
}

// dirty notes folder d to fsync at the end (an entry in it changed).
func (fd *folder) dirty(d string) {
	if d != fd.dir && !slices.Contains(fd.dirs, d) {
		fd.dirs = append(fd.dirs, d)
	}
}

// parts is a replace or a link in several records, read so far.
type parts struct {
	op, file string
	n, have  int
	from     uint64 // the sequence of its first part
	data     []byte
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
	read, records := r.Through, r.Records // what was read; r: what is applied
	for read < through {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			var pending string
			if info, ierr := cons.Info(context.WithoutCancel(ctx)); ierr == nil {
				pending = fmt.Sprintf(" (the reader has %d pending, delivered through %d)", info.NumPending, info.Delivered.Stream)
			}
			return fmt.Errorf("read the WAL after sequence %d of %d%s: %w", read, through, pending, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("read the WAL after sequence %d: %w", read, err)
		}
		seq := md.Sequence.Stream
		if seq > through {
			break
		}
		if err := fd.record(m.Headers(), m.Data(), seq, r); err != nil {
			return fmt.Errorf("WAL sequence %d: %w", seq, err)
		}
		read = seq
		records++
		if fd.pending == nil { // a whole state: every record read is applied
			r.Through, r.Records = read, records
		}
	}
	return nil
}

// record checks one WAL record's epoch and applies it; the parts of a
// replace or a link wait in fd.pending for their last.
func (fd *folder) record(h nats.Header, data []byte, seq uint64, r *Rebuilt) error {
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
		fd.pending = nil // an owner stopped between the parts of a write: it never happened
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
	if op == OpAppend || op == OpTruncate {
		if offset, err = strconv.ParseInt(h.Get(HeaderOffset), 10, 64); err != nil || offset < 0 {
			return fmt.Errorf("%s: its %s header %q is not an offset", rel, HeaderOffset, h.Get(HeaderOffset))
		}
	}
	part := h.Get(HeaderPart)
	if fd.pending != nil || part != "" {
		return fd.part(op, rel, part, data, seq)
	}
	return fd.apply(op, rel, h.Get(HeaderFrom), offset, data)
}

// part takes one part of a replace or a link; the last applies the whole.
func (fd *folder) part(op, rel, part string, data []byte, seq uint64) error {
	var k, n int
	if _, err := fmt.Sscanf(part, "%d/%d", &k, &n); err != nil || k < 1 || k > n || part != strconv.Itoa(k)+"/"+strconv.Itoa(n) {
		if p := fd.pending; p != nil {
			return fmt.Errorf("%s: a %s record inside the %d parts of a %s of %s begun at %d", rel, op, p.n, p.op, p.file, p.from)
		}
		return fmt.Errorf("%s: its %s header %q is not a part k/n", rel, HeaderPart, part)
	}
	p := fd.pending
	switch {
	case op != OpReplace && op != OpLink:
		return fmt.Errorf("%s: a %s record in parts", rel, op)
	case p == nil && k != 1:
		return fmt.Errorf("%s: part %s of a %s without its first", rel, part, op)
	case p == nil:
		p = &parts{op: op, file: rel, n: n, from: seq}
		fd.pending = p
	case p.op != op || p.file != rel || p.n != n || k != p.have+1:
		return fmt.Errorf("%s: part %s of a %s, inside the %d parts of a %s of %s begun at %d", rel, part, op, p.n, p.op, p.file, p.from)
	}
	p.have = k
	p.data = append(p.data, data...)
	if k < n {
		return nil
	}
	fd.pending = nil
	return fd.apply(op, rel, "", 0, p.data)
}

// sync fsyncs every file written, then every folder made, and the folder.
func (fd *folder) sync() error {
	if err := errors.Join(fd.synced...); err != nil {
		return fmt.Errorf("fsync a file replaced or moved: %w", err)
	}
	for rel, of := range fd.files {
		if err := of.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", rel, err)
		}
	}
	dirs := append([]string{fd.dir}, fd.dirs...)
	for _, d := range dirs {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			continue // moved or removed since: its new place is in the list
		}
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
