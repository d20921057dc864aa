package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/router"
)

// mcpRunner runs the MCP tools a replay may run for real (--allow-tools,
// none under approve), on a host of its own that starts only their
// servers, and offers each server only those tools: no other tool of any
// server can be called through it.
type mcpRunner struct {
	host *mcphost.Host
	ts   router.Toolset
	clk  clock.Clock

	mu    sync.Mutex
	up    map[string]bool
	waits map[string]chan struct{}
	stop  func()
}

// startMCP starts the servers of the MCP tools among allowed (nil when
// there are none). Their connections are made in the background; a call
// waits for its server (up to the server's timeout).
func startMCP(cfg *config.Config, desk string, allowed []string, clk clock.Clock, log zerolog.Logger) (*mcpRunner, error) {
	uses := map[string]config.DeskMCP{}
	servers := map[string]*config.MCPServer{}
	for _, name := range allowed {
		server, tool, ok := mcphost.SplitToolName(name)
		if !ok {
			continue
		}
		srv, ok := cfg.MCPServers[server]
		if !ok {
			return nil, fmt.Errorf("--allow-tools %s: no MCP server %q in %s", name, server, cfg.Path)
		}
		servers[server] = srv
		use := uses[server]
		use.Server = server
		use.Tools = append(use.Tools, tool)
		uses[server] = use
	}
	if len(uses) == 0 {
		return nil, nil
	}
	bus := event.New()
	m := &mcpRunner{clk: clk, up: map[string]bool{}, waits: map[string]chan struct{}{}}
	for s := range uses {
		m.waits[s] = make(chan struct{})
	}
	m.stop = event.Subscribe(bus, func(e event.MCPServerUp) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if c, ok := m.waits[e.Server]; ok && !m.up[e.Server] {
			m.up[e.Server] = true
			close(c)
		}
	})
	m.host = mcphost.New(mcphost.Options{Clock: clk, Bus: bus, Log: log})
	m.host.Configure(servers)
	names := make([]string, 0, len(uses))
	for s := range uses {
		names = append(names, s)
	}
	sort.Strings(names)
	m.host.Use(desk, names)
	m.ts = m.host.Toolset(desk, uses)
	return m, nil
}

// run returns the runner of MCP tool name.
func (m *mcpRunner) run(cfg *config.Config, name string) func(context.Context, json.RawMessage) (string, error) {
	server, _, _ := mcphost.SplitToolName(name)
	timeout := config.DefaultMCPTimeout
	if srv, ok := cfg.MCPServers[server]; ok && srv.Timeout > 0 {
		timeout = srv.Timeout
	}
	return func(ctx context.Context, args json.RawMessage) (string, error) {
		m.mu.Lock()
		wait := m.waits[server]
		m.mu.Unlock()
		timer := m.clk.NewTimer(timeout)
		defer timer.Stop()
		select {
		case <-wait:
		case <-timer.C():
			return "", fmt.Errorf("MCP server %s did not come up within %s", server, timeout)
		case <-ctx.Done():
			return "", ctx.Err()
		}
		for _, t := range m.ts.Tools() {
			if t.Spec.Name == name {
				return t.Run(ctx, args)
			}
		}
		return "", fmt.Errorf("MCP server %s does not offer %s", server, name)
	}
}

// close stops the servers.
func (m *mcpRunner) close() error {
	if m == nil {
		return nil
	}
	m.stop()
	return m.host.Close()
}

// shiftedClock is a clock that reads as the original day did: inner's
// time moved by an offset that each trigger sets to its original time, so
// that the candidate's session is of the trading date replayed and each
// turn happens when the original did. Timers run on inner.
type shiftedClock struct {
	inner  clock.Clock
	mu     sync.Mutex
	offset time.Duration
}

// Now returns inner's time, shifted.
func (c *shiftedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inner.Now().Add(c.offset)
}

// NewTimer is inner's.
func (c *shiftedClock) NewTimer(d time.Duration) clock.Timer { return c.inner.NewTimer(d) }

// set makes Now read t.
func (c *shiftedClock) set(t time.Time) {
	c.mu.Lock()
	c.offset = t.Sub(c.inner.Now())
	c.mu.Unlock()
}
