// Package replay runs a trading day of a desk again against a candidate
// desk (other instructions, another model, other tools or budgets), in a
// sandbox, side by side with what the desk really answered, without
// touching the live desk or acting on any market.
//
// The input is every trigger of the date that reached the model, in
// order, with the text the model saw (read from the session files, the
// outcomes and replies of record from the trigger ledger). The sandbox is
// a fresh desk folder rebuilt as the desk stood when the date began: the
// Memory.md in force then, the skills as they were, the summary the day's
// first message carried. The candidate runs through the real router and
// model clients, with a tool layer in front of every tool: a call the
// original made is answered with its recorded result, a tool named in
// AllowTools and not under approve runs, and anything else is refused
// ("not run in replay: <tool>"); a call that needs approval (under
// approve in the candidate's file, the live desk's, or on the day of
// record) never runs and is never queued. The live folder is only read, with the CLI's read
// rules (no lock: the daemon may run meanwhile).
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// Options are a replay's inputs.
type Options struct {
	// Config is the main config: the models and their prices, the MCP
	// servers, the trading day.
	Config *config.Config
	// Candidate is the candidate desk's config (its Name is the live
	// desk's); Source says how it was given, for the report ("--with
	// candidate.yaml", "--model KEY").
	Candidate *config.Desk
	Source    string
	// Live is the live desk's folder: only read.
	Live *memory.Folder
	// Date is the trading date replayed.
	Date memory.Date
	// Out is the output folder: report.json, report.html and the sandbox
	// (SandboxDir) go in it. It must not be inside the live desk folder.
	Out string
	// AllowTools are the tools that may run for real (read-only data
	// tools an operator trusts). A tool under approve among them never
	// runs (see underApprove): its calls are refused and listed as needing
	// approval, with a warning on Log.
	AllowTools []string
	// MaxCost stops the replay once the candidate's estimated cost passes
	// it (0: no bound); what ran is still reported.
	MaxCost float64
	// Clock is deskd's clock (the turns' latency, the report's time).
	Clock clock.Clock
	// Progress gets a line "12/40 triggers" after each trigger (nil:
	// none).
	Progress io.Writer
	// Log gets the router's and the MCP host's lines.
	Log zerolog.Logger
	// Version is deskd's version, named in the report.
	Version string
}

// ErrBadOptions is the error of options a replay cannot run with (an
// allowed tool the candidate does not have, an output folder inside the
// desk's).
var ErrBadOptions = errors.New("replay refused")

