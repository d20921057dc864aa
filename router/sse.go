package router

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"
)

// This file holds what both model clients share on the wire: the HTTP
// call that posts a request body (post) and the reader of the
// Server-Sent Events stream that answers it (sseReader). Each client
// writes its own body (wire.go) and decodes its own events into plain
// structs: deskd needs no provider SDK.

// sseBufferSize is the size of a stream reader's buffer; longer lines are
// gathered past it. The services' events are mostly far under 1 KiB.
const sseBufferSize = 4 << 10

// maxPooledEvent is the largest event after which a stream reader is
// kept for another call: one that gathered a longer line or decoded a
// larger event would keep that much memory.
const maxPooledEvent = 64 << 10

// sseReader reads the events of a Server-Sent Events stream, as the
// services send them: "event:" names the event, each "data:" line adds a
// line to its data, a line starting with ":" is a comment, and an empty
// line ends the event. An event without data is skipped, and so is one
// that the stream's end cuts off before its empty line.
type sseReader struct {
	r *bufio.Reader
	// name and data are the event being read; long gathers a line longer
	// than the buffer.
	name, data, long []byte
}

// newSSEReader reads the events of body.
func newSSEReader(body io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(body, sseBufferSize)}
}

// eventReader reads the events of one answer's stream (sseReader) and
// decodes their data (decode). One serves the calls of a client one after
// another (eventReaders): its buffer, and the json.Decoder whose scanner
// and error context json.Unmarshal would make anew for every event, are
// made once.
type eventReader struct {
	sseReader
	data bytes.Reader
	dec  *json.Decoder
	// spent is set when the reader should not serve another call: a
	// decode failed, or an event was larger than maxPooledEvent.
	spent bool
}

// decode decodes data, one event's, into v as json.Unmarshal does: data
// must be one JSON value (with white space around it), and a syntax error
// is Unmarshal's.
func (e *eventReader) decode(data []byte, v any) error {
	if len(data) > maxPooledEvent {
		e.spent = true
	}
	if !json.Valid(data) { // then the Decoder would stop at the value's end, or wait for more
		e.spent = true
		return json.Unmarshal(data, v) // its error, which says where
	}
	e.data.Reset(data)
	if err := e.dec.Decode(v); err != nil {
		e.spent = true
		return err
	}
	return nil
}

// eventReaders keeps a client's event readers between its calls. It is
// safe for concurrent use; the zero value is ready.
type eventReaders struct{ pool sync.Pool }

// get returns a reader of body's events.
func (p *eventReaders) get(body io.Reader) *eventReader {
	e, ok := p.pool.Get().(*eventReader)
	if !ok {
		e = &eventReader{sseReader: sseReader{r: bufio.NewReaderSize(body, sseBufferSize)}}
		e.dec = json.NewDecoder(&e.data)
		return e
	}
	e.r.Reset(body)
	return e
}

// put keeps e for a later call, unless it is spent; nothing may use it
// after.
func (p *eventReaders) put(e *eventReader) {
	if e.spent || cap(e.long) > maxPooledEvent || cap(e.sseReader.data) > maxPooledEvent {
		return
	}
	e.r.Reset(nil)
	e.name, e.sseReader.data = e.name[:0], e.sseReader.data[:0]
	p.pool.Put(e)
}

// keptString is a string field of a stream's events that holds the same
// value from one event to the next (a chunk's id and model, an event's
// type): decoding it again keeps the string it held, without a copy,
// when the value is the same. Reset it with next before each event; set
// reports whether the event had the field (a JSON null is none).
type keptString struct {
	s   string
	set bool
}

// UnmarshalJSON is json.Unmarshaler's.
func (k *keptString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
		// No escapes: the text is the value (the event was checked by
		// json.Valid; invalid UTF-8 is what Unmarshal would replace).
		if raw := b[1 : len(b)-1]; string(raw) == k.s {
			k.set = true // the same string
			return nil
		} else if utf8.Valid(raw) {
			k.s, k.set = string(raw), true
			return nil
		}
	}
	if err := json.Unmarshal(b, &k.s); err != nil {
		return err
	}
	k.set = true
	return nil
}

// String returns the value, or "" when the event did not have the field.
func (k keptString) String() string {
	if !k.set {
		return ""
	}
	return k.s
}

