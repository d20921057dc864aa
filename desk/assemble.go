package desk

// One desk's assembly from its config: its model route and router, its
// curator, its keeper and its loop. This file is the one place that does
// it; a reload hands a running desk new settings through RouterSettings
// and liveCurator.set.

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// assembled is one desk built from its config: the loop, and the parts of
// it a reload or the daemon's bookkeeping reach.
type assembled struct {
	desk   *Desk
	router *router.Router
	cur    *liveCurator // nil when the curator is off
}

// assemble builds desk dc of cfg on its (open) folder and ledger: its
// model route, router, curator, keeper and loop. Its model clients make
// their calls through pool (nil: each a client of its own); its MCP tools
// are act's (nil: none); space is the state folder's free-space probe
// (nil: none).
func assemble(cfg *config.Config, dc *config.Desk, folder *memory.Folder, ledger *triggers.Ledger, clk clock.Clock,
	bus *event.Bus, pool *router.Pool, act *acting, space *SpaceProbe, log zerolog.Logger) (assembled, error) {
	var d *Desk // made last; its pause denies the calls that wait for an operator
	paused := func() bool { return d != nil && d.Paused() != nil }
	settings, err := routerSettings(cfg, dc, folder, clk, pool, act, paused)
	if err != nil {
		return assembled{}, fmt.Errorf("desk %s: %w", dc.Name, err)
	}
	r, err := router.New(router.Options{Desk: dc.Name, Folder: folder, Clock: clk, Day: cfg.Day, Bus: bus, Log: log, Settings: settings})
	if err != nil {
		return assembled{}, err
	}
	var (
		cur  keeper.Curator
		live *liveCurator
	)
	if dc.Curator.Enabled {
		onTorn := func(t durable.Torn) {
			event.Publish(bus, event.FileTorn{Header: event.Header{At: clk.Now(), Desk: dc.Name}, Path: t.Path, Offset: t.Offset, Bytes: t.Bytes, SavedTo: t.SavedTo})
		}
		live = &liveCurator{r: curator.Reviewer{Folder: folder, Model: r, Now: clk.Now, MaxChanges: dc.Curator.MaxChanges,
			ScheduleTexts: ScheduleTexts(dc), OnTorn: onTorn}}
		cur = live
	}
	var kr keeper.Router = r
	if dc.Rollover == keeper.RolloverTradingDay {
		kr = TradingDayRouter(r, cfg.CalendarOf(dc.Calendar), cfg.Day, clk)
	}
	k := keeper.New(keeper.Options{
		Desk: dc.Name, Router: kr, Folder: folder, Curator: cur, Bus: bus, Clock: clk, Day: cfg.Day,
		Disabled: dc.Rollover == keeper.RolloverOff,
		Guard:    memory.FoldGuard{MaxBytes: dc.Memory.MaxBytes, MinKept: dc.Memory.MinKept},
		Progress: func(p keeper.Progress) { d.KeeperProgress(p) }, StillEvery: keeper.DefaultStillEvery,
		Log: log,
	})
	d, err = New(Options{
		Name: dc.Name, Keeper: k, Router: r, Ledger: ledger, Schedules: cfg.Entries(dc), Clock: clk, Bus: bus,
		QueueLimit: dc.QueueLimit, Coalesce: dc.Coalesce.ByKey(), Calendar: cfg.CalendarOf(dc.Calendar),
		Beyond: dc.BeyondCalendar, WarnDays: cfg.CalendarWarnDays, Day: cfg.Day,
		ShutdownTimeout: cfg.ShutdownTimeout, PauseFile: folder.Path(PauseFile),
		RefusePaused: dc.PausedTriggers.Refuse(), Log: log, Folder: folder, Acting: act.statusOf(dc.Name),
		OnPause: act.onPause(dc.Name), Space: space, SentMayBeLost: cfg.Cluster != nil,
		TakeAtOnce: cfg.Cluster == nil, // a takeover must find every message replicated
	})
	if err != nil {
		_ = r.Close()
		return assembled{}, err
	}
	return assembled{desk: d, router: r, cur: live}, nil
}

// settingsOf is what a reload hands a running desk built from dc: the
// settings of its loop and router (Configure), its model clients on pool,
// its MCP tools act's; paused reports whether the desk is paused.
func settingsOf(cfg *config.Config, dc *config.Desk, folder *memory.Folder, clk clock.Clock, pool *router.Pool, act *acting,
	paused func() bool) (Settings, error) {
	rs, err := routerSettings(cfg, dc, folder, clk, pool, act, paused)
	if err != nil {
		return Settings{}, err
	}
	return Settings{
		Schedules: cfg.Entries(dc), QueueLimit: dc.QueueLimit, Coalesce: dc.Coalesce.ByKey(),
		Calendar: cfg.CalendarOf(dc.Calendar), Beyond: dc.BeyondCalendar, WarnDays: cfg.CalendarWarnDays, Router: &rs, RefusePaused: dc.PausedTriggers.Refuse(),
	}, nil
}

