package main

// The HTTP API of DESIGN.md: desks, triggers, rollovers and the event
// stream, served on every listen address (host:port or unix:PATH).

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/triggers"
)

// Limits of the API.
const (
	// retryAfterFull is the Retry-After of a 429, in seconds.
	retryAfterFull = 5
	// maxWait bounds ?wait= on GET /v1/desks/{desk}/triggers/{id}.
	maxWait = 5 * time.Minute
	// sseKeepalive is how often an idle event stream gets a comment line.
	sseKeepalive = 15 * time.Second
	// eventRingSize is how many events GET /v1/events can replay.
	eventRingSize = 4096
)

// apiOptions configures the API.
type apiOptions struct {
	// Set is the desks it serves, which may change while it serves; if
	// nil, Desks are.
	Set *desk.Set
	// Desks are the desks it serves when Set is nil.
	Desks []*desk.Desk
	// Token is the operator's bearer token (auth_token_file): everything.
	// With no token of any kind, the API is open (it listens on loopback
	// only) and every request has the operator's trust.
	Token string
	// FeedToken is the feeds' bearer token (feed_token_file): market
	// triggers, and the state of the triggers posted with it; empty: none.
	FeedToken string
	// MetricsToken is the scraper's bearer token (metrics_token_file):
	// GET /metrics alone; empty: none (the operator's token reads it).
	MetricsToken string
	// Clock is deskd's clock (waits, keepalives).
	Clock clock.Clock
	// Events is the ring GET /v1/events replays and follows.
	Events *eventRing
	// Log receives request failures.
	Log zerolog.Logger
	// Check, if set, answers GET /v1/config/diff.
	Check func() desk.ConfigCheck
}

// api serves the HTTP API. Extra handlers (GET /metrics) may be added with
// Handle before it serves.
type api struct {
	o     apiOptions
	desks *desk.Set
	mux   *http.ServeMux
	// tokens are the SHA-256 digests of the bearer tokens, by the
	// credential each gives; a credential without a token has none.
	tokens map[credential][sha256.Size]byte
	// stopping is set when deskd begins to shut down: mutations and
	// GET /healthz are answered 503.
	stopping atomic.Bool
}

func newAPI(o apiOptions) *api {
	a := &api{o: o, desks: o.Set, mux: http.NewServeMux()}
	if a.desks == nil {
		a.desks = desk.NewSet(o.Desks...)
	}
	a.tokens = map[credential][sha256.Size]byte{}
	for c, tok := range map[credential]string{credOperator: o.Token, credFeed: o.FeedToken, credMetrics: o.MetricsToken} {
		if tok != "" {
			a.tokens[c] = sha256.Sum256([]byte(tok))
		}
	}
	a.mux.HandleFunc("GET /healthz", a.healthz)
	a.mux.HandleFunc("GET /v1/desks", a.listDesks)
	a.mux.HandleFunc("GET /v1/desks/{desk}", a.getDesk)
	a.mux.HandleFunc(patternPostTrigger, a.postTrigger)
	a.mux.HandleFunc(patternGetTrigger, a.getTrigger)
	a.mux.HandleFunc("POST /v1/desks/{desk}/rollover", a.postRollover)
	a.mux.HandleFunc("POST /v1/desks/{desk}/fork", a.postFork)
	a.mux.HandleFunc("POST /v1/desks/{desk}/pause", a.postPause)   // pause.go
	a.mux.HandleFunc("POST /v1/desks/{desk}/resume", a.postResume) // pause.go
	a.mux.HandleFunc("GET /v1/config/diff", a.configDiff)
	a.mux.HandleFunc("GET /v1/events", a.events)
	a.mux.HandleFunc("/", a.notFound)
	return a
}

// Handle adds a handler, such as "GET /metrics". It needs the
// operator's credential, like every endpoint but /healthz; GET /metrics
// also takes the scrape token.
func (a *api) Handle(pattern string, h http.Handler) { a.mux.Handle(pattern, h) }

// Refuse makes the API answer 503 to mutations and to GET /healthz: deskd
// is shutting down.
func (a *api) Refuse() { a.stopping.Store(true) }

