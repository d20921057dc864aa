package mcphost

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
)

// server is one configured server and its supervisor, when it runs.
type server struct {
	h    *Host
	name string

	mu       sync.Mutex
	cfg      *config.MCPServer
	state    string
	err      string
	since    time.Time
	retryAt  time.Time
	tools    toolList
	restarts int
	live     *conn
	cancel   context.CancelFunc // set while the supervisor runs
	done     chan struct{}      // closed when the supervisor has ended
}

func newServer(h *Host, name string, cfg *config.MCPServer) *server {
	return &server{h: h, name: name, cfg: cfg, state: StateStopped, since: h.o.Clock.Now()}
}

func (s *server) config() *config.MCPServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

func (s *server) setConfig(cfg *config.MCPServer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg
}

func (s *server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancel != nil
}

func (s *server) restarted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.restarts++
}

// start runs the supervisor, unless it runs.
func (s *server) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return
	}
	// The supervisor is a root of its own: its life is the server's
	// running, from start to stop, not any caller's request.
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go s.supervise(ctx, s.done)
}

// stop ends the supervisor and waits for it: the connection is closed and
// a stdio server's process is gone.
func (s *server) stop() error {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancel, s.done = nil, nil
	s.set(StateStopped, "", time.Time{})
	return nil
}

// set changes the state; the caller holds mu.
func (s *server) set(state, errText string, retryAt time.Time) {
	s.state, s.err, s.retryAt, s.since = state, errText, retryAt, s.h.o.Clock.Now()
	if state != StateUp {
		s.tools, s.live = toolList{}, nil
	}
}

// supervise connects, waits for the connection to end, and reconnects
// after a doubling backoff, until ctx ends. Each connection reads the
// server's settings as they are then (a reload's new timeout applies to a
// reconnection; a change of how it is reached restarts the supervisor).
func (s *server) supervise(ctx context.Context, done chan struct{}) {
	defer close(done)
	o := s.h.o
	backoff := o.Backoff
	for {
		s.mu.Lock()
		s.set(StateStarting, "", time.Time{})
		s.mu.Unlock()
		c, err := dial(ctx, o.Clock, o.Grace, s.config)
		if ctx.Err() != nil {
			if c != nil {
				c.close()
			}
			return
		}
		if err == nil {
			upAt := o.Clock.Now()
			s.up(c, c.tools)
			err = s.serve(ctx, c)
			c.close()
			if ctx.Err() != nil {
				return
			}
			if o.Clock.Now().Sub(upAt) >= o.MaxBackoff {
				backoff = o.Backoff
			}
			if tail := c.stderr(); tail != "" {
				o.Log.Debug().Str("server", s.name).Str("stderr", hide(s.config(), tail)).Msg("MCP server's stderr")
			}
		}
		if !s.down(ctx, err, backoff) {
			return
		}
		backoff = min(2*backoff, o.MaxBackoff)
		s.restarted()
	}
}

// relistEvery is the least time, on the host's clock, between two
// re-listings of a server's tools: a server that says its tools changed
// in a loop is not listed in a loop.
const relistEvery = time.Second

// serve waits for the connection to end (its reason) or ctx to, and lists
// the tools again when the server says they changed: at once the first
// time, then at most once every relistEvery.
func (s *server) serve(ctx context.Context, c *conn) error {
	clk := s.h.o.Clock
	var last time.Time // of the last re-listing
	var due clock.Timer
	var dueC <-chan time.Time // set while a re-listing waits
	defer func() {
		if due != nil {
			due.Stop()
		}
	}()
	relist := func() {
		last = clk.Now()
		if err := s.relist(ctx, c); err != nil {
			c.fail(err)
		}
	}
	for {
		select {
		case <-c.done:
			return c.failure()
		case <-ctx.Done():
			return ctx.Err()
		case <-c.changed:
			switch now := clk.Now(); {
			case dueC != nil: // one is due already
			case last.IsZero() || now.Sub(last) >= relistEvery:
				relist()
			default:
				due = clk.NewTimer(last.Add(relistEvery).Sub(now))
				dueC = due.C()
			}
		case <-dueC:
			dueC = nil
			relist()
		}
	}
}

