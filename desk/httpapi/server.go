// Package httpapi is deskd's HTTP API (DESIGN.md): the desks, their
// triggers, rollovers, forks, pauses, the config diff and the event stream,
// served over the running set of desks on every listen address (host:port
// or unix:PATH), with the operator's, the feeds' and the scraper's
// credentials; and Client, its client, which the CLI commands use.
package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
)

// Limits of the API.
const (
	// retryAfterFull is the Retry-After of a 429 or a retryable 503, in
	// seconds.
	retryAfterFull = 5
	// maxWait bounds ?wait= on GET /v1/desks/{desk}/triggers/{id}.
	maxWait = 5 * time.Minute
	// sseKeepalive is how often an idle event stream gets a comment line.
	sseKeepalive = 15 * time.Second
)

// Desks is what the server needs of the running desks, which may change
// while it serves. *desk.Set is one.
type Desks interface {
	// Get returns the desk called name.
	Get(name string) (*desk.Desk, bool)
	// List returns every desk, sorted by name.
	List() []*desk.Desk
}

var _ Desks = (*desk.Set)(nil)

// rejections is what the server reads of the config files refused, when
// its Desks has them (*desk.Set does).
type rejections interface {
	ConfigRejections() []desk.ConfigRejection
}

var _ rejections = (*desk.Set)(nil)

// failedDesks is what the server reads of the desks that failed to start,
// when its Desks has them (*desk.Set does).
type failedDesks interface {
	RunningAndFailed() ([]*desk.Desk, map[string]desk.Failure)
	Statuses() []desk.Status
}

var _ failedDesks = (*desk.Set)(nil)

// storesTrouble is what the server reads of the desks a cluster host
// stopped because the cluster's stores could not make their writes
// durable, when its Desks has them (*desk.Set does).
type storesTrouble interface {
	StoresTrouble() map[string]*desk.StorageStatus
}

var _ storesTrouble = (*desk.Set)(nil)

// runningAndFailed returns the desks that run and those that failed to
// start (by name), in one look.
func (s *Server) runningAndFailed() ([]*desk.Desk, map[string]desk.Failure) {
	if f, ok := s.desks.(failedDesks); ok {
		return f.RunningAndFailed()
	}
	return s.desks.List(), nil
}

// statuses returns the status of every desk, those that failed to start
// too (state failed), sorted by name.
func (s *Server) statuses() []desk.Status {
	if f, ok := s.desks.(failedDesks); ok {
		return f.Statuses()
	}
	var out []desk.Status
	for _, d := range s.desks.List() {
		out = append(out, d.Status())
	}
	return out
}

// configRejections returns the current config rejections; never nil.
func (s *Server) configRejections() []desk.ConfigRejection {
	if r, ok := s.desks.(rejections); ok {
		if rs := r.ConfigRejections(); rs != nil {
			return rs
		}
	}
	return []desk.ConfigRejection{}
}

// Options configures a Server.
type Options struct {
	// Desks are the desks served; nil: none.
	Desks Desks
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
	// Clock is deskd's clock (the event stream's keepalives); nil: the
	// real clock.
	Clock clock.Clock
	// Events is the ring GET /v1/events replays and follows; nil: that
	// endpoint answers 501.
	Events *EventRing
	// Log receives request failures.
	Log zerolog.Logger
	// Check, if set, answers GET /v1/config/diff; nil: 501.
	Check func() desk.ConfigCheck
	// Console, if set, is the web console (desk/console): served at GET /
	// and GET /console/... without a credential, since the page holds no
	// data; what it shows it asks the API for, with the operator's.
	Console http.Handler
	// Files is what the desk page's endpoints need beyond the desks'
	// folders (deskfiles.go).
	Files Files
	// NATS, if set, is the NATS connection's state (nats.go), in
	// GET /healthz and GET /v1/desks; nil: NATS is not configured.
	NATS func() *NATSStatus
	// Notify, if set, is the notification targets' state (notify.go), in
	// GET /healthz and GET /v1/desks; nil: no notify targets.
	Notify func() []NotifyStatus
	// Approvals, if set, are the tool calls that wait for an operator's
	// decision (approvals.go); nil: those endpoints answer 404.
	Approvals Approvals
	// Listen are the listen addresses as configured (listen): the host
	// name of each is accepted in Host (hosts.go).
	Listen []string
	// AllowedHosts, if set, returns the names of allowed_hosts in force
	// (config.Config.AllowedHosts), read at each request over TCP so that
	// a reload applies at once; every other name but localhost is
	// refused in Host (hosts.go).
	AllowedHosts func() []string
	// Host is this host's name in its cluster (cluster.host), which
	// GET /v1/proof names (proof.go); empty: no cluster.
	Host string
}