// ServeHTTP answers 503 to mutations once deskd is shutting down; then,
// for every endpoint but /healthz, finds the request's credential,
// answers 401 without one and 403 when it does not reach the endpoint;
// then routes.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mutation := r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions
	if a.stopping.Load() && (mutation || r.URL.Path == "/healthz") {
		writeError(w, http.StatusServiceUnavailable, "deskd is shutting down")
		return
	}
	if r.URL.Path == "/healthz" {
		a.mux.ServeHTTP(w, r)
		return
	}
	c := a.credential(r)
	if c == credNone {
		w.Header().Set("WWW-Authenticate", `Bearer realm="deskd"`)
		writeError(w, http.StatusUnauthorized, "this request needs a credential: Authorization: Bearer <token> (the operator's token of auth_token_file, "+
			"or a feed's of feed_token_file), or the unix socket of listen")
		return
	}
	_, pattern := a.mux.Handler(r)
	if !c.reaches(pattern) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("%s %s needs the operator's credential (the token of auth_token_file, or the unix socket): %s",
			r.Method, r.URL.Path, c.scope()))
		return
	}
	a.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credentialKey{}, c)))
}

// credential is the trust a request carries.
type credential int

// The credentials, from none to the operator's.
const (
	// credNone: no credential, or a token that is none of deskd's.
	credNone credential = iota
	// credMetrics: the scrape token; GET /metrics only.
	credMetrics
	// credFeed: a feed's token; market triggers, and the state of the
	// triggers posted with it.
	credFeed
	// credOperator: the operator's token, the unix socket, or any request
	// when no token is configured; everything.
	credOperator
)

// credentialKey is the request context's key of its credential.
type credentialKey struct{}

// credentialOf returns the credential ServeHTTP found for r.
func credentialOf(r *http.Request) credential {
	c, _ := r.Context().Value(credentialKey{}).(credential)
	return c
}

// The patterns a feed's token or the scrape token reaches.
const (
	patternPostTrigger = "POST /v1/desks/{desk}/triggers"
	patternGetTrigger  = "GET /v1/desks/{desk}/triggers/{id}"
	patternMetrics     = "GET /metrics"
)

// reaches reports whether c may use the endpoint of a mux pattern. The
// catch-all ("/", or "" for a redirect to a clean path) only says 404 or
// 405, so any credential reaches it.
func (c credential) reaches(pattern string) bool {
	switch {
	case c == credOperator, pattern == "/", pattern == "":
		return true
	case c == credFeed:
		return pattern == patternPostTrigger || pattern == patternGetTrigger
	case c == credMetrics:
		return pattern == patternMetrics
	}
	return false
}

// scope says what c may do, for a 403.
func (c credential) scope() string {
	if c == credMetrics {
		return "the scrape token of metrics_token_file reads GET /metrics only"
	}
	return "a feed's token (feed_token_file) may only post market triggers and read the state of those it posted"
}

