package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/router"
)

// toolPrefix starts the name of every MCP tool the model sees.
const toolPrefix = "mcp__"

// validToolName is what the model providers accept as a tool's name.
var validToolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ErrUnavailable is in the error of a call that was never sent: its
// server is not configured, or not connected now.
var ErrUnavailable = errors.New("unavailable")

// ErrOutcomeUnknown is in the error of a call that was sent but whose
// answer deskd did not get (it timed out, its turn ended, the request or
// the connection broke, the answer could not be read): the server may
// have run it. Such a call is never given back to a day's limit.
var ErrOutcomeUnknown = errors.New("the call's outcome is unknown")

// ToolName is the name the model sees for a server's tool:
// "mcp__<server>__<tool>".
func ToolName(server, tool string) string { return toolPrefix + server + "__" + tool }

// SplitToolName splits a ToolName into its server and tool; ok is false
// for a name that is not an MCP tool's.
func SplitToolName(name string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, toolPrefix)
	if !found {
		return "", "", false
	}
	server, tool, found = strings.Cut(rest, "__")
	if !found || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// Toolset returns the tools a desk's mcp entries (by server) allow, of the
// servers that are up at each turn's start.
func (h *Host) Toolset(desk string, uses map[string]config.DeskMCP) router.Toolset {
	return toolset{h: h, desk: desk, uses: uses}
}

type toolset struct {
	h    *Host
	desk string
	uses map[string]config.DeskMCP
}

// entry is one mcp entry of the desk and its server's state now.
type entry struct {
	server string
	use    config.DeskMCP
	snap   snapshot
	known  bool
}

// entries returns the desk's entries, sorted by server.
func (t toolset) entries() []entry {
	out := make([]entry, 0, len(t.uses))
	for key, use := range t.uses {
		name := use.Server
		if name == "" {
			name = key
		}
		e := entry{server: name, use: use}
		if s := t.h.lookup(name); s != nil {
			e.snap, e.known = s.snapshot(), true
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].server < out[j].server })
	return out
}

// Tools returns the allowed tools of the servers that are up.
func (t toolset) Tools() []router.Tool {
	var out []router.Tool
	for _, e := range t.entries() {
		if !e.known || e.snap.state != StateUp {
			continue
		}
		for _, tool := range e.plan().offered {
			out = append(out, t.h.tool(e.server, e.snap, tool))
		}
	}
	return out
}

// plan is what a desk's model is offered of one up server's tools, and
// what it is not and why. The tools offered (Tools), the notes to the
// model (Notes) and the desk's status (DeskStatus) all read it, so that
// they cannot disagree.
type plan struct {
	// offered are the tools the model is offered, in the server's order,
	// each name once.
	offered []toolDef
	// leftOut are the other tools the server lists, once for each name and
	// reason, in the server's order; then the tools the desk's entry names
	// that the server does not list.
	leftOut []leftOut
	// over counts the allowed tools left out for MaxServerSpecBytes.
	over int
}

// leftOut is a tool the model is not offered, and why.
type leftOut struct {
	LeftOut
	// allowed: the desk's entry allows it (the model is told of it).
	allowed bool
	// over: left out for MaxServerSpecBytes (the notes count those).
	over bool
	// missing: the desk's entry names it, and the server does not list it.
	missing bool
	// repeat: a second listing of a name (the first is offered, or left
	// out for its own reason); the status does not show it again.
	repeat bool
}

// plan returns the entry's plan: a tool is offered when the server lists
// it first under its name, its schema is an object schema, its full name
// is a valid tool name, the desk's entry allows it, and it fits within
// MaxServerSpecBytes of names, descriptions and schemas.
func (e entry) plan() plan {
	var p plan
	used := 0
	listed := map[string]bool{}
	noted := map[LeftOut]bool{}
	for _, tool := range e.snap.tools.tools {
		listed[tool.name] = true
		allowed := e.use.Allows(tool.name)
		why, over := tool.leftOut, false
		switch {
		case why != "":
		case !validToolName.MatchString(ToolName(e.server, tool.name)):
			why = fmt.Sprintf("%q is not a valid tool name (letters, digits, _ and -, at most 64)", ToolName(e.server, tool.shown))
		case !allowed:
			why = "the desk's file does not allow it"
		default:
			size := len(tool.name) + len(tool.description) + len(tool.schema)
			if used+size <= MaxServerSpecBytes {
				used += size
				p.offered = append(p.offered, tool)
				continue
			}
			why, over = fmt.Sprintf("with it, the server's tools' descriptions and schemas would take more than %d bytes", MaxServerSpecBytes), true
			p.over++
		}
		l := LeftOut{Tool: tool.shown, Why: why}
		if noted[l] {
			continue // a name listed again, for the same reason
		}
		noted[l] = true
		p.leftOut = append(p.leftOut, leftOut{LeftOut: l, allowed: allowed, over: over, repeat: tool.repeat})
	}
	for _, name := range e.use.Tools {
		if name != config.AllMCPTools && !listed[name] {
			p.leftOut = append(p.leftOut, leftOut{LeftOut: LeftOut{Tool: cleanText(name, maxShownName), Why: "the server does not list it"},
				allowed: true, missing: true})
		}
	}
	return p
}