// Server serves the HTTP API. Extra handlers (GET /metrics) may be added
// with Handle before it serves.
type Server struct {
	o     Options
	desks Desks
	mux   *routes // routes.go
	// hosts is the Host rule of every request over TCP (hosts.go).
	hosts hostRule
	// tokens are the SHA-256 digests of the bearer tokens, by the
	// credential each gives; a credential without a token has none.
	tokens map[credential][sha256.Size]byte
	// stopping is set when deskd begins to shut down: mutations and
	// GET /healthz are answered 503.
	stopping atomic.Bool
	// signIns are the console's (login.go); csrf refuses the mutations
	// a browser marks cross-origin.
	signIns *signIns
	csrf    *http.CrossOriginProtection
	// throttle refuses the tokens of an address that guessed (throttle.go).
	throttle *throttle
}

// New returns the API over o.Desks.
func New(o Options) *Server {
	s := &Server{o: o, desks: o.Desks, mux: newRoutes(), hosts: newHostRule(o.Listen, o.AllowedHosts)}
	if s.desks == nil {
		s.desks = desk.NewSet()
	}
	if s.o.Clock == nil {
		s.o.Clock = clock.Real()
	}
	s.signIns, s.csrf = newSignIns(s.o.Clock), http.NewCrossOriginProtection()
	s.throttle = newThrottle(s.o.Clock)
	s.tokens = map[credential][sha256.Size]byte{}
	for c, tok := range map[credential]string{credOperator: o.Token, credFeed: o.FeedToken, credMetrics: o.MetricsToken} {
		if tok != "" {
			s.tokens[c] = sha256.Sum256([]byte(tok))
		}
	}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /v1/desks", s.listDesks)
	s.mux.HandleFunc("GET /v1/desks/{desk}", s.getDesk)
	s.mux.HandleFunc(patternPostTrigger, s.postTrigger) // trigger.go
	s.mux.HandleFunc(patternGetTrigger, s.getTrigger)   // trigger.go
	s.mux.HandleFunc("POST /v1/desks/{desk}/rollover", s.postRollover)
	s.mux.HandleFunc("POST /v1/desks/{desk}/fork", s.postFork)
	s.mux.HandleFunc("POST /v1/desks/{desk}/pause", s.postPause)   // pause.go
	s.mux.HandleFunc("POST /v1/desks/{desk}/resume", s.postResume) // pause.go
	s.mux.HandleFunc("GET /v1/config/diff", s.configDiff)

	// The console's sign-in (login.go), and acknowledging an interrupted
	// trigger (ack.go).
	s.mux.HandleFunc("POST /v1/login", s.postLogin)
	s.mux.HandleFunc("POST /v1/logout", s.postLogout)
	s.mux.HandleFunc("GET /v1/whoami", s.whoami)
	s.mux.HandleFunc("POST /v1/desks/{desk}/triggers/{id}/ack", s.postAck)

	s.mux.HandleFunc("GET /v1/events", s.events) // events.go
	s.mux.HandleFunc(patternProof, s.getProof)   // proof.go
	s.mux.HandleFunc(patternOpenAPI, s.openAPI)  // openapi.go
	s.routeFiles()                               // deskfiles.go
	s.routeReplays()                             // replays.go
	s.routeApprovals()                           // approvals.go
	if o.Console != nil {
		s.mux.Handle("GET /{$}", o.Console)
		s.mux.Handle("GET /console/", o.Console)
	}
	s.mux.HandleFunc("/", s.notFound)
	return s
}

// Handle adds a handler, such as "GET /metrics". It needs the
// operator's credential, like every endpoint but /healthz; GET /metrics
// also takes the scrape token.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Refuse makes the API answer 503 to mutations and to GET /healthz: deskd
// is shutting down.
func (s *Server) Refuse() { s.stopping.Store(true) }

// ServeHTTP answers 421 to a request over TCP whose Host is not one of
// deskd's names (hosts.go: against DNS rebinding); sets the headers that
// keep a browser from sniffing, framing or running what it answers
// (headers.go); answers 503 to mutations once
// deskd is shutting down; 429 to a token from an address that guessed too
// many (throttle.go); then
// refuses what a browser must not send (guard: cross-origin mutations,
// cookie-credentialed ones that are not JSON); then, for every endpoint
// but /healthz, the console and POST /v1/login, finds the request's
// credential, answers 401 without one and 403 when it does not reach the
// endpoint; then routes. Each request is logged at trace level when it
// ends.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.traced(w, r, s.serve)
}