// credential returns the credential of r. With no token configured every
// request is the operator's (deskd then listens on loopback only); a
// request over a unix socket is the operator's (the socket is mode 0660:
// only deskd's user and group open it); otherwise the bearer token says,
// compared in constant time with every token (as SHA-256 digests, so that
// not even its length leaks).
func (a *api) credential(r *http.Request) credential {
	if len(a.tokens) == 0 {
		return credOperator
	}
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && addr.Network() == "unix" {
		return credOperator
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return credNone
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	found := credNone
	for _, c := range []credential{credMetrics, credFeed, credOperator} { // every one, whichever matches
		want, ok := a.tokens[c]
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 && ok {
			found = c
		}
	}
	return found
}

// healthResponse is the body of GET /healthz.
type healthResponse struct {
	// Status is "ok", or "degraded" while a desk cannot write to its disk.
	Status string `json:"status"`
	// Storage lists the desks whose writes fail, with the failure.
	Storage map[string]*desk.StorageStatus `json:"storage,omitempty"`
}

// healthz answers 200 while deskd serves and every desk can write to its
// disk; 503 with the failing desks while one cannot (a disk check: the
// desk's last write failed and its probe has not succeeded since).
func (a *api) healthz(w http.ResponseWriter, _ *http.Request) {
	out := healthResponse{Status: "ok"}
	for _, d := range a.desks.List() {
		if st := d.Storage(); st != nil {
			if out.Storage == nil {
				out.Storage = map[string]*desk.StorageStatus{}
			}
			out.Storage[d.Name()] = st
		}
	}
	if out.Storage != nil {
		out.Status = "degraded"
		writeJSON(w, http.StatusServiceUnavailable, out)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) notFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := a.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: method not allowed (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("%s %s: no such endpoint", r.Method, r.URL.Path))
}

// desk returns the desk the path names, or answers 404.
func (a *api) desk(w http.ResponseWriter, r *http.Request) (*desk.Desk, bool) {
	name := r.PathValue("desk")
	d, ok := a.desks.Get(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown desk %q", name))
	}
	return d, ok
}

// desksResponse is the body of GET /v1/desks.
type desksResponse struct {
	Desks []desk.Status `json:"desks"`
}

func (a *api) listDesks(w http.ResponseWriter, _ *http.Request) {
	out := desksResponse{Desks: []desk.Status{}}
	for _, d := range a.desks.List() {
		out.Desks = append(out.Desks, d.Status())
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) getDesk(w http.ResponseWriter, r *http.Request) {
	if d, ok := a.desk(w, r); ok {
		writeJSON(w, http.StatusOK, d.Status())
	}
}

// triggerResponse is the body of a POST /v1/desks/{desk}/triggers answer.
type triggerResponse struct {
	ID    string         `json:"id"`
	State triggers.State `json:"state,omitempty"`
	// Duplicate is true when the id was known: nothing new was queued.
	Duplicate bool `json:"duplicate,omitempty"`
	// Replaced is the queued trigger of the same key this one replaced.
	Replaced string `json:"replaced,omitempty"`
	Error    string `json:"error,omitempty"`
}

func (a *api) postTrigger(w http.ResponseWriter, r *http.Request) {
	d, ok := a.desk(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, triggers.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", triggers.MaxBody))
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "read the body: "+err.Error())
		return
	}
	req, err := triggers.DecodeRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	source := "api"
	if credentialOf(r) == credFeed {
		if err := req.CheckFeed(); err != nil {
			writeError(w, http.StatusForbidden, err.Error())
			return
		}
		source = feedSource(req.Source)
		req.Source = ""
	}
	acc, err := d.Submit(req.Trigger(d.Name(), source))
	switch {
	case errors.Is(err, triggers.ErrQueueFull):
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterFull))
		writeJSON(w, http.StatusTooManyRequests, triggerResponse{ID: acc.ID, Error: err.Error()})
		return
	case errors.Is(err, desk.ErrPaused):
		writeJSON(w, http.StatusLocked, triggerResponse{ID: acc.ID, Error: err.Error()})
		return
	case errors.Is(err, desk.ErrStopped):
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterFull))
		writeError(w, http.StatusServiceUnavailable, err.Error()+" (it may be restarting to take a config change: try again)")
		return
	case errors.Is(err, desk.ErrStorage):
		a.o.Log.Error().Err(err).Str("desk", d.Name()).Msg("queue trigger")
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterFull))
		msg := "the trigger was not queued: the desk cannot write to its disk (" + err.Error() + "); try again with the same id"
		if durable.IsDiskFull(err) {
			msg = "the trigger was not queued: the disk is full (" + err.Error() + "); try again with the same id once space is freed"
		}
		writeJSON(w, http.StatusServiceUnavailable, triggerResponse{ID: acc.ID, Error: msg})
		return
	case err != nil:
		a.o.Log.Error().Err(err).Str("desk", d.Name()).Msg("queue trigger")
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	w.Header().Set("Location", "/v1/desks/"+url.PathEscape(d.Name())+"/triggers/"+url.PathEscape(acc.ID))
	if acc.Duplicate {
		writeJSON(w, http.StatusOK, triggerResponse{ID: acc.ID, State: publicState(acc.State), Duplicate: true})
		return
	}
	writeJSON(w, http.StatusAccepted, triggerResponse{ID: acc.ID, State: acc.State, Replaced: acc.Replaced})
}

// feedSource is the source of a trigger posted with a feed's token:
// "feed", or "feed:<source>" when the feed names one. It marks the
// trigger as the feed's own, which the feed may read back (fedBy).
func feedSource(source string) string {
	if source == "" {
		return "feed"
	}
	return "feed:" + source
}

// fedBy reports whether a trigger's source says a feed's token posted it.
func fedBy(source string) bool { return source == "feed" || strings.HasPrefix(source, "feed:") }

// publicState names a ledger state as the API does: "sent" is running.
func publicState(s triggers.State) triggers.State {
	if s == triggers.StateSent {
		return triggers.StateRunning
	}
	return s
}

