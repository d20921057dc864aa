package keeper_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the tests need Asia/Kolkata even on a host without zoneinfo

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// errModel is what the fake model answers a task it is told to fail.
var errModel = errors.New("model unavailable (injected)")

// model is a router.Provider for tests: it answers like the scripted model,
// counts the calls of each task, fails the tasks it is told to fail, may
// answer summaries and folds with a fixed text, and records the notes of
// every fold call.
type model struct {
	mu       sync.Mutex
	calls    map[router.Task]int
	fail     map[router.Task]bool
	summary  string   // if set, the answer to every summary call
	foldText string   // if set, the answer to every fold call
	folds    []string // the notes of every fold call, in order
	// answered, if set, is called with each summary answer before it is
	// returned (a test stops the process there).
	answered func()
}

func newModel() *model {
	return &model{calls: map[router.Task]int{}, fail: map[router.Task]bool{}}
}

func (m *model) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	m.mu.Lock()
	m.calls[req.Task]++
	fail, summary, foldText, answered := m.fail[req.Task], m.summary, m.foldText, m.answered
	if req.Task == router.TaskFold && req.Fold != nil {
		m.folds = append(m.folds, req.Fold.Notes)
	}
	m.mu.Unlock()
	if fail {
		return router.Response{}, errModel
	}
	if req.Task == router.TaskSummary && answered != nil {
		answered()
	}
	if req.Task == router.TaskSummary && summary != "" {
		return router.Response{Text: summary}, nil
	}
	if req.Task == router.TaskFold && foldText != "" {
		return router.Response{Text: foldText}, nil
	}
	return router.Scripted{}.Complete(ctx, req)
}

// count returns how many calls of task the model has had.
func (m *model) count(task router.Task) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[task]
}

// foldNotes returns the notes of every fold call so far.
func (m *model) foldNotes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.folds)
}

// setFoldText makes the model answer every fold call with text ("" to fold
// as the scripted model does).
func (m *model) setFoldText(text string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.foldText = text
}

// setFail makes the model fail (or stop failing) every call of task.
func (m *model) setFail(task router.Task, fail bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail[task] = fail
}

// env is one desk's folder, clock, bus and model; it outlives the routers
// and keepers built over it, as a state dir outlives the processes that use it.
type env struct {
	t     *testing.T
	dir   string
	clock *clock.Fake
	bus   *event.Bus
	day   memory.TradingDay
	model *model
	// provider is the model's provider: scripted unless a test sets
	// another (its summaries then read as a model's, without the
	// scripted header).
	provider router.ProviderName
	// fs, if set, is the file layer of the folders opened from now on.
	fs durable.FS
}

// newEnv returns a desk environment whose clock reads start and whose
// trading day begins start after midnight IST.
func newEnv(t *testing.T, start time.Time, rolloverAt time.Duration) *env {
	t.Helper()
	bus := event.New()
	t.Cleanup(bus.Close)
	return &env{
		t:     t,
		dir:   filepath.Join(t.TempDir(), "desks", "main"),
		clock: clock.NewFake(start),
		bus:   bus,
		day:   memory.TradingDay{Location: desktest.Kolkata(), Start: rolloverAt},
		model: newModel(), provider: router.ScriptedProvider,
	}
}

// proc is one "process" of the desk: a folder, router and keeper over the
// env's directory.
type proc struct {
	folder *memory.Folder
	router *router.Router
	keeper *keeper.Keeper
}

// open builds a folder, router and keeper over the env's directory, as
// deskd does at startup. The router is closed at the end of the test.
func (e *env) open(o keeper.Options) *proc {
	e.t.Helper()
	folder, err := memory.OpenFolder(e.dir, "main", e.clock.Now)
	if err != nil {
		e.t.Fatal(err)
	}
	folder.FS = e.fs
	r, err := router.New(router.Options{
		Desk: "main", Folder: folder, Clock: e.clock, Day: e.day, Bus: e.bus,
		Settings: router.Settings{
			Route:        []router.Model{{Name: "offline", Provider: e.provider, Client: e.model}},
			Instructions: "You are a test desk.",
		},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = r.Close() })
	o.Desk, o.Router, o.Folder, o.Bus, o.Clock, o.Day = "main", r, folder, e.bus, e.clock, e.day
	return &proc{folder: folder, router: r, keeper: keeper.New(o)}
}

// start opens a process and starts its keeper.
func (e *env) start(o keeper.Options) *proc {
	e.t.Helper()
	p := e.open(o)
	if err := p.keeper.Start(e.t.Context()); err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	return p
}

func trigger(id, text string) triggers.Trigger {
	return triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Manual, Text: text, Source: "test"}
}

// turn runs one turn as the desk does: Prepare, then Send. It returns the
// text the model was sent.
func (p *proc) turn(t *testing.T, id, text string) string {
	t.Helper()
	prepared, err := p.keeper.Prepare(t.Context(), trigger(id, text))
	if err != nil {
		t.Fatalf("Prepare(%s): %v", id, err)
	}
	if _, err := p.router.Send(t.Context(), prepared); err != nil {
		t.Fatalf("Send(%s): %v", id, err)
	}
	return prepared.Text
}

func (p *proc) date(t *testing.T) string {
	t.Helper()
	d, ok := p.router.TradingDate()
	if !ok {
		t.Fatal("TradingDate: no session")
	}
	return d.String()
}

// header returns the header record of session id.
func header(t *testing.T, f *memory.Folder, id string) memory.Record {
	t.Helper()
	recs, err := f.ReadSession(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || recs[0].Type != memory.RecordHeader {
		t.Fatalf("session %s has no header: %+v", id, recs)
	}
	return recs[0]
}
