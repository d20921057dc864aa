package cluster

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The headers of a WAL record. Its data is the bytes appended, or the
// whole new content of a replaced or linked file (or one part of it).
const (
	// HeaderEpoch is the writer's epoch.
	HeaderEpoch = "Deskd-Epoch"
	// HeaderHost is the writer's host.
	HeaderHost = "Deskd-Host"
	// HeaderOp is the record's kind: one of the Op constants.
	HeaderOp = "Deskd-Op"
	// HeaderFile is the file written, relative to the desk's folder,
	// with '/' between its parts.
	HeaderFile = "Deskd-File"
	// HeaderOffset is where an append begins in its file, or the size a
	// truncate cuts its file to.
	HeaderOffset = "Deskd-Offset"
	// HeaderFrom is the file a rename moves (to HeaderFile).
	HeaderFrom = "Deskd-From"
	// HeaderPart is "k/n" on the k-th of the n records of a replace or a
	// link too large for one record; Rebuild applies the whole only at
	// its last part. Absent on a record that holds all of it.
	HeaderPart = "Deskd-Part"
)

// The kinds of WAL record.
const (
	// OpFence is a new owner's first record: its epoch, no file.
	OpFence = "fence"
	// OpAppend is bytes appended to a file at an offset.
	OpAppend = "append"
	// OpReplace is a file replaced whole (a rename over it).
	OpReplace = "replace"
	// OpLink is a new file with its whole content (link(2) of a complete
	// file under a name that was free).
	OpLink = "link"
	// OpRemove is a file (or an empty folder) removed.
	OpRemove = "remove"
	// OpTruncate is a file cut to the size in HeaderOffset.
	OpTruncate = "truncate"
	// OpRename is a file or folder moved from HeaderFrom to HeaderFile.
	OpRename = "rename"
	// OpMkdir is a folder made.
	OpMkdir = "mkdir"
)

// MaxRecord bounds a WAL message (WALStream's MaxMsgSize, the server's
// default max_payload). An append longer than MaxChunk is published as
// several records, and a replaced or linked file as several parts.
const (
	MaxRecord = 1 << 20
	MaxChunk  = MaxRecord - 16<<10 // room for the headers
)

// ErrFenced is the cause of a writer's refusal once another owner has
// fenced the desk's WAL, or once its own lease is lost: nothing more it
// writes can become durable, and it never tries again.
var ErrFenced = errors.New("fenced: another host owns the desk now")

// Holder is what a Writer needs of the lease it writes under (a *Lease).
type Holder interface {
	// Epoch is the desk's epoch under the lease.
	Epoch() uint64
	// Holds reports whether the lease is still held.
	Holds() bool
}

// Writer appends one desk's durable writes to its WAL subject, in order,
// each publish expecting the subject's last sequence to be its own last
// record. It is safe for concurrent use; its writes are serialised.
type Writer struct {
	js      jetstream.JetStream
	desk    string
	subject string
	host    string
	lease   Holder

	mu   sync.Mutex // held across a publish (and all the parts of one write)
	last uint64     // the sequence of our last record on the subject
	// stop is why the writer stopped; once set, every write returns it.
	stop atomic.Pointer[error]
}

// record is one WAL record to publish.
type record struct {
	op, file, from string
	offset         int64
	part           string // "k/n", or "" for a whole
	data           []byte
}

// Fence starts the desk's WAL as its new owner: it publishes the fence
// record of lease's epoch after whatever the subject holds now, which
// refuses every later publish of an older owner, and returns the writer
// of that epoch. Call it after winning the lease and before rebuilding
// the folder: the rebuild then reads everything up to the fence.
//
// A record of the old owner may land between the read of the subject's
// last sequence and the fence (its publish in flight as its lease ran
// out): the stream refuses the fence, and while lease holds, Fence reads
// the last sequence again and fences after that record, up to
// maxFenceTries times; the old owner's next publish is refused.
func Fence(ctx context.Context, s *Stores, desk, host string, lease Holder) (*Writer, error) {
	for try := 1; ; try++ {
		w := &Writer{js: s.JS, desk: desk, subject: Subject(desk), host: host, lease: lease}
		last, err := lastSeq(ctx, s.WAL, w.subject)
		if err != nil {
			return nil, fmt.Errorf("cluster: fence desk %s: %w", desk, err)
		}
		w.last = last
		err = w.publish(ctx, record{op: OpFence})
		if err == nil {
			return w, nil
		}
		if !errors.Is(err, ErrFenced) || !lease.Holds() || try == maxFenceTries || ctx.Err() != nil {
			return nil, fmt.Errorf("cluster: fence desk %s: %w", desk, err)
		}
	}
}

