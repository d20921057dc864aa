// Package mcphost connects deskd to MCP (Model Context Protocol) servers
// and offers their tools to the desks' models.
//
// A Host supervises every server of mcp_servers that a running desk uses:
// it starts a stdio server's process (and kills it with deskd, even after
// a SIGKILL), connects to an HTTP one, lists its tools, and reconnects with
// backoff when the server dies or cannot be reached. A desk's Toolset
// offers the tools its mcp entries allow of the servers that are up, as
// mcp__<server>__<tool>, and tells the model which are unavailable and why.
package mcphost

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
)

// Defaults of Options.
const (
	// DefaultBackoff is the wait before the first reconnection.
	DefaultBackoff = time.Second
	// DefaultGrace is Options.Grace's default.
	DefaultGrace = 2 * time.Second
	// DefaultMaxBackoff caps the doubling wait between reconnections.
	DefaultMaxBackoff = time.Minute
)

// States of a server (ServerStatus.State).
const (
	// StateStopped: no running desk uses the server.
	StateStopped = "stopped"
	// StateStarting: deskd is starting or connecting to it.
	StateStarting = "starting"
	// StateUp: connected, its tools listed.
	StateUp = "up"
	// StateDown: it could not be started or reached, or went away; deskd
	// tries again at RetryAt.
	StateDown = "down"
)

// Transports of a server (ServerStatus.Transport).
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Options are a Host's dependencies.
type Options struct {
	// Clock times the calls, the connections and the backoff (nil: the
	// wall clock).
	Clock clock.Clock
	// Bus gets mcp.server.up and mcp.server.down (nil: none are sent).
	Bus *event.Bus
	// Log gets a line when a server comes up or goes down (never a
	// secret), and a down stdio server's stderr at debug level.
	Log zerolog.Logger
	// Backoff is the wait before the first reconnection (default
	// DefaultBackoff); it doubles up to MaxBackoff (default
	// DefaultMaxBackoff), and starts again once a connection has lasted
	// MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// Grace is how long a stdio server has to exit once its stdin is
	// closed, and again after SIGTERM, before it is killed; to take in a
	// message deskd writes once its request was given up on; and how long
	// an HTTP server has to answer the DELETE that ends its session
	// (default DefaultGrace). It bounds a process or a socket, the
	// operating system's time, so it runs on the wall clock even when
	// Clock is a fake one.
	Grace time.Duration
}

// ServerStatus is what a server is doing now.
type ServerStatus struct {
	Name string `json:"name"`
	// Transport is TransportStdio or TransportHTTP.
	Transport string `json:"transport"`
	// State is StateStopped, StateStarting, StateUp or StateDown.
	State string `json:"state"`
	// Error says why a down server is down.
	Error string `json:"error,omitempty"`
	// Since is when the server entered State.
	Since time.Time `json:"since"`
	// RetryAt is when deskd tries a down server again.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Tools are the names of an up server's tools the model is offered,
	// as the server has them, each once (Host.DeskStatus: the desk's
	// model, whose file may allow only some; Host.Status: any desk's
	// that allows them all).
	Tools []string `json:"tools,omitempty"`
	// LeftOut are the other tools an up server lists, once each, and the
	// tools a desk's file names that it does not list, with why they are
	// not offered.
	LeftOut []LeftOut `json:"left_out,omitempty"`
	// Truncated says how deskd cut an up server's listing (more than
	// MaxServerTools tools, or too many pages), "" when it did not.
	Truncated string `json:"truncated,omitempty"`
	// Restarts counts the restarts since deskd started the server first
	// (after a failure, or for a changed setting).
	Restarts int `json:"restarts"`
	// PID is an up stdio server's process.
	PID int `json:"pid,omitempty"`
}

// LeftOut is a tool of a server that a desk's model is not offered.
type LeftOut struct {
	// Tool is its name as the server lists it, cleaned and cut ("" for a
	// tool with no name).
	Tool string `json:"tool"`
	// Why says why it is left out: its name, its schema, listed again,
	// not allowed by the desk's file, over MaxServerSpecBytes, not listed.
	Why string `json:"why"`
}

// Host supervises the MCP servers the desks use.
type Host struct {
	o Options

	ops sync.Mutex // serialises Configure, Use and Close

	mu      sync.Mutex
	servers map[string]*server
	uses    map[string][]string // by desk
	closed  bool
}

// New returns a Host with no servers.
func New(o Options) *Host {
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.MaxBackoff < o.Backoff {
		o.MaxBackoff = o.Backoff
	}
	return &Host{o: o, servers: map[string]*server{}, uses: map[string][]string{}}
}