// RouterSettings turns a desk's config into its router's settings: the
// model route with each model's client, the built-in and command tools,
// the budgets and the compaction bounds. deskd context uses it to show a
// desk's next request; each model client has an HTTP client of its own,
// and no MCP server is reached (the MCP tools are left out).
func RouterSettings(cfg *config.Config, dc *config.Desk, folder *memory.Folder, clk clock.Clock) (router.Settings, error) {
	return routerSettings(cfg, dc, folder, clk, nil, nil, nil)
}

// routerSettings is RouterSettings with the model clients on pool, sized
// first for the desks of cfg (nil gives each client one of its own), and
// the desk's MCP tools from act (nil: none); paused reports whether the
// desk is paused.
func routerSettings(cfg *config.Config, dc *config.Desk, folder *memory.Folder, clk clock.Clock, pool *router.Pool, act *acting,
	paused func() bool) (router.Settings, error) {
	var hc *http.Client
	if pool != nil {
		pool.Fit(len(cfg.Desks))
		hc = pool.Client()
	}
	s := router.Settings{
		Instructions:    dc.Instructions,
		MaxToolRounds:   dc.MaxToolRounds,
		CompactShare:    dc.CompactShare,
		CompactAtTokens: dc.CompactAtTokens,
		Retry:           router.RetryPolicy{},
		Budgets:         dc.Budgets,
		Tools:           router.BuiltinTools(folder, func() memory.Date { return cfg.Day.DateOf(clk.Now()) }),
	}
	for _, name := range append([]string{dc.Model}, dc.Fallbacks...) {
		spec := cfg.Models[name].Spec()
		spec.HTTPClient = hc
		m, err := router.NewModel(spec) // reads the key, builds the client
		if err != nil {
			return router.Settings{}, err
		}
		s.Route = append(s.Route, m)
	}
	for _, t := range dc.Tools {
		s.Tools = append(s.Tools, router.CommandTool{
			Name: t.Name, Description: t.Description, Schema: t.Schema, Argv: t.Command, Timeout: t.Timeout, MaxOutput: t.MaxOutput,
		}.Tool(dc.Name))
	}
	if act != nil {
		if ts := act.toolset(cfg, dc, folder, clk, paused); ts != nil {
			s.Toolsets = append(s.Toolsets, ts)
		}
	}
	return s, nil
}

// checkRoutes checks every desk's model route of cfg (router.CheckSpec:
// no key read, no client built), and returns a problem for each model
// that a desk's start could not build, by desk file and field (model,
// fallbacks[i]).
func checkRoutes(cfg *config.Config) config.Problems {
	var problems config.Problems
	for _, name := range sortedNames(cfg.Desks) {
		dc := cfg.Desks[name]
		for i, m := range append([]string{dc.Model}, dc.Fallbacks...) {
			if err := router.CheckSpec(cfg.Models[m].Spec()); err != nil {
				field := "model"
				if i > 0 {
					field = fmt.Sprintf("fallbacks[%d]", i-1)
				}
				problems = append(problems, config.Problem{File: dc.Path, Field: field, Reason: err.Error()})
			}
		}
	}
	return problems
}

// ScheduleTexts returns the texts of a desk's schedules, which protect the
// skills they name from the curator.
func ScheduleTexts(dc *config.Desk) []string {
	if dc == nil {
		return nil
	}
	var out []string
	for _, s := range dc.Schedules {
		out = append(out, s.Text)
	}
	return out
}

// liveCurator is a desk's skill curator whose settings a reload may
// change: each review works on a copy of the settings of its start.
type liveCurator struct {
	mu sync.Mutex
	r  curator.Reviewer
}

var _ keeper.Curator = (*liveCurator)(nil)

// Review runs the curator with the current settings.
func (c *liveCurator) Review(ctx context.Context, date memory.Date, session string) (memory.SkillReview, error) {
	c.mu.Lock()
	r := c.r
	c.mu.Unlock()
	return r.Review(ctx, date, session)
}

// set changes the settings of the next review.
func (c *liveCurator) set(dc *config.Desk) {
	c.mu.Lock()
	c.r.MaxChanges, c.r.ScheduleTexts = dc.Curator.MaxChanges, ScheduleTexts(dc)
	c.mu.Unlock()
}