// maxFenceTries bounds the fences of one Fence that the stream refuses
// because an older owner's record came first.
const maxFenceTries = 10

// lastSeq is the stream sequence of the last message on subject; 0 when
// it has none.
func lastSeq(ctx context.Context, st jetstream.Stream, subject string) (uint64, error) {
	m, err := st.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the last record of %s: %w", subject, err)
	}
	return m.Sequence, nil
}

// Desk is the desk the writer writes for.
func (w *Writer) Desk() string { return w.desk }

// Epoch is the epoch the writer writes under.
func (w *Writer) Epoch() uint64 { return w.lease.Epoch() }

// State is the stream sequence of the writer's last record, and why it
// stopped (errors.Is ErrFenced when fenced; nil while it writes).
func (w *Writer) State() (last uint64, stopped error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, w.stopped()
}

// Err is why the writer stopped, nil while it may write: it stops at a
// refused or unanswered publish, and when its lease is lost (found here
// too, without a publish). It does not wait for a publish under way.
func (w *Writer) Err() error {
	if err := w.stopped(); err != nil {
		return err
	}
	if !w.lease.Holds() {
		return w.fail(fmt.Errorf("epoch %d: the lease is lost: %w", w.lease.Epoch(), ErrFenced))
	}
	return nil
}

func (w *Writer) stopped() error {
	if p := w.stop.Load(); p != nil {
		return *p
	}
	return nil
}

// fail stops the writer with err, unless it stopped already; it returns
// the error it stopped with.
func (w *Writer) fail(err error) error {
	w.stop.CompareAndSwap(nil, &err)
	return *w.stop.Load()
}

// Append records that data was appended to file (relative to the desk's
// folder) at offset, in records of at most MaxChunk bytes. It returns
// once the stream has acknowledged them.
func (w *Writer) Append(ctx context.Context, file string, offset int64, data []byte) error {
	recs := make([]record, 0, 1+len(data)/MaxChunk)
	for at := 0; at == 0 || at < len(data); at += MaxChunk {
		recs = append(recs, record{op: OpAppend, file: file, offset: offset + int64(at), data: data[at:min(len(data), at+MaxChunk)]})
	}
	return w.write(ctx, fmt.Sprintf("append to %s at %d", file, offset), recs...)
}

// Replace records that file (relative to the desk's folder) now holds
// data, whole. Content longer than MaxChunk is published in parts, one
// after another with no other record between them, which Rebuild applies
// together at the last. It returns once the stream has acknowledged all.
func (w *Writer) Replace(ctx context.Context, file string, data []byte) error {
	return w.write(ctx, fmt.Sprintf("replace %s (%d bytes)", file, len(data)), parted(OpReplace, file, data)...)
}

// Link records that file (relative to the desk's folder), which did not
// exist, now holds data: a complete file linked under a free name. Parts
// as Replace.
func (w *Writer) Link(ctx context.Context, file string, data []byte) error {
	return w.write(ctx, fmt.Sprintf("link %s (%d bytes)", file, len(data)), parted(OpLink, file, data)...)
}

// parted is the records of a file's whole content: one, or parts k/n.
func parted(op, file string, data []byte) []record {
	n := max(1, (len(data)+MaxChunk-1)/MaxChunk)
	recs := make([]record, 0, n)
	for k := range n {
		r := record{op: op, file: file, data: data[k*MaxChunk : min(len(data), (k+1)*MaxChunk)]}
		if n > 1 {
			r.part = strconv.Itoa(k+1) + "/" + strconv.Itoa(n)
		}
		recs = append(recs, r)
	}
	return recs
}

// Remove records that file (relative to the desk's folder) was removed.
func (w *Writer) Remove(ctx context.Context, file string) error {
	return w.write(ctx, "remove "+file, record{op: OpRemove, file: file})
}