// Notes says which servers are unavailable and why, which allowed tools
// a server does not have, and which are left out for their names.
func (t toolset) Notes() []string {
	var out []string
	for _, e := range t.entries() {
		if !e.known {
			out = append(out, unavailable(e.server, "it is not in mcp_servers", false))
			continue
		}
		switch e.snap.state {
		case StateUp:
		case StateDown:
			out = append(out, unavailable(e.server, e.snap.err, true))
			continue
		case StateStarting:
			out = append(out, unavailable(e.server, "deskd is connecting to it", false))
			continue
		default:
			out = append(out, unavailable(e.server, "it is not running", false))
			continue
		}
		out = append(out, toolNotes(e)...)
	}
	return out
}

func unavailable(server, why string, retrying bool) string {
	s := fmt.Sprintf("the tools of MCP server %s (%s*) are unavailable: %s", server, ToolName(server, ""), why)
	if retrying {
		s += "; deskd is retrying"
	}
	return s
}

// truncated says how the server's listing was cut ("lists more than
// 256 tools: ..."), or "".
func (l toolList) truncated() string {
	switch {
	case l.pages:
		return fmt.Sprintf("lists its tools in more than %d pages: deskd takes the tools of the first %d", maxToolPages, maxToolPages)
	case l.more:
		return fmt.Sprintf("lists more than %d tools: deskd takes the first %d", MaxServerTools, MaxServerTools)
	}
	return ""
}

// toolNotes are the notes on an up server's tools: of its plan, the
// allowed tools left out.
func toolNotes(e entry) []string {
	var out []string
	if cut := e.snap.tools.truncated(); cut != "" {
		out = append(out, "MCP server "+e.server+" "+cut)
	}
	p := e.plan()
	leftOut := 0
	for _, l := range p.leftOut {
		if !l.allowed || l.over || l.missing {
			continue
		}
		if leftOut++; leftOut <= maxLeftOutNotes {
			out = append(out, fmt.Sprintf("the tool %q of MCP server %s is left out: %s", l.Tool, e.server, l.Why))
		}
	}
	if leftOut > maxLeftOutNotes {
		out = append(out, fmt.Sprintf("and %d more tools of MCP server %s are left out", leftOut-maxLeftOutNotes, e.server))
	}
	if p.over > 0 {
		out = append(out, fmt.Sprintf("%d tools of MCP server %s are left out: with them, its tools' descriptions and schemas "+
			"would take more than %d bytes", p.over, e.server, MaxServerSpecBytes))
	}
	for _, l := range p.leftOut {
		if l.missing {
			out = append(out, fmt.Sprintf("MCP server %s has no tool %s: %s is unavailable", e.server, l.Tool, ToolName(e.server, l.Tool)))
		}
	}
	return out
}

// DeskStatus returns the status of the configured servers a desk's mcp
// entries (uses, by server) name, sorted by name. An up server's Tools
// are exactly what the desk's model is offered of it (the tools of
// Toolset(desk, uses) at a turn's start), and LeftOut is every other tool
// it lists, and each tool the entry names that it does not, with why.
func (h *Host) DeskStatus(uses map[string]config.DeskMCP) []ServerStatus {
	var out []ServerStatus
	for _, e := range (toolset{h: h, uses: uses}).entries() {
		if s := h.lookup(e.server); s != nil {
			out = append(out, s.statusFor(e.use))
		}
	}
	return out
}

// offers returns the names the plan offers and what it leaves out, each
// name once, for a status.
func (p plan) offers() (names []string, left []LeftOut) {
	for _, t := range p.offered {
		names = append(names, t.shown)
	}
	for _, l := range p.leftOut {
		if !l.repeat {
			left = append(left, l.LeftOut)
		}
	}
	return names, left
}

// tool is the router's tool for one of a server's tools.
func (h *Host) tool(server string, snap snapshot, tool toolDef) router.Tool {
	limit := snap.cfg.MaxResult
	if limit <= 0 {
		limit = router.DefaultMaxToolResult
	}
	full := ToolName(server, tool.name)
	return router.Tool{
		Spec:      router.ToolSpec{Name: full, Description: tool.description, Schema: tool.schema},
		Server:    server,
		MaxResult: limit,
		Run: func(ctx context.Context, args json.RawMessage) (string, error) {
			out, err := h.call(ctx, server, tool.name, args)
			out, err = hide(snap.cfg, out), hideErr(snap.cfg, err)
			if s := h.lookup(server); s != nil { // a reload may have brought new secrets
				out, err = hide(s.config(), out), hideErr(s.config(), err)
			}
			return out, err
		},
	}
}