// textPart is a JSON string of one event that the answer takes in at
// once (a delta's text, a tool call's arguments): one without escapes is
// decoded as a view of the event's own bytes, no copy of its own, valid
// until the next event is decoded; one with escapes (or bytes that are
// not UTF-8, which decoding replaces) is decoded as json.Unmarshal does.
type textPart struct {
	view []byte // the text, in the event's bytes
	s    string // or the text decoded
}

// UnmarshalJSON is json.Unmarshaler's.
func (t *textPart) UnmarshalJSON(b []byte) error {
	*t = textPart{}
	if string(b) == "null" {
		return nil
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b[1:len(b)-1]) {
		t.view = b[1 : len(b)-1] // checked by json.Valid: the text as it is
		return nil
	}
	return json.Unmarshal(b, &t.s)
}

// Len is the text's length in bytes.
func (t *textPart) Len() int { return len(t.view) + len(t.s) }

// appendTo appends the text to b.
func (t *textPart) appendTo(b []byte) []byte { return append(append(b, t.view...), t.s...) }

// writeTo writes the text to w.
func (t *textPart) writeTo(w *strings.Builder) {
	w.Write(t.view)
	w.WriteString(t.s)
}

// next is k for the next event: its string kept, not yet set.
func (k keptString) next() keptString { return keptString{s: k.s} }

// next returns the next event's name and data (its data lines, each ended
// by a newline). Both are valid until the next call. At the stream's end
// it returns io.EOF, and any other error of the body's reads as it is.
func (s *sseReader) next() (name, data []byte, err error) {
	s.name, s.data = s.name[:0], s.data[:0]
	for {
		line, err := s.line()
		if err != nil {
			return nil, nil, err
		}
		if len(line) == 0 {
			if len(s.data) > 0 {
				return s.name, s.data, nil
			}
			s.name = s.name[:0]
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			s.name = append(s.name[:0], value...)
		case "data":
			s.data = append(s.data, value...)
			s.data = append(s.data, '\n')
		}
	}
}

// line reads one line, without its end (\n or \r\n). A last line without
// an end is returned as one; after it, io.EOF.
func (s *sseReader) line() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = s.r.ReadSlice('\n')
			s.long = append(s.long, line...)
		}
		line = s.long
	}
	if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// eventError is an error that a service sent inside a stream in place of
// the answer's next event: an "error" event of the Messages API, a chunk
// of the Chat Completions API that holds an "error" object. Each client's
// streamError reads its data.
type eventError struct {
	data []byte
}

func (e *eventError) Error() string {
	return "error event in the stream: " + string(bytes.TrimSpace(e.data))
}

// streamEventError returns the data of err when it is an eventError.
func streamEventError(err error) ([]byte, bool) {
	var ee *eventError
	if !errors.As(err, &ee) {
		return nil, false
	}
	return ee.data, true
}

// endpoint is the URL of path (relative, such as "chat/completions")
// under base, an API's root: its path with a trailing slash, as the SDKs
// resolved it.
func endpoint(base, path string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", errors.New("the base URL is not a URL")
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		u.RawPath = ""
	}
	return u.ResolveReference(&url.URL{Path: path}).String(), nil
}

// post sends body to the service at target with header, through the
// attempt's recorder (which keeps the answer's status and headers, reads
// a failure's body and caps a stream's), and returns the answer. A
// failure (no answer, or a status of 400 or more) is the attempt's
// *APIError, classified by call.failure. The caller calls release, once
// the answer is done with, before body's buffer goes back to its pool:
// the HTTP client reads body no more after it.
func post(a *attempt, hc *http.Client, target string, header http.Header, body []byte) (res *http.Response, release func(), err error) {
	g := &bodyGuard{}
	req, err := http.NewRequestWithContext(a.ctx, http.MethodPost, target, g.reader(body))
	if err != nil {
		return nil, g.release, &APIError{Model: a.call.model, Err: fmt.Errorf("make the request: %s", a.call.scrub(err.Error()))}
	}
	req.Header = header
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return g.reader(body), nil }
	if err := beforeSend(a.ctx); err != nil {
		return nil, g.release, err // the turn did not begin: nothing goes out
	}
	res, err = a.rec.middleware(req, hc.Do)
	if err != nil {
		if res != nil && res.Body != nil {
			_ = res.Body.Close()
		}
		return nil, g.release, a.call.failure(err, nil)
	}
	if res.StatusCode >= 400 {
		_ = res.Body.Close()
		return nil, g.release, a.call.failure(fmt.Errorf("status %d", res.StatusCode), nil)
	}
	return res, g.release, nil
}