func (a *api) getTrigger(w http.ResponseWriter, r *http.Request) {
	d, ok := a.desk(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		var err error
		if wait, err = time.ParseDuration(v); err != nil || wait < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("wait=%q: want a duration such as 30s", v))
			return
		}
		wait = min(wait, maxWait)
	}
	feed := credentialOf(r) == credFeed
	if s, found := d.Trigger(id); feed && found && !fedBy(s.Source) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("desk %s: trigger %q was not posted with a feed's token: a feed reads only the triggers it posted", d.Name(), id))
		return
	}
	var (
		s     desk.TriggerStatus
		found bool
	)
	if wait > 0 {
		s, found = d.WaitTrigger(r.Context(), id, wait)
	} else {
		s, found = d.Trigger(id)
	}
	if !found {
		writeError(w, http.StatusNotFound, fmt.Sprintf("desk %s has no trigger %q", d.Name(), id))
		return
	}
	if feed && !fedBy(s.Source) { // checked again on what is answered: it may have come meanwhile
		writeError(w, http.StatusForbidden, fmt.Sprintf("desk %s: trigger %q was not posted with a feed's token: a feed reads only the triggers it posted", d.Name(), id))
		return
	}
	if feed {
		s.Reply = "" // the desk's answer (positions, orders) is the operator's to read
	}
	writeJSON(w, http.StatusOK, s)
}

// rolloverResponse is the body of a POST /v1/desks/{desk}/rollover answer.
type rolloverResponse struct {
	Desk     string `json:"desk"`
	Previous string `json:"previous"`
	Session  string `json:"session"`
}

func (a *api) postRollover(w http.ResponseWriter, r *http.Request) {
	a.newSession(w, r, (*desk.Desk).RollOver)
}

// postFork starts a new session carrying the current context (deskd fork).
func (a *api) postFork(w http.ResponseWriter, r *http.Request) {
	a.newSession(w, r, (*desk.Desk).Fork)
}

// newSession answers a rollover or a fork with the previous and new session.
func (a *api) newSession(w http.ResponseWriter, r *http.Request, start func(*desk.Desk, context.Context) (string, string, error)) {
	d, ok := a.desk(w, r)
	if !ok {
		return
	}
	prev, id, err := start(d, r.Context())
	switch {
	case errors.Is(err, desk.ErrStopped):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
	default:
		writeJSON(w, http.StatusOK, rolloverResponse{Desk: d.Name(), Previous: prev, Session: id})
	}
}

// events streams the event ring as Server-Sent Events: "id: <epoch>-<n>",
// "event: <topic>", "data: <json>". A client that reconnects with
// Last-Event-ID gets what it missed, as far as the ring reaches back;
// ?backlog=1 starts with everything the ring holds; ?follow=0 ends after
// the backlog; ?desk=NAME keeps one desk's events.
func (a *api) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	only := q.Get("desk")
	if only != "" {
		if _, ok := a.desks.Get(only); !ok {
			writeError(w, http.StatusNotFound, fmt.Sprintf("unknown desk %q", only))
			return
		}
	}
	follow := q.Get("follow") != "0" && q.Get("follow") != "false"
	ring := a.o.Events
	cursor, restarted := ring.cursor(r.Header.Get("Last-Event-ID"), q.Get("backlog") == "1" || !follow)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if restarted {
		fmt.Fprintf(w, ": deskd restarted since event %s; replaying what this deskd holds\n\n", r.Header.Get("Last-Event-ID"))
	}
	for {
		evs, missed, changed := ring.since(cursor)
		if missed > 0 {
			fmt.Fprintf(w, ": %d events were missed: the ring holds the last %d\n\n", missed, eventRingSize)
		}
		for _, e := range evs {
			cursor = e.seq
			if only != "" && e.desk != only {
				continue
			}
			fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", ring.id(e.seq), e.topic, e.data)
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if !follow {
			return
		}
		ping := a.o.Clock.NewTimer(sseKeepalive)
		select {
		case <-changed:
			ping.Stop()
		case <-ping.C():
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil {
				return
			}
		case <-r.Context().Done():
			ping.Stop()
			return
		}
	}
}