// call runs a tool on the server's live connection, within its timeout
// on the host's clock. A transport failure ends the connection: the
// supervisor reconnects.
func (h *Host) call(ctx context.Context, server, tool string, args json.RawMessage) (string, error) {
	full := ToolName(server, tool)
	s := h.lookup(server)
	if s == nil {
		return "", fmt.Errorf("%s is %w: MCP server %s is not configured", full, ErrUnavailable, server)
	}
	snap := s.snapshot()
	if snap.live == nil {
		why := snap.err
		if why == "" {
			why = "it is " + snap.state
		}
		return "", fmt.Errorf("%s is %w: MCP server %s is not connected (%s); the call was not sent", full, ErrUnavailable, server, why)
	}
	d := timeout(snap.cfg)
	cctx, stop, timedOut := withTimeout(ctx, h.o.Clock, d)
	defer stop()
	res, err := snap.live.sess.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	// Only an answer of the server says what became of a call: every
	// other failure says its outcome is unknown (a cut place_order may
	// still execute), and only a JSON-RPC error of the server is its
	// refusal.
	switch {
	case err == nil:
	case timedOut():
		return "", fmt.Errorf("deskd timed out after %s waiting for MCP server %s's answer to %s; %w (the server may still have run it)",
			d, server, tool, ErrOutcomeUnknown)
	case ctx.Err() != nil:
		return "", fmt.Errorf("deskd stopped waiting for MCP server %s's answer to %s (%v); %w (the server may still have run it)",
			server, tool, ctx.Err(), ErrOutcomeUnknown)
	case refused(err):
		return "", fmt.Errorf("MCP server %s refused the call of %s: %w", server, tool, err)
	case !errors.Is(err, mcp.ErrConnectionClosed) && snap.live.alive(ctx, h.o.Clock, d):
		if transportFailed(err) {
			return "", fmt.Errorf("the request to MCP server %s for %s failed before its answer (%s); %w (the server may have run it)",
				server, tool, cleanText(err.Error(), 300), ErrOutcomeUnknown)
		}
		return "", fmt.Errorf("MCP server %s answered the call of %s with a result that is not valid MCP (%s); %w (the server may have run it)",
			server, tool, cleanText(err.Error(), 300), ErrOutcomeUnknown)
	default:
		why := snap.live.broke(fmt.Errorf("the call of %s failed: %w", tool, err))
		return "", fmt.Errorf("%s failed: the connection to MCP server %s broke (%v); deskd is reconnecting; %w (the server may have run it)",
			full, server, why, ErrOutcomeUnknown)
	}
	text := resultText(res)
	if res.IsError {
		if strings.TrimSpace(text) == "" {
			text = fmt.Sprintf("MCP server %s reported an error with no text", server)
		}
		return "", errors.New(text)
	}
	return text, nil
}

// codeRejected is the code of the JSON-RPC error the SDK makes (it is not
// the server's) for a request its transport could not send or whose
// answer it could not read ("rejected by transport").
const codeRejected = -32005

// refused reports whether err holds the server's answer (a JSON-RPC
// error of its own), not a failure of the transport or the connection:
// the SDK's own "rejected by transport" is a JSON-RPC error too, but says
// nothing of what the server did.
func refused(err error) bool {
	if errors.Is(err, mcp.ErrConnectionClosed) {
		return false
	}
	found := false
	walkErrors(err, func(e error) {
		if we, ok := e.(*jsonrpc.Error); ok && we.Code != codeRejected {
			found = true
		}
	})
	return found
}

// transportFailed reports whether err is the SDK's "rejected by
// transport": the request or its answer broke on the way.
func transportFailed(err error) bool {
	return errors.Is(err, &jsonrpc.Error{Code: codeRejected})
}

// walkErrors calls fn with err and every error it wraps.
func walkErrors(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, fn)
		}
	}
}

// resultText is what the model reads of a result: its text items joined
// by newlines, other kinds described, the structured content as JSON when
// there is no text.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	hasText := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts, hasText = append(parts, c.Text), true
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s]", c.URI))
		case *mcp.EmbeddedResource:
			parts = append(parts, embedded(c))
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if !hasText && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func embedded(c *mcp.EmbeddedResource) string {
	r := c.Resource
	if r == nil {
		return "[resource]"
	}
	if r.Text != "" {
		return r.Text
	}
	return fmt.Sprintf("[resource %s %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob))
}