// Configure sets the servers (mcp_servers), at start and at each reload:
// a new one starts if a desk uses it, a running one whose settings changed
// (a secret file's content too: Secrets.Digest) restarts, a removed one
// stops.
func (h *Host) Configure(servers map[string]*config.MCPServer) {
	if !h.lockOpen() {
		return
	}
	defer h.ops.Unlock()
	var stop, restart []*server
	for name, s := range h.servers {
		cfg, ok := servers[name]
		switch {
		case !ok || cfg == nil:
			delete(h.servers, name)
			stop = append(stop, s)
		case !reflect.DeepEqual(s.config(), cfg):
			if reaches(s.config()) != reaches(cfg) {
				restart = append(restart, s)
			}
			s.setConfig(cfg) // a new timeout or max_result applies to the next call
		}
	}
	for name, cfg := range servers {
		if _, ok := h.servers[name]; !ok && cfg != nil {
			h.servers[name] = newServer(h, name, cfg)
		}
	}
	h.mu.Unlock()
	stopAll(stop)
	for _, s := range restart {
		if s.running() {
			s.stop()
			s.restarted()
		}
	}
	h.apply()
}

// lockOpen takes h.ops, then h.mu, for a change of the servers, and
// reports true; on a closed host it takes neither and reports false. The
// caller unlocks h.mu when its change is made, and h.ops when it is done.
func (h *Host) lockOpen() bool {
	h.ops.Lock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.ops.Unlock()
		return false
	}
	return true
}

// reach is what deskd starts or reaches a server with: a change of it
// restarts the server; a change of anything else (timeout, max_result)
// does not.
type reach struct {
	command, env, url, headersFile, secrets string
}

// reaches returns cfg's reach, comparable.
func reaches(cfg *config.MCPServer) reach {
	return reach{command: fmt.Sprintf("%q", cfg.Command), env: fmt.Sprintf("%v|%v|%v", cfg.Env, cfg.EnvFiles, cfg.PassEnv), url: cfg.URL,
		headersFile: cfg.HeadersFile, secrets: cfg.Secrets.Digest + fmt.Sprintf("%v|%v", cfg.Secrets.Env, cfg.Secrets.Headers)}
}

// Use says which servers a desk uses now: a server starts when its first
// desk uses it and stops when none does. Use(desk, nil) when a desk stops.
func (h *Host) Use(desk string, servers []string) {
	if !h.lockOpen() {
		return
	}
	defer h.ops.Unlock()
	if len(servers) == 0 {
		delete(h.uses, desk)
	} else {
		h.uses[desk] = append([]string(nil), servers...)
	}
	h.mu.Unlock()
	h.apply()
}

// apply starts the used servers that are not running and stops the
// running ones no desk uses. The caller holds ops.
func (h *Host) apply() {
	h.mu.Lock()
	need := map[string]bool{}
	for _, names := range h.uses {
		for _, n := range names {
			need[n] = true
		}
	}
	var start, stop []*server
	for name, s := range h.servers {
		switch {
		case need[name] && !s.running():
			start = append(start, s)
		case !need[name] && s.running():
			stop = append(stop, s)
		}
	}
	h.mu.Unlock()
	stopAll(stop)
	for _, s := range start {
		s.start()
	}
}

// Status returns every configured server's status, sorted by name; an
// up server's Tools are those a desk that allows all of them is offered.
func (h *Host) Status() []ServerStatus {
	h.mu.Lock()
	list := make([]*server, 0, len(h.servers))
	for _, s := range h.servers {
		list = append(list, s)
	}
	h.mu.Unlock()
	out := make([]ServerStatus, 0, len(list))
	for _, s := range list {
		out = append(out, s.statusFor(config.DeskMCP{Tools: []string{config.AllMCPTools}}))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Close stops every server and waits for them: no process is left. The
// Host does nothing after.
func (h *Host) Close() error {
	h.ops.Lock()
	defer h.ops.Unlock()
	h.mu.Lock()
	h.closed = true
	list := make([]*server, 0, len(h.servers))
	for _, s := range h.servers {
		list = append(list, s)
	}
	h.mu.Unlock()
	return stopAll(list)
}

// lookup returns the configured server of that name, or nil.
func (h *Host) lookup(name string) *server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.servers[name]
}

// stopAll stops the servers at once, and waits for all of them.
func stopAll(list []*server) error {
	var wg sync.WaitGroup
	errs := make([]error, len(list))
	for i, s := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.stop()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
