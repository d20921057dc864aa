package desk

// A desk's tools that act: the MCP servers its desk file lets it call
// (one host of servers for every desk), the calls that wait for an
// operator's decision (one queue for every desk), and each desk's day
// limits on calls. This file composes them into the gates of each desk's
// MCP tools; the packages it uses each own one part.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/calllimit"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

// LimitsFile is where a desk's counts of its limited tools' calls of the
// trading day are kept, in its folder.
const LimitsFile = "tool-limits.json"

// acting is the daemon's MCP servers and its queue of calls waiting for an
// operator, and each desk's counter of limited calls.
type acting struct {
	host  *mcphost.Host
	queue *approval.Queue
	log   zerolog.Logger

	mu       sync.Mutex
	counters map[string]*counter                  // by desk
	uses     map[string]map[string]config.DeskMCP // each desk's mcp entries, by desk
	warned   map[string]bool                      // misnamed entries already reported
}

// counter is a desk's counter of limited calls, or why it could not be
// opened: the desk then refuses every limited call, and tries the file
// again at each one, so that a mended file is taken up without a restart.
type counter struct {
	path string
	mu   sync.Mutex
	c    *calllimit.Counter
	err  error
}

// get returns the open counter, opening it again after a failure.
func (c *counter) get() (*calllimit.Counter, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		c.c, c.err = calllimit.Open(c.path)
		if c.err != nil {
			c.c = nil
			c.err = fmt.Errorf("its counts of limited tool calls: %w", c.err)
		}
	}
	return c.c, c.err
}

func newActing(clk clock.Clock, bus *event.Bus, log zerolog.Logger) *acting {
	return &acting{
		host:     mcphost.New(mcphost.Options{Clock: clk, Bus: bus, Log: log}),
		queue:    approval.New(approval.Options{Clock: clk, Bus: bus}),
		log:      log,
		counters: map[string]*counter{},
		uses:     map[string]map[string]config.DeskMCP{},
		warned:   map[string]bool{},
	}
}

// toolset returns desk dc's MCP tools, each gated by its approve and
// limits settings, and tells the host which servers the desk uses now
// (starting those no desk used). paused reports whether the desk is
// paused. It is nil when dc uses no MCP server.
func (a *acting) toolset(cfg *config.Config, dc *config.Desk, folder *memory.Folder, clk clock.Clock, paused func() bool) router.Toolset {
	servers := make([]string, 0, len(dc.MCP))
	for name := range dc.MCP {
		servers = append(servers, name)
	}
	sort.Strings(servers)
	a.mu.Lock()
	a.uses[dc.Name] = dc.MCP
	a.mu.Unlock()
	a.host.Use(dc.Name, servers)
	if len(servers) == 0 {
		return nil
	}
	return gatedToolset{
		inner: a.host.Toolset(dc.Name, dc.MCP), server: a.serverStatus, misnamed: a.misnamed(dc.Name), uses: dc.MCP, queue: a.queue, paused: paused,
		counter: a.counter(dc.Name, folder), today: func() memory.Date { return cfg.Day.DateOf(clk.Now()) },
	}
}

// counter returns desk's counter of limited calls, opened at its first use.
func (a *acting) counter(desk string, folder *memory.Folder) *counter {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.counters[desk]
	if !ok {
		c = &counter{path: folder.Path(LimitsFile)}
		a.counters[desk] = c
	}
	if _, err := c.get(); err != nil {
		a.log.Error().Err(err).Str("desk", desk).Msg("the desk refuses every call of a limited tool until the file is mended")
	}
	return c
}

// misnamed returns how desk's misnamed approve or limits entries are
// reported: a warning, once for each set of names.
func (a *acting) misnamed(desk string) func(server string, names []string) {
	return func(server string, names []string) {
		key := desk + "\x00" + server + "\x00" + strings.Join(names, "\x00")
		a.mu.Lock()
		seen := a.warned[key]
		a.warned[key] = true
		a.mu.Unlock()
		if !seen {
			a.log.Warn().Str("desk", desk).Str("server", server).Strs("names", names).
				Msg("the desk's mcp entry names tools its MCP server does not have (a misspelling?): every call of that server's tools waits for an operator until it is mended")
		}
	}
}