// serve is ServeHTTP's body.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	secureHeaders(w.Header()) // headers.go; the console's handler sets its own
	if !s.hosts.check(w, r) { // hosts.go: before anything else, credentials included
		return
	}
	if s.stopping.Load() && (mutation(r) || r.URL.Path == "/healthz") {
		writeError(w, http.StatusServiceUnavailable, "deskd is shutting down")
		return
	}
	if s.throttled(w, r) { // throttle.go
		return
	}
	if r.URL.Path == "/healthz" || s.public(r) {
		if s.guard(w, r, "") {
			s.mux.ServeHTTP(w, r)
		}
		return
	}
	c, via := s.credential(r)
	if c == credNone && r.Header.Get("Authorization") != "" {
		s.failedToken(r, "request refused: a token that is none of deskd's")
	}
	if !s.guard(w, r, via) {
		return
	}
	if c == credNone {
		w.Header().Set("WWW-Authenticate", `Bearer realm="deskd"`)
		writeError(w, http.StatusUnauthorized, "this request needs a credential: Authorization: Bearer <token> (the operator's token of auth_token_file, "+
			"or a feed's of feed_token_file), the web console's sign-in (POST /v1/login), or the unix socket of listen")
		return
	}
	_, pattern := s.mux.Handler(r)
	if !c.reaches(pattern) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("%s %s needs the operator's credential (the token of auth_token_file, or the unix socket): %s",
			r.Method, r.URL.Path, c.scope()))
		return
	}
	ctx := context.WithValue(context.WithValue(r.Context(), credentialKey{}, c), viaKey{}, via)
	s.mux.ServeHTTP(w, r.WithContext(ctx))
}

// public reports whether r asks for the web console's page or assets,
// which need no credential, signs in (POST /v1/login) or asks for a
// proof (GET /v1/proof, proof.go).
func (s *Server) public(r *http.Request) bool {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/login" || r.Method == http.MethodGet && r.URL.Path == PathProof {
		return true
	}
	if s.o.Console == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	return r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/console/")
}

// healthz answers 200 while deskd serves and every desk can write to its
// disk; 503 with the failing desks while one cannot (a disk check: the
// desk's last write failed and its probe has not succeeded since). The
// config files refused are listed, but leave it 200: the desks serve, on
// their last good config. So are the desks that failed to start: the
// others serve.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	out := HealthResponse{Status: "ok", NATS: s.natsStatus(), Notify: s.notifyStatus()}
	if rs := s.configRejections(); len(rs) > 0 {
		out.ConfigRejected = rs
	}
	desks, failed := s.runningAndFailed()
	if len(failed) > 0 {
		out.Failed = failed // the process serves, and so do the other desks: still 200
	}
	for _, d := range desks {
		if st := d.Storage(); st != nil {
			if out.Storage == nil {
				out.Storage = map[string]*desk.StorageStatus{}
			}
			out.Storage[d.Name()] = st
		}
	}
	if t, ok := s.desks.(storesTrouble); ok {
		for name, st := range t.StoresTrouble() { // a cluster's quorum lost: no desk write can be durable
			if out.Storage == nil {
				out.Storage = map[string]*desk.StorageStatus{}
			}
			out.Storage[name] = st
		}
	}
	if out.Storage != nil {
		out.Status = "degraded"
		writeJSON(w, http.StatusServiceUnavailable, out)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// notFound answers 405 with Allow when another method has the path, and
// 404 otherwise.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
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

// desk returns the desk the path names, or answers why it does not run
// here (notHere).
func (s *Server) desk(w http.ResponseWriter, r *http.Request) (*desk.Desk, bool) {
	name := r.PathValue("desk")
	p := s.locate(name)
	if p.Desk == nil {
		s.notHere(w, r, name, p)
		return nil, false
	}
	return p.Desk, true
}

func (s *Server) listDesks(w http.ResponseWriter, _ *http.Request) {
	out := DesksResponse{Desks: []desk.Status{}, ConfigRejected: s.configRejections(), NATS: s.natsStatus(), Notify: s.notifyStatus()}
	if loc := s.o.Files.Day.Location; loc != nil {
		out.TimeZone = loc.String()
	}
	out.Desks = append(out.Desks, s.statuses()...) // a desk that failed to start too, state failed
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getDesk(w http.ResponseWriter, r *http.Request) {
	p := s.locate(r.PathValue("desk"))
	switch {
	case p.Desk != nil:
		st := p.Desk.Status()
		if p.Owned {
			st.Owner = &p.Owner
		}
		writeJSON(w, http.StatusOK, st)
	case p.State != "": // standby, starting, failed: its status says so
		writeJSON(w, http.StatusOK, p.Status())
	default:
		s.notHere(w, r, r.PathValue("desk"), p)
	}
}

// configDiff answers what a reload would change, or why it would be
// refused: the files as they are now against the config in force.
func (s *Server) configDiff(w http.ResponseWriter, _ *http.Request) {
	if s.o.Check == nil {
		writeError(w, http.StatusNotImplemented, "this deskd cannot check its config")
		return
	}
	writeJSON(w, http.StatusOK, s.o.Check())
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
