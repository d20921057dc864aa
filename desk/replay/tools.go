package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/router"
)

// NotRunText starts what a candidate's model hears of a call that a
// replay does not run: "not run in replay: <tool>".
const NotRunText = "not run in replay: "

// anySchema is the schema a replay gives an MCP tool it knows by name
// only (it never asks the server for its list).
const anySchema = `{"type":"object"}`

// key names a call by its tool and its arguments, whatever their order
// or spacing.
func key(tool string, args json.RawMessage) string {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return tool + "\x00" + string(args)
	}
	if v == nil {
		v = map[string]any{}
	}
	b, _ := json.Marshal(v) // maps marshal sorted
	return tool + "\x00" + string(b)
}

// recordedResult is the original's result of one call.
type recordedResult struct {
	trigger string
	result  string
	isError bool
}

// tools is a replay's tool layer: every tool the candidate is offered
// goes through it. A call the original made (same tool, same arguments)
// is answered with its recorded result; a call of a tool listed in
// --allow-tools and not under approve runs; any other call is refused. A
// call of a tool under approve is never run and never queued.
type tools struct {
	// byKey holds the day's recorded results by call; a call of the same
	// trigger is answered first with that trigger's result.
	byKey map[string][]recordedResult
	// allowed are the tools that may run; approve reports whether a tool
	// is under approve.
	allowed map[string]bool
	approve func(tool string) bool

	mu      sync.Mutex
	trigger string // the trigger whose turn runs now
	calls   []Call // the calls of that turn, in order
	pending *Call  // a call the gate let through, that Run answers
}

// newTools returns the tool layer of a replay of recs.
func newTools(recs []recorded, allowed []string, approve func(string) bool) *tools {
	t := &tools{byKey: map[string][]recordedResult{}, allowed: map[string]bool{}, approve: approve}
	for _, r := range recs {
		for _, c := range r.original.ToolCalls {
			if c.Outcome == "" || c.Outcome == router.OutcomeRefused || c.Outcome == router.OutcomeDenied || c.Outcome == router.OutcomeExpired {
				continue // not run: no result of the tool's to give again
			}
			k := key(c.Tool, c.Arguments)
			t.byKey[k] = append(t.byKey[k], recordedResult{trigger: r.ID, result: c.Result, isError: c.IsError})
		}
	}
	for _, name := range allowed {
		t.allowed[name] = true
	}
	return t
}

// begin starts the turn of trigger id; end returns its calls.
func (t *tools) begin(id string) {
	t.mu.Lock()
	t.trigger, t.calls, t.pending = id, nil, nil
	t.mu.Unlock()
}

func (t *tools) end() []Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	calls := t.calls
	t.calls, t.pending = nil, nil
	return calls
}

// lookup returns the recorded result of a call: the current trigger's
// own first, else the day's first.
func (t *tools) lookup(k string) (recordedResult, bool) {
	rs := t.byKey[k]
	for _, r := range rs {
		if r.trigger == t.trigger {
			return r, true
		}
	}
	if len(rs) > 0 {
		return rs[0], true
	}
	return recordedResult{}, false
}

// wrap returns tool as the candidate is offered it: behind the layer.
// run is what runs the tool for real when it may run (nil: it never
// runs).
func (t *tools) wrap(spec router.ToolSpec, maxResult int, run func(context.Context, json.RawMessage) (string, error)) router.Tool {
	name := spec.Name
	return router.Tool{
		Spec:      spec,
		MaxResult: maxResult,
		Gate: func(_ context.Context, gc router.GateCall) router.Verdict {
			t.mu.Lock()
			defer t.mu.Unlock()
			c := Call{ID: gc.ID, Tool: name, Arguments: append(json.RawMessage(nil), gc.Arguments...), Approval: t.approve(name)}
			if r, ok := t.lookup(key(name, gc.Arguments)); ok {
				c.Outcome, c.From = CallReplayed, r.trigger
				t.pending = &c
				return router.Verdict{Run: true}
			}
			if t.allowed[name] && !c.Approval && run != nil {
				c.Outcome = CallRun
				t.pending = &c
				return router.Verdict{Run: true}
			}
			c.Outcome, c.IsError, c.Result = CallRefused, true, NotRunText+name
			if c.Approval {
				c.Result += " (it is under approve: a replay never runs it, and never asks an operator)"
			}
			t.calls = append(t.calls, c)
			return router.Verdict{Outcome: router.OutcomeRefused, Result: c.Result}
		},
		Run: func(ctx context.Context, args json.RawMessage) (string, error) {
			t.mu.Lock()
			c := t.pending
			t.pending = nil
			var r recordedResult
			if c != nil && c.Outcome == CallReplayed {
				r, _ = t.lookup(key(name, args))
			}
			t.mu.Unlock()
			if c == nil || c.Tool != name {
				return "", errors.New(NotRunText + name) // the gate let nothing through: never run
			}
			var out string
			var err error
			if c.Outcome == CallReplayed {
				out = r.result
				if r.isError {
					err = errors.New(strings.TrimPrefix(r.result, "error: "))
				}
			} else {
				out, err = run(ctx, args)
			}
			c.Result, c.IsError = out, err != nil
			if err != nil {
				c.Result = "error: " + err.Error()
			}
			t.mu.Lock()
			t.calls = append(t.calls, *c)
			t.mu.Unlock()
			return out, err
		},
	}
}

// mcpNames returns the MCP tools (mcp__server__tool) a replay of dc
// offers: those its mcp entries name, and those of its servers that the
// day's record holds a call of and the entry allows.
func mcpNames(dc *config.Desk, recs []recorded) []string {
	set := map[string]bool{}
	for server, use := range dc.MCP {
		for _, tool := range use.Tools {
			if tool != config.AllMCPTools {
				set[mcphost.ToolName(server, tool)] = true
			}
		}
	}
	for _, r := range recs {
		for _, c := range r.original.ToolCalls {
			server, tool, ok := mcphost.SplitToolName(c.Tool)
			if use, in := dc.MCP[server]; ok && in && use.Allows(tool) {
				set[c.Tool] = true
			}
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// underApprove returns whether a tool is under approve for a replay of
// recs: an MCP tool that the entry of any of desks (the candidate's, the
// live desk's; nil is passed over) puts under approve, or whose call on
// the day of record waited for an operator's decision. The built-in and
// command tools never are. So a candidate file that drops an approve
// does not let a replay run a tool that trades.
func underApprove(recs []recorded, desks ...*config.Desk) func(string) bool {
	decided := map[string]bool{}
	for _, r := range recs {
		for _, c := range r.original.ToolCalls {
			if c.Approval {
				decided[c.Tool] = true
			}
		}
	}
	return func(name string) bool {
		if decided[name] {
			return true
		}
		server, tool, ok := mcphost.SplitToolName(name)
		if !ok {
			return false
		}
		for _, dc := range desks {
			if dc == nil {
				continue
			}
			if use, in := dc.MCP[server]; in && use.NeedsApproval(tool) {
				return true
			}
		}
		return false
	}
}

// mcpSpec is the spec of an MCP tool known by name only.
func mcpSpec(name string) router.ToolSpec {
	server, tool, _ := mcphost.SplitToolName(name)
	return router.ToolSpec{Name: name, Schema: json.RawMessage(anySchema),
		Description: fmt.Sprintf("Tool %s of MCP server %s.", tool, server)}
}