// Run replays o.Date against o.Candidate and writes the report (see
// WriteReport). A replay stopped by MaxCost, or by ctx, still returns and
// writes what ran.
func Run(ctx context.Context, o Options) (*Report, error) {
	cfg, dc, live := o.Config, o.Candidate, o.Live
	name := live.Desk()
	fail := func(err error) (*Report, error) { return nil, fmt.Errorf("replay %s %s: %w", name, o.Date, err) }
	if err := checkOut(live, o.Out); err != nil {
		return fail(err)
	}
	day, recs, err := loadDay(live, cfg.Day, o.Date)
	if err != nil {
		return nil, err
	}
	approve := underApprove(recs, dc, cfg.Desks[name])
	clk := &shiftedClock{inner: o.Clock}
	clk.set(day.Start)
	sandbox := filepath.Join(o.Out, SandboxDir, "desks", name)
	sb, start, err := buildSandbox(live, sandbox, day.Start, recs[0].Text, clk.Now)
	if err != nil {
		return fail(err)
	}
	settings, err := desk.RouterSettings(cfg, dc, sb, clk)
	if err != nil {
		return fail(err)
	}
	offered := map[string]bool{}
	for _, t := range settings.Tools {
		offered[t.Spec.Name] = true
	}
	for _, n := range mcpNames(dc, recs) {
		offered[n] = true
	}
	var allowed []string // the tools that may run: o.AllowTools but those under approve
	for _, t := range o.AllowTools {
		if !offered[t] {
			return fail(fmt.Errorf("%w: --allow-tools %s: the candidate has no such tool", ErrBadOptions, t))
		}
		if approve(t) {
			o.Log.Warn().Str("desk", name).Str("tool", t).Msgf("replay %s %s: --allow-tools %s: the tool is under approve: a replay never runs it, never asks an operator, and lists its calls as needing approval", name, o.Date, t)
			continue
		}
		allowed = append(allowed, t)
	}
	o.AllowTools = allowed
	mcp, err := startMCP(cfg, name, o.AllowTools, o.Clock, o.Log)
	if err != nil {
		return fail(err)
	}
	defer mcp.close()
	layer := newTools(recs, o.AllowTools, approve)
	wrapped := make([]router.Tool, 0, len(settings.Tools))
	for _, t := range settings.Tools {
		wrapped = append(wrapped, layer.wrap(t.Spec, t.MaxResult, t.Run))
	}
	for _, n := range mcpNames(dc, recs) {
		var run func(context.Context, json.RawMessage) (string, error)
		if mcp != nil && slices.Contains(o.AllowTools, n) {
			run = mcp.run(cfg, n)
		}
		wrapped = append(wrapped, layer.wrap(mcpSpec(n), 0, run))
	}
	settings.Tools, settings.Toolsets = wrapped, nil
	r, err := router.New(router.Options{Desk: name, Folder: sb, Clock: clk, Day: cfg.Day, Bus: event.New(), Log: o.Log, Settings: settings})
	if err != nil {
		return fail(err)
	}
	defer r.Close()
	if _, err := r.RestoreSession(ctx); err != nil {
		return fail(err)
	}

	rep := newReport(o, day, start, dc)
	session := recs[0].Session
	var spent float64
	for i, rec := range recs {
		if err := ctx.Err(); err != nil {
			rep.Stopped = "cut short: " + err.Error()
			break
		}
		clk.set(rec.At)
		if rec.Session != session {
			session = rec.Session
			if err := r.Reset(ctx); err != nil { // the original started a new session here: so does the candidate
				return fail(err)
			}
		}
		row := Row{Trigger: rec.Trigger, Original: rec.original}
		layer.begin(rec.ID)
		began := o.Clock.Now()
		reply, err := r.Send(ctx, triggers.Trigger{ID: rec.ID, Desk: name, Kind: triggers.Kind(rec.Kind), Text: rec.Text, At: rec.At, Source: "replay"})
		cand := Side{Reply: reply.Text, Model: reply.Model, Provider: string(reply.Provider), Scripted: reply.Scripted,
			Tokens: reply.Usage, Cost: reply.Cost, LatencyMS: o.Clock.Now().Sub(began).Milliseconds(), ToolCalls: layer.end()}
		if cand.ToolCalls == nil {
			cand.ToolCalls = []Call{}
		}
		if err != nil {
			cand.Reply, cand.Error = "", err.Error()
		}
		row.Candidate = &cand
		row.Differs = strings.TrimSpace(cand.Reply) != strings.TrimSpace(row.Original.Reply)
		rep.add(row)
		spent += cand.Cost
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "%d/%d triggers\n", i+1, len(recs))
		}
		if o.MaxCost > 0 && spent > o.MaxCost && i+1 < len(recs) {
			rep.Stopped = fmt.Sprintf("max cost %.4f passed after %d of %d triggers (the candidate's estimated cost %.4f)", o.MaxCost, i+1, len(recs), spent)
			break
		}
	}
	rep.finish(recs)
	if err := WriteReport(o.Out, rep); err != nil {
		return fail(err)
	}
	return rep, nil
}

// checkOut refuses an output folder inside the live desk's folder (or the
// desk folder itself): the live folder is never written.
func checkOut(live *memory.Folder, out string) error {
	if out == "" {
		return fmt.Errorf("%w: no output folder", ErrBadOptions)
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("output folder %s: %w", out, err)
	}
	deskDir, err := filepath.Abs(live.Dir())
	if err != nil {
		return fmt.Errorf("desk folder %s: %w", live.Dir(), err)
	}
	if rel, err := filepath.Rel(deskDir, abs); err == nil && filepath.IsLocal(rel) || abs == deskDir {
		return fmt.Errorf("%w: output folder %s is inside the desk's folder %s, which a replay never writes", ErrBadOptions, out, live.Dir())
	}
	return nil
}