// relist reads the server's tools again, and announces the new list if
// it changed.
func (s *server) relist(ctx context.Context, c *conn) error {
	cfg := s.config()
	lctx, stop, timedOut := withTimeout(ctx, s.h.o.Clock, timeout(cfg))
	tools, err := c.list(lctx)
	stop()
	if timedOut() {
		err = fmt.Errorf("list tools: no answer within %s", timeout(cfg))
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	same := reflect.DeepEqual(s.tools, tools)
	s.mu.Unlock()
	if !same {
		s.up(c, tools)
	}
	return nil
}

// up makes c, with those tools, the live connection and announces it.
func (s *server) up(c *conn, tools toolList) {
	s.mu.Lock()
	s.set(StateUp, "", time.Time{})
	s.live, s.tools = c, tools
	restarts := s.restarts
	s.mu.Unlock()
	s.h.o.Log.Debug().Str("server", s.name).Int("tools", len(tools.tools)).Int("restarts", restarts).Msg("MCP server up")
	if tools.more || tools.pages {
		s.h.o.Log.Warn().Str("server", s.name).Int("max_tools", MaxServerTools).Msg("MCP server lists more tools (or pages) than deskd takes")
	}
	if s.h.o.Bus == nil {
		return
	}
	event.Publish(s.h.o.Bus, event.MCPServerUp{Header: event.Header{At: s.h.o.Clock.Now()}, Server: s.name,
		Tools: len(tools.tools), Restarts: restarts})
}

// down marks the server down, announces it, and waits for the backoff; it
// reports false when ctx ended first.
func (s *server) down(ctx context.Context, err error, backoff time.Duration) bool {
	o := s.h.o
	retryAt := o.Clock.Now().Add(backoff)
	text := hide(s.config(), fmt.Sprint(err))
	s.mu.Lock()
	s.set(StateDown, text, retryAt)
	s.mu.Unlock()
	o.Log.Debug().Str("server", s.name).Str("error", text).Time("retry_at", retryAt).Msg("MCP server down")
	if o.Bus != nil {
		event.Publish(o.Bus, event.MCPServerDown{Header: event.Header{At: o.Clock.Now()}, Server: s.name, Error: text, RetryAt: retryAt})
	}
	return clock.Sleep(ctx, o.Clock, backoff) == nil
}

// snapshot is a server's state, for a toolset.
type snapshot struct {
	cfg   *config.MCPServer
	state string
	err   string
	tools toolList
	live  *conn
}

func (s *server) snapshot() snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return snapshot{cfg: s.cfg, state: s.state, err: s.err, tools: s.tools, live: s.live}
}

// statusFor is the server's status for a desk whose entry is use: while
// it is up, its tools that entry's model is offered, and those left out
// (the plan of Toolset's Tools, from the same snapshot).
func (s *server) statusFor(use config.DeskMCP) ServerStatus {
	s.mu.Lock()
	st := ServerStatus{Name: s.name, Transport: transport(s.cfg), State: s.state, Error: s.err, Since: s.since,
		RetryAt: s.retryAt, Restarts: s.restarts}
	if s.live != nil && s.live.proc != nil {
		st.PID = s.live.proc.pid
	}
	snap := snapshot{cfg: s.cfg, state: s.state, err: s.err, tools: s.tools, live: s.live}
	s.mu.Unlock()
	if snap.state == StateUp {
		st.Tools, st.LeftOut = entry{server: s.name, use: use, snap: snap, known: true}.plan().offers()
		st.Truncated = snap.tools.truncated()
	}
	return st
}

func transport(cfg *config.MCPServer) string {
	if cfg.URL != "" {
		return TransportHTTP
	}
	return TransportStdio
}