// errBodyReleased is the read error of a request body whose buffer went
// back to its pool.
var errBodyReleased = errors.New("the request body was released")

// bodyGuard ends the reads of a request body: after release, every
// reader of it fails, so that its buffer can be used again even if a
// transport goroutine still holds the request.
type bodyGuard struct {
	mu       sync.Mutex
	released bool
}

// reader returns a reader of body under g.
func (g *bodyGuard) reader(body []byte) io.ReadCloser {
	return &guardedReader{g: g, r: bytes.NewReader(body)}
}

// release makes every reader of g fail from now on.
func (g *bodyGuard) release() {
	g.mu.Lock()
	g.released = true
	g.mu.Unlock()
}

// guardedReader reads a request body until its guard is released.
type guardedReader struct {
	g *bodyGuard
	r *bytes.Reader
}

func (r *guardedReader) Read(p []byte) (int, error) {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	if r.g.released {
		return 0, errBodyReleased
	}
	return r.r.Read(p)
}

func (r *guardedReader) Close() error { return nil }

// streamHeader is the header of a streamed request: a JSON body, an
// event stream answer, and the client's name.
func streamHeader() http.Header {
	h := make(http.Header, 6)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("User-Agent", "deskd")
	return h
}

// streamer is what the streaming clients share: the options, the
// endpoint and the HTTP client that calls it, the encodings of tool
// definitions and of system prompts (by content), and the buffers of
// request bodies.
type streamer struct {
	client
	url    string
	hc     *http.Client
	tools  *toolMemo
	system *memo
	bodies *bodies
	events *eventReaders
	// header is every request's header (streamHeader's, the service's
	// and the key's); each request gets a copy.
	header http.Header
}

// newStreamer returns the streamer of checked options o calling target,
// whose requests carry streamHeader's fields, the service's fields
// (name, value pairs), and, when o has a key, the field keyField of value
// keyPrefix and the key.
func newStreamer(o ClientOptions, target, keyField, keyPrefix string, fields ...string) streamer {
	h := streamHeader()
	for i := 0; i+1 < len(fields); i += 2 {
		h.Set(fields[i], fields[i+1])
	}
	if o.APIKey != "" {
		h.Set(keyField, keyPrefix+o.APIKey)
	}
	return streamer{client: newClient(o), url: target, hc: o.HTTPClient, tools: new(toolMemo), system: new(memo), bodies: new(bodies), events: new(eventReaders), header: h}
}

// exchange is one streamed call under way: its attempt, its output cap
// in tokens, the answer whose body streams, and the reader of its events.
type exchange struct {
	attempt
	maxOut int
	res    *http.Response
	events *eventReader
}

// callsBeforeSend says that a streamer begins the turn (beforeSend) as
// its request goes out, in post.
func (s *streamer) callsBeforeSend() {}

// stream makes one streamed call whose reply is capped by an output cap
// of maxOut tokens (ReplyCap): it writes the request body into a pooled
// buffer (write), posts it (see post) and has read read the answer. Its
// error passes scrubError, whichever step made it.
func (s *streamer) stream(ctx context.Context, maxOut int, write func(*wireBody) ([]byte, error), read func(*exchange) (Response, error)) (Response, error) {
	resp, err := s.streamOnce(ctx, maxOut, write, read)
	return resp, scrubError(err, s.key)
}

// streamOnce is stream but for the scrub. As it returns it closes the
// answer, releases the body, ends the attempt and only then gives the
// buffer back: nothing can read it after.
func (s *streamer) streamOnce(ctx context.Context, maxOut int, write func(*wireBody) ([]byte, error), read func(*exchange) (Response, error)) (Response, error) {
	buf := s.bodies.get()
	defer s.bodies.put(buf)
	body, err := write(buf)
	if err != nil {
		return Response{}, s.failed(err)
	}
	x := &exchange{attempt: s.begin(ctx, maxOut), maxOut: maxOut}
	defer x.cancel()
	res, release, err := post(&x.attempt, s.hc, s.url, s.header.Clone(), body)
	defer release()
	if err != nil {
		return Response{}, err
	}
	defer res.Body.Close()
	x.res, x.events = res, s.events.get(res.Body)
	defer s.events.put(x.events)
	return read(x)
}
