package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/termsafe"
)

// RingSize is how many events the ring of a running deskd holds, so that
// GET /v1/events can replay them.
const RingSize = 4096

// events streams the event ring as Server-Sent Events: "id: <epoch>-<n>",
// "event: <topic>", "data: <json>". A client that reconnects with
// Last-Event-ID gets what it missed, as far as the ring reaches back;
// ?backlog=1 starts with everything the ring holds; ?follow=0 ends after
// the backlog; ?desk=NAME keeps one desk's events.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	ring := s.o.Events
	if ring == nil {
		writeError(w, http.StatusNotImplemented, "this deskd keeps no event ring")
		return
	}
	q := r.URL.Query()
	only := q.Get("desk")
	if only != "" {
		if p := s.locate(only); p.Desk == nil && p.State == "" { // standing by, starting, failed: what this host sees of it
			s.notHere(w, r, only, p)
			return
		}
	}
	follow := q.Get("follow") != "0" && q.Get("follow") != "false"
	cursor, restarted := ring.cursor(r.Header.Get("Last-Event-ID"), q.Get("backlog") == "1" || !follow)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	defer s.traceSSE(r, only, follow)()
	rc := http.NewResponseController(w)
	if restarted {
		fmt.Fprintf(w, ": deskd restarted since event %s; replaying what this deskd holds\n\n", r.Header.Get("Last-Event-ID"))
	}
	for {
		if !s.hosts.admits(r) { // allowed_hosts lost the name the stream was opened under
			fmt.Fprintf(w, ": Host %q is no longer a name of this deskd (allowed_hosts changed): the stream ends\n\n", r.Host)
			rc.Flush()
			return
		}
		evs, missed, changed := ring.since(cursor)
		done := watchWrites(s.o.Clock, rc) // ssewatch.go: a client that stops reading is dropped
		if missed > 0 {
			fmt.Fprintf(w, ": %s missed: the ring holds the last %d\n\n", termsafe.Plural(int(missed), "event"), ring.size())
		}
		for _, e := range evs {
			cursor = e.seq
			if only != "" && e.desk != only {
				continue
			}
			fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", ring.id(e.seq), e.topic, e.enc.bytes())
		}
		err := rc.Flush()
		done()
		if err != nil {
			return
		}
		if !follow {
			return
		}
		ping := s.o.Clock.NewTimer(sseKeepalive)
		select {
		case <-changed:
			ping.Stop()
		case <-ping.C():
			done := watchWrites(s.o.Clock, rc)
			_, err := io.WriteString(w, ": ping\n\n")
			done()
			if err != nil {
				return
			}
		case <-r.Context().Done():
			ping.Stop()
			return
		}
	}
}

// EventRing keeps the last events of the bus, numbered, for the event
// stream to replay to a client that reconnects.
type EventRing struct {
	epoch  string
	cancel func()

	mu sync.Mutex
	// buf holds the events, in order from buf[head] round to buf[head-1]
	// once it is full (a circle: an event added to a full ring takes the
	// oldest's place, nothing is moved).
	buf     []ringEvent
	head    int
	next    uint64 // the number the next event gets (from 1)
	changed chan struct{}
}

type ringEvent struct {
	seq         uint64
	topic, desk string
	enc         *encoded
}

// encoded is an event's JSON, made at its first read: a publisher (the
// path of a trigger to the model) pays for no encoding, and an event no
// stream reads is never encoded.
type encoded struct {
	once sync.Once
	ev   event.Event
	data []byte
}

// bytes returns the event's JSON.
func (e *encoded) bytes() []byte {
	e.once.Do(func() { e.data, e.ev = event.JSON(e.ev), nil })
	return e.data
}

// NewEventRing keeps the last size events of bus, each from the moment
// it is announced (event.SubscribeAllNow, in the publisher's goroutine;
// a staged event once its state is recorded): a request that comes after
// the publication, such as the events of a rollover its client has just
// seen answered, finds it, and a burst of events is never dropped from
// the ring. now, the time the process started, makes its ids differ from
// another process's. Close unsubscribes.
func NewEventRing(bus *event.Bus, now time.Time, size int) *EventRing {
	r := &EventRing{
		epoch: strconv.FormatInt(now.UnixNano(), 36), buf: make([]ringEvent, 0, size), next: 1,
		changed: make(chan struct{}),
	}
	r.cancel = event.SubscribeAllNow(bus, r.add)
	return r
}

func (r *EventRing) add(e event.Event) {
	topic := e.Topic()
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := ringEvent{seq: r.next, topic: topic, desk: e.Head().Desk, enc: &encoded{ev: e}}
	r.next++
	if len(r.buf) < cap(r.buf) {
		r.buf = append(r.buf, ev)
	} else {
		r.buf[r.head] = ev
		r.head = (r.head + 1) % len(r.buf)
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// Close stops taking events.
func (r *EventRing) Close() { r.cancel() }

// size is how many events the ring holds at most.
func (r *EventRing) size() int { return cap(r.buf) }

// id formats an event number as an SSE id.
func (r *EventRing) id(seq uint64) string { return r.epoch + "-" + strconv.FormatUint(seq, 10) }

// cursor returns the number after which a client's stream starts: the
// event of lastID, or the oldest held (backlog) or the newest (live only)
// when there is none. restarted is true when lastID came from another
// deskd process.
func (r *EventRing) cursor(lastID string, backlog bool) (seq uint64, restarted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	oldest := r.next - 1
	if len(r.buf) > 0 {
		oldest = r.buf[r.head].seq - 1
	}
	if lastID != "" {
		epoch, n, ok := strings.Cut(lastID, "-")
		if v, err := strconv.ParseUint(n, 10, 64); ok && err == nil && epoch == r.epoch && v < r.next {
			return v, false
		}
		return oldest, true
	}
	if backlog {
		return oldest, false
	}
	return r.next - 1, false
}

// since returns the held events after seq, how many after seq are no
// longer held, and a channel closed at the next event.
func (r *EventRing) since(seq uint64) (evs []ringEvent, missed uint64, changed <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) == 0 {
		return nil, 0, r.changed
	}
	oldest := r.buf[r.head].seq
	if oldest > seq+1 {
		missed = oldest - seq - 1
	}
	// The events after seq are the last next-1-seq of the ring, in order.
	n := min(uint64(len(r.buf)), r.next-1-min(seq, r.next-1))
	evs = make([]ringEvent, 0, n)
	for i := uint64(len(r.buf)) - n; i < uint64(len(r.buf)); i++ {
		evs = append(evs, r.buf[(r.head+int(i))%len(r.buf)])
	}
	return evs, missed, r.changed
}