// configDiff answers what a reload would change, or why it would be
// refused: the files as they are now against the config in force.
func (a *api) configDiff(w http.ResponseWriter, _ *http.Request) {
	if a.o.Check == nil {
		writeError(w, http.StatusNotImplemented, "this deskd cannot check its config")
		return
	}
	writeJSON(w, http.StatusOK, a.o.Check())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// eventRing keeps the last events of the bus, numbered, for the event
// stream to replay to a client that reconnects.
type eventRing struct {
	epoch  string
	cancel func()

	mu      sync.Mutex
	buf     []ringEvent
	next    uint64 // the number the next event gets (from 1)
	changed chan struct{}
}

type ringEvent struct {
	seq         uint64
	topic, desk string
	data        []byte
}

// newEventRing subscribes to every event of bus; Close unsubscribes.
func newEventRing(bus *event.Bus, now time.Time, size int) *eventRing {
	r := &eventRing{
		epoch: strconv.FormatInt(now.UnixNano(), 36), buf: make([]ringEvent, 0, size), next: 1,
		changed: make(chan struct{}),
	}
	r.cancel = event.SubscribeAll(bus, r.add)
	return r
}

func (r *eventRing) add(e event.Event) {
	data, err := json.Marshal(e)
	if err != nil {
		data = []byte(`{}`)
	}
	topic := e.Topic()
	head := `{"topic":` + strconv.Quote(topic)
	if len(data) > 2 {
		data = append([]byte(head+","), data[1:]...)
	} else {
		data = []byte(head + "}")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := ringEvent{seq: r.next, topic: topic, desk: e.Head().Desk, data: data}
	r.next++
	if len(r.buf) < cap(r.buf) {
		r.buf = append(r.buf, ev)
	} else {
		copy(r.buf, r.buf[1:])
		r.buf[len(r.buf)-1] = ev
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// Close stops taking events.
func (r *eventRing) Close() { r.cancel() }

// id formats an event number as an SSE id.
func (r *eventRing) id(seq uint64) string { return r.epoch + "-" + strconv.FormatUint(seq, 10) }

// cursor returns the number after which a client's stream starts: the
// event of lastID, or the oldest held (backlog) or the newest (live only)
// when there is none. restarted is true when lastID came from another
// deskd process.
func (r *eventRing) cursor(lastID string, backlog bool) (seq uint64, restarted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	oldest := r.next - 1
	if len(r.buf) > 0 {
		oldest = r.buf[0].seq - 1
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
func (r *eventRing) since(seq uint64) (evs []ringEvent, missed uint64, changed <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) > 0 && r.buf[0].seq > seq+1 {
		missed = r.buf[0].seq - seq - 1
	}
	for _, e := range r.buf {
		if e.seq > seq {
			evs = append(evs, e)
		}
	}
	return evs, missed, r.changed
}

// apiServer is the API on its listeners.
type apiServer struct {
	srv     *http.Server
	stop    context.CancelFunc
	addrs   []string
	serving sync.WaitGroup
	errs    chan error
}

// listenAPI opens every listen address: host:port over TCP, unix:PATH as
// a unix socket (a stale socket file left by a crash is replaced; one in
// use is an error).
func listenAPI(addrs []string) ([]net.Listener, error) {
	var ls []net.Listener
	closeAll := func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}
	for _, a := range addrs {
		var (
			l   net.Listener
			err error
		)
		if p, ok := strings.CutPrefix(a, config.UnixPrefix); ok {
			l, err = listenUnix(p)
		} else {
			l, err = net.Listen("tcp", a)
		}
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("listen on %s: %w", a, err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s is in use by another process", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	// The socket is made in a fresh folder only deskd's user can enter
	// (0700), given its mode there, and only then renamed into place: at no
	// moment can anyone outside deskd's user and group connect, whatever
	// the umask (a connection keeps the operator's trust for its life).
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".sock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	staged := filepath.Join(tmp, "s")
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: staged, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ul.SetUnlinkOnClose(false) // it is unlinked at path, below, not at staged
	if err := os.Chmod(staged, 0o660); err == nil {
		err = os.Rename(staged, path)
	}
	if err != nil {
		_ = ul.Close()
		return nil, err
	}
	return &unixListener{UnixListener: ul, path: path}, nil
}

// unixListener removes its socket file when it is closed.
type unixListener struct {
	*net.UnixListener
	path string
}

// Close closes the listener and removes its socket file.
func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	if rerr := os.Remove(l.path); err == nil && rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = rerr
	}
	return err
}

// serveAPI serves h on ls until Shutdown.
func serveAPI(ctx context.Context, h http.Handler, ls []net.Listener) *apiServer {
	base, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &apiServer{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			IdleTimeout:       2 * time.Minute,
			BaseContext:       func(net.Listener) context.Context { return base },
		},
		stop: stop,
		errs: make(chan error, len(ls)),
	}
	for _, l := range ls {
		addr := l.Addr().String()
		if l.Addr().Network() == "unix" {
			addr = config.UnixPrefix + addr
		}
		s.addrs = append(s.addrs, addr)
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.errs <- fmt.Errorf("serve the API on %s: %w", addr, err)
			}
		}()
	}
	return s
}

// Addrs returns the addresses served, with the ports the system chose.
func (s *apiServer) Addrs() []string { return s.addrs }

// Errs delivers an error if serving stops on its own.
func (s *apiServer) Errs() <-chan error { return s.errs }

// Shutdown ends the event streams and waits, within timeout, for the
// requests in flight.
func (s *apiServer) Shutdown(timeout time.Duration) error {
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	s.serving.Wait()
	return err
}