// Truncate records that file (relative to the desk's folder) was cut to
// size bytes.
func (w *Writer) Truncate(ctx context.Context, file string, size int64) error {
	what := fmt.Sprintf("truncate %s to %d", file, size)
	if size < 0 {
		return fmt.Errorf("cluster: desk %s: %s: a negative size", w.desk, what)
	}
	return w.write(ctx, what, record{op: OpTruncate, file: file, offset: size})
}

// Rename records that file or folder from (relative to the desk's
// folder) was moved to to.
func (w *Writer) Rename(ctx context.Context, from, to string) error {
	return w.write(ctx, "rename "+from+" to "+to, record{op: OpRename, from: from, file: to})
}

// Mkdir records that folder dir (relative to the desk's folder) was made.
func (w *Writer) Mkdir(ctx context.Context, dir string) error {
	return w.write(ctx, "mkdir "+dir, record{op: OpMkdir, file: dir})
}

// write checks the files of recs, the records of one write (what, for
// its errors), and publishes them.
func (w *Writer) write(ctx context.Context, what string, recs ...record) error {
	for _, r := range recs {
		bad, err := r.file, checkFile(r.file)
		if err == nil && r.from != "" {
			bad, err = r.from, checkFile(r.from)
		}
		if err != nil {
			return fmt.Errorf("cluster: desk %s: %s: %q: %w", w.desk, what, bad, err)
		}
	}
	if err := w.publish(ctx, recs...); err != nil {
		return fmt.Errorf("cluster: desk %s: %s: %w", w.desk, what, err)
	}
	return nil
}

// checkFile checks a WAL record's file: a clean relative path inside the
// desk's folder.
func checkFile(file string) error {
	if file == "" || path.IsAbs(file) || path.Clean(file) != file || file == "." || file == ".." || strings.HasPrefix(file, "../") {
		return errors.New("not a clean path inside the desk's folder")
	}
	return nil
}

// publish publishes recs, one after another after our last, and fails
// the writer for good if one is not acknowledged: refused (another
// owner's fence, a lost lease) is ErrFenced; any other failure leaves it
// unknown whether the stream stored it, so nothing more may follow
// either.
func (w *Writer) publish(ctx context.Context, recs ...record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range recs {
		if err := w.publishLocked(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// maxBusyTries bounds the publishes of one record that a stream leader
// refuses while its previous record on the subject is still in process
// (each try a round trip: a few milliseconds in all, at most).
const maxBusyTries = 100

func (w *Writer) publishLocked(ctx context.Context, r record) error {
	if err := w.Err(); err != nil {
		return err
	}
	epoch := w.lease.Epoch()
	m := &nats.Msg{Subject: w.subject, Data: r.data, Header: nats.Header{}}
	m.Header.Set(HeaderEpoch, strconv.FormatUint(epoch, 10))
	m.Header.Set(HeaderHost, w.host)
	m.Header.Set(HeaderOp, r.op)
	if r.file != "" {
		m.Header.Set(HeaderFile, r.file)
	}
	if r.from != "" {
		m.Header.Set(HeaderFrom, r.from)
	}
	if r.op == OpAppend || r.op == OpTruncate {
		m.Header.Set(HeaderOffset, strconv.FormatInt(r.offset, 10))
	}
	if r.part != "" {
		m.Header.Set(HeaderPart, r.part)
	}
	var ack *jetstream.PubAck
	var err error
	var apiErr *jetstream.APIError
	for try := 0; ; try++ {
		ack, err = w.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(w.last), jetstream.WithExpectStream(WALStream))
		// A clustered stream's leader refuses a record for a subject
		// whose previous record it has acknowledged but not yet set
		// down ("wrong last sequence", without a sequence): nothing was
		// stored, so it is asked again; a fence is refused with the
		// subject's sequence (JSErrCodeStreamWrongLastSequence).
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequenceConstant || try == maxBusyTries || ctx.Err() != nil {
			break
		}
	}
	switch {
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		return w.fail(fmt.Errorf("epoch %d: the stream refused record after sequence %d (%s): %w", epoch, w.last, apiErr.Description, ErrFenced))
	case err != nil:
		return w.fail(fmt.Errorf("epoch %d: not replicated (the writer stops: whether the stream has it is unknown): %w", epoch, err))
	}
	w.last = ack.Sequence
	return nil
}