// serverStatus returns the host's status of server.
func (a *acting) serverStatus(server string) (mcphost.ServerStatus, bool) {
	for _, s := range a.host.Status() {
		if s.Name == server {
			return s, true
		}
	}
	return mcphost.ServerStatus{}, false
}

// forget is desk's end: it no longer uses any server.
func (a *acting) forget(desk string) {
	a.mu.Lock()
	delete(a.uses, desk)
	delete(a.counters, desk)
	a.mu.Unlock()
	a.host.Use(desk, nil)
}

// status returns the state of the MCP servers desk uses, each up one's
// tools exactly those the desk's model is offered (and those left out,
// with why: the host derives both from what its Toolset offers), and the
// calls of the desk that wait for a decision.
func (a *acting) status(desk string) ([]mcphost.ServerStatus, []approval.Pending) {
	a.mu.Lock()
	uses := a.uses[desk]
	a.mu.Unlock()
	var out []mcphost.ServerStatus
	if len(uses) > 0 {
		out = a.host.DeskStatus(uses)
	}
	return out, a.queue.Pending(desk)
}

// gatedToolset is a desk's MCP tools, those that act behind their gates:
// a day's limit is checked first (a call over it does not trouble an
// operator), then the operator decides, then the call is counted.
type gatedToolset struct {
	inner router.Toolset
	// misnamed reports a server whose approve or limits name tools it
	// does not have (its calls all wait for an operator then).
	misnamed func(server string, names []string)
	// server returns a server's state (the host's status).
	server  func(name string) (mcphost.ServerStatus, bool)
	uses    map[string]config.DeskMCP
	queue   *approval.Queue
	paused  func() bool
	counter *counter
	today   func() memory.Date
}

// Tools returns the host's tools of the desk, gated. A server whose tools
// are all allowed (["*"]) but whose approve or limits name a tool it does
// not have (a misspelling, most likely, of one that acts) has every call
// of its tools wait for an operator, and the operator is told.
func (g gatedToolset) Tools() []router.Tool {
	tools := g.inner.Tools()
	strict := g.strictServers(tools)
	out := make([]router.Tool, len(tools))
	for i, t := range tools {
		out[i] = t
		server, name, ok := mcphost.SplitToolName(t.Spec.Name)
		if !ok {
			continue
		}
		use := g.uses[server]
		var approve router.Gate
		if use.NeedsApproval(name) || strict[server] {
			approve = g.queue.Gate(use.ApproveWithin, g.paused)
		}
		limit := use.Limits[name]
		if limit > 0 || approve != nil {
			out[i].Gate = g.gate(t.Spec.Name, limit, approve)
		}
		if limit > 0 {
			out[i].Run = g.counted(t.Spec.Name, limit, t.Run)
		}
	}
	return out
}

// Refusal says why an mcp__ tool is not offered: the desk's file does not
// allow it, or names no such server (not allowed), or its server is not up
// or lacks it (allowed).
func (g gatedToolset) Refusal(tool string) (why string, allowed, ok bool) {
	server, name, ok := mcphost.SplitToolName(tool)
	if !ok {
		return "", false, false
	}
	use, ok := g.uses[server]
	if !ok {
		servers := make([]string, 0, len(g.uses))
		for s := range g.uses {
			servers = append(servers, s)
		}
		sort.Strings(servers)
		return fmt.Sprintf("%s is not a tool of this desk: its file lets it call tools of the MCP servers %s only, not of %q",
			tool, strings.Join(servers, ", "), server), false, true
	}
	if !use.Allows(name) {
		return fmt.Sprintf("%s is not allowed for this desk: of MCP server %s, its file allows %s only; the call did not run",
			tool, server, strings.Join(use.Tools, ", ")), false, true
	}
	// Allowed, but not offered now: its server is not up, or lacks it.
	why = fmt.Sprintf("%s is unavailable now: MCP server %s", tool, server)
	if st, ok := g.server(server); ok && st.State != mcphost.StateUp {
		why += " is " + st.State
		if st.Error != "" {
			why += " (" + st.Error + ")"
		}
	} else {
		why += " does not offer it now"
	}
	return why + "; the call did not run", true, true
}

