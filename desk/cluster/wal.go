package cluster

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The headers of a WAL record. Its data is the bytes appended, or the
// whole new content of a replaced file.
const (
	// HeaderEpoch is the writer's epoch.
	HeaderEpoch = "Deskd-Epoch"
	// HeaderHost is the writer's host.
	HeaderHost = "Deskd-Host"
	// HeaderOp is the record's kind: OpFence, OpAppend or OpReplace.
	HeaderOp = "Deskd-Op"
	// HeaderFile is the file written, relative to the desk's folder,
	// with '/' between its parts.
	HeaderFile = "Deskd-File"
	// HeaderOffset is where an append begins in its file.
	HeaderOffset = "Deskd-Offset"
)

// The kinds of WAL record.
const (
	// OpFence is a new owner's first record: its epoch, no file.
	OpFence = "fence"
	// OpAppend is bytes appended to a file at an offset.
	OpAppend = "append"
	// OpReplace is a file replaced whole (a rename over it).
	OpReplace = "replace"
)

// MaxRecord bounds a WAL message (WALStream's MaxMsgSize, the server's
// default max_payload). An append longer than MaxChunk is published as
// several records; a replaced file must fit in one (MaxChunk).
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

	mu   sync.Mutex
	last uint64 // the sequence of our last record on the subject
	err  error  // once set, every write returns it
}

// Fence starts the desk's WAL as its new owner: it publishes the fence
// record of lease's epoch after whatever the subject holds now, which
// refuses every later publish of an older owner, and returns the writer
// of that epoch. Call it after winning the lease and before rebuilding
// the folder: the rebuild then reads everything up to the fence.
func Fence(ctx context.Context, s *Stores, desk, host string, lease Holder) (*Writer, error) {
	w := &Writer{js: s.JS, desk: desk, subject: Subject(desk), host: host, lease: lease}
	last, err := lastSeq(ctx, s.WAL, w.subject)
	if err != nil {
		return nil, fmt.Errorf("cluster: fence desk %s: %w", desk, err)
	}
	w.last = last
	if err := w.publish(ctx, OpFence, "", 0, nil); err != nil {
		return nil, fmt.Errorf("cluster: fence desk %s: %w", desk, err)
	}
	return w, nil
}

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

// Epoch is the epoch the writer writes under.
func (w *Writer) Epoch() uint64 { return w.lease.Epoch() }

// State is the stream sequence of the writer's last record, and why it
// stopped (errors.Is ErrFenced when fenced; nil while it writes).
func (w *Writer) State() (last uint64, stopped error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, w.err
}

// Append records that data was appended to file (relative to the desk's
// folder) at offset. It returns once the stream has acknowledged it.
func (w *Writer) Append(ctx context.Context, file string, offset int64, data []byte) error {
	if err := checkFile(file); err != nil {
		return fmt.Errorf("cluster: desk %s: append to %q: %w", w.desk, file, err)
	}
	for {
		n := min(len(data), MaxChunk)
		if err := w.publish(ctx, OpAppend, file, offset, data[:n]); err != nil {
			return fmt.Errorf("cluster: desk %s: append to %s at %d: %w", w.desk, file, offset, err)
		}
		data, offset = data[n:], offset+int64(n)
		if len(data) == 0 {
			return nil
		}
	}
}

// Replace records that file (relative to the desk's folder) now holds
// data, whole. It returns once the stream has acknowledged it.
func (w *Writer) Replace(ctx context.Context, file string, data []byte) error {
	if err := checkFile(file); err != nil {
		return fmt.Errorf("cluster: desk %s: replace %q: %w", w.desk, file, err)
	}
	if len(data) > MaxChunk {
		return fmt.Errorf("cluster: desk %s: replace %s: %d bytes is more than a WAL record holds (%d)", w.desk, file, len(data), MaxChunk)
	}
	if err := w.publish(ctx, OpReplace, file, 0, data); err != nil {
		return fmt.Errorf("cluster: desk %s: replace %s: %w", w.desk, file, err)
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

// publish publishes one record after our last, and fails the writer for
// good if it is not acknowledged: refused (another owner's fence, a lost
// lease) is ErrFenced; any other failure leaves it unknown whether the
// stream stored it, so nothing more may follow either.
func (w *Writer) publish(ctx context.Context, op, file string, offset int64, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	epoch := w.lease.Epoch()
	if !w.lease.Holds() {
		w.err = fmt.Errorf("epoch %d: the lease is lost: %w", epoch, ErrFenced)
		return w.err
	}
	m := &nats.Msg{Subject: w.subject, Data: data, Header: nats.Header{}}
	m.Header.Set(HeaderEpoch, strconv.FormatUint(epoch, 10))
	m.Header.Set(HeaderHost, w.host)
	m.Header.Set(HeaderOp, op)
	if file != "" {
		m.Header.Set(HeaderFile, file)
	}
	if op == OpAppend {
		m.Header.Set(HeaderOffset, strconv.FormatInt(offset, 10))
	}
	ack, err := w.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(w.last), jetstream.WithExpectStream(WALStream))
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		w.err = fmt.Errorf("epoch %d: the stream refused record after sequence %d: %w", epoch, w.last, ErrFenced)
		return w.err
	case err != nil:
		w.err = fmt.Errorf("epoch %d: not replicated (the writer stops: whether the stream has it is unknown): %w", epoch, err)
		return w.err
	}
	w.last = ack.Sequence
	return nil
}