// strictServers returns the servers of tools whose desk entry allows
// every tool but names, in approve or limits, one the server does not
// offer; each is reported (once) through g.misnamed.
func (g gatedToolset) strictServers(tools []router.Tool) map[string]bool {
	offered := map[string]map[string]bool{}
	for _, t := range tools {
		if server, name, ok := mcphost.SplitToolName(t.Spec.Name); ok {
			if offered[server] == nil {
				offered[server] = map[string]bool{}
			}
			offered[server][name] = true
		}
	}
	strict := map[string]bool{}
	for server, names := range offered {
		use := g.uses[server]
		if !slices.Contains(use.Tools, config.AllMCPTools) {
			continue
		}
		var missing []string
		for _, n := range use.Approve {
			if n != config.AllMCPTools && !names[n] {
				missing = append(missing, "approve: "+n)
			}
		}
		for _, n := range slices.Sorted(maps.Keys(use.Limits)) {
			if !names[n] {
				missing = append(missing, "limits: "+n)
			}
		}
		if len(missing) > 0 {
			strict[server] = true
			if g.misnamed != nil {
				g.misnamed(server, missing)
			}
		}
	}
	return strict
}

// Notes returns the host's notes on the desk's unavailable tools.
func (g gatedToolset) Notes() []string { return g.inner.Notes() }

// gate is the gate of tool: its day's limit (0: none) and the operator's
// decision (nil: none needed).
func (g gatedToolset) gate(tool string, limit int, approve router.Gate) router.Gate {
	return func(ctx context.Context, c router.GateCall) router.Verdict {
		if limit > 0 {
			if err := g.check(tool, limit); err != nil {
				return router.Verdict{Outcome: router.OutcomeRefused, Result: "error: " + err.Error() + ". The call did not run."}
			}
		}
		if approve == nil {
			return router.Verdict{Run: true}
		}
		return approve(ctx, c)
	}
}

// counted is run, a limited tool's run, counted in the day's calls before
// it runs (a call over the limit does not run); a call its server never
// got is given back, never one that was sent and whose outcome is unknown
// (it timed out, or its connection broke: it may have run).
func (g gatedToolset) counted(tool string, limit int, run func(context.Context, json.RawMessage) (string, error)) func(context.Context, json.RawMessage) (string, error) {
	return func(ctx context.Context, args json.RawMessage) (string, error) {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("%s did not run: %w", tool, err) // not counted: its turn ended while it waited
		}
		date := g.today()
		c, err := g.counter.get()
		if err == nil {
			_, err = c.Take(date, tool, limit)
		}
		if err != nil {
			return "", fmt.Errorf("%w. The call did not run", err)
		}
		out, err := run(ctx, args)
		if errors.Is(err, mcphost.ErrUnavailable) && !errors.Is(err, mcphost.ErrOutcomeUnknown) {
			if rerr := c.Release(date, tool); rerr != nil {
				err = fmt.Errorf("%w (and its count could not be given back: %v)", err, rerr)
			}
		}
		return out, err
	}
}

func (g gatedToolset) check(tool string, limit int) error {
	c, err := g.counter.get()
	if err != nil {
		return err
	}
	return c.Check(g.today(), tool, limit)
}

// statusOf returns the function a desk's status asks for its MCP servers
// and its calls that wait; nil when a is.
func (a *acting) statusOf(desk string) func() ([]mcphost.ServerStatus, []approval.Pending) {
	if a == nil {
		return nil
	}
	return func() ([]mcphost.ServerStatus, []approval.Pending) { return a.status(desk) }
}

// onPause returns what a desk's pause does to its calls that wait for an
// operator: they are denied at once, by whoever paused it (the queue's
// own desk.paused subscription does it too, but a bus may drop an event);
// nil when a is.
func (a *acting) onPause(desk string) func(Pause) {
	if a == nil {
		return nil
	}
	return func(p Pause) {
		reason := "the desk was paused"
		if p.Reason != "" {
			reason += ": " + p.Reason
		}
		a.queue.DenyAll(desk, p.By, reason)
	}
}
