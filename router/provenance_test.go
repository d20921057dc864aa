package router_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// Tests of what a fork carries and of the prompt's unreadable files. They
// build their own desk folder and router (provDesk), so that they depend
// on nothing but the package's exported API.

// provModel answers like the scripted model and keeps the system prompt
// of every request.
type provModel struct {
	mu      sync.Mutex
	systems []string
}

func (m *provModel) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	m.mu.Lock()
	m.systems = append(m.systems, req.System)
	m.mu.Unlock()
	return router.Scripted{}.Complete(ctx, req)
}

// lastSystem returns the system prompt of the last request.
func (m *provModel) lastSystem(t *testing.T) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	return lastOf(t, m.systems)
}

// provDesk is a desk folder, a fake clock, a bus and a router over them
// with the built-in tools (note, skill_read, ...).
type provDesk struct {
	t      *testing.T
	dir    string
	clock  *clock.Fake
	bus    *event.Bus
	day    memory.TradingDay
	folder *memory.Folder
	model  *provModel
}

func newProvDesk(t *testing.T) *provDesk {
	t.Helper()
	d := &provDesk{t: t, dir: filepath.Join(t.TempDir(), "desks", "main"), clock: clock.NewFake(time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC)),
		bus: event.New(), day: desktest.Day(), model: &provModel{}}
	t.Cleanup(d.bus.Close)
	var err error
	d.folder, err = memory.OpenFolder(d.dir, "main", d.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// router opens a router over the folder (a process starting) and restores
// its session.
func (d *provDesk) router() *router.Router {
	d.t.Helper()
	r, err := router.New(router.Options{Desk: "main", Folder: d.folder, Clock: d.clock, Day: d.day, Bus: d.bus,
		Settings: router.Settings{
			Route:        []router.Model{{Name: "offline", Provider: router.ScriptedProvider, Client: d.model}},
			Instructions: "You run the main desk.",
			Tools:        router.BuiltinTools(d.folder, func() memory.Date { return d.day.DateOf(d.clock.Now()) }),
		}})
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = r.Close() })
	if _, err := r.RestoreSession(d.t.Context()); err != nil {
		d.t.Fatal(err)
	}
	return r
}

func (d *provDesk) send(r *router.Router, id string, kind triggers.Kind, text string) {
	d.t.Helper()
	d.clock.Advance(time.Minute)
	if _, err := r.Send(d.t.Context(), triggers.Trigger{ID: id, Desk: "main", Kind: kind, Text: text}); err != nil {
		d.t.Fatalf("Send(%s): %v", id, err)
	}
}

func (d *provDesk) records(id string) []memory.Record {
	d.t.Helper()
	recs, err := d.folder.ReadSession(id)
	if err != nil {
		d.t.Fatal(err)
	}
	return recs
}

// TestForkCopiesEveryFieldOfItsRecords: the records a fork carries into
// its new session are the old session's records as they were written
// (time, trigger, kind, model, provider, scripted mark, usage, duration,
// tool calls and results), each marked with the session it came from; the
// new header names the old session as parent and as what it was forked
// from; and the fork rebuilds to the same conversation after a restart.
func TestForkCopiesEveryFieldOfItsRecords(t *testing.T) {
	d := newProvDesk(t)
	r := d.router()
	d.send(r, "open@1", triggers.Schedule, "Check the tape.\nNOTE: NIFTY gapped up; hedge early.")
	d.send(r, "mkt-7", triggers.Market, "BANKNIFTY down 1%")
	parent := r.SessionID()
	before := d.records(parent)
	exchanges := r.Exchanges()

	d.clock.Advance(time.Hour)
	child, err := r.Fork(t.Context())
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if child == parent || r.SessionID() != child || r.Exchanges() != exchanges {
		t.Fatalf("after the fork: session %s (parent %s), exchanges %d, want %d", r.SessionID(), parent, r.Exchanges(), exchanges)
	}
	got := d.records(child)
	if h := got[0]; h.Type != memory.RecordHeader || h.Parent != parent || h.ForkedFrom != parent || h.Session != child {
		t.Errorf("the fork's header = %+v, want parent and forked_from %s", h, parent)
	}
	var want []memory.Record
	for _, rec := range before[1:] {
		rec.ForkedFrom = parent
		want = append(want, rec)
	}
	if !reflect.DeepEqual(got[1:], want) {
		g, _ := json.MarshalIndent(got[1:], "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("the fork's records:\n%s\nwant the old session's, each with forked_from:\n%s", g, w)
	}
	// The copy lost nothing of what operators read.
	var sawScripted, sawUsage, sawKind, sawTool bool
	for _, rec := range got[1:] {
		sawScripted = sawScripted || (rec.Scripted && rec.Model == "offline" && rec.Provider == string(router.ScriptedProvider))
		sawUsage = sawUsage || rec.Usage != nil
		sawKind = sawKind || (rec.Role == router.RoleUser && rec.Kind == string(triggers.Market) && rec.Trigger == "mkt-7")
		sawTool = sawTool || (rec.Type == memory.RecordTool && rec.ToolName == "note")
	}
	if !sawScripted || !sawUsage || !sawKind || !sawTool {
		t.Errorf("the fork's records lack scripted %v, usage %v, kind and trigger %v, tool result %v", sawScripted, sawUsage, sawKind, sawTool)
	}

	// The next turn goes on in the fork with the old context; a restart
	// finds the same conversation in the file.
	d.send(r, "f2", triggers.Manual, "And now?")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	again := d.router()
	if again.SessionID() != child || again.Exchanges() != exchanges+1 {
		t.Errorf("after a restart: session %s with %d exchanges, want %s with %d", again.SessionID(), again.Exchanges(), child, exchanges+1)
	}
	if parentNow := d.records(parent); !reflect.DeepEqual(parentNow, before) {
		t.Errorf("the fork changed the old session's file")
	}
}

// TestUnreadableMemoryIsAnnounced: a Memory.md that exists but cannot be
// read is not dropped from the prompt without a word: the router announces
// memory.unreadable with its path and the error, lists it in Unreadable
// until it can be read again, and then carries it again. The file is made
// unreadable by being a directory, which fails for root too (the tests run
// as root, who reads a chmod 000 file).
func TestUnreadableMemoryIsAnnounced(t *testing.T) {
	d := newProvDesk(t)
	path := d.folder.Path(memory.MemoryFile)
	if err := os.Mkdir(path, 0o750); err != nil {
		t.Fatal(err)
	}
	events := eventtest.Watch[event.MemoryUnreadable](t, d.bus)
	r := d.router()
	d.send(r, "t1", triggers.Manual, "Check the tape.")
	d.send(r, "t2", triggers.Manual, "Again.")

	if e := eventtest.Next[event.MemoryUnreadable](events); e.Desk != "main" || e.Path != path || !strings.Contains(e.Error, "a folder, not a regular file") {
		t.Errorf("memory.unreadable = %+v, want desk main, path %s and the error", e, path)
	}
	u := r.Unreadable()
	if len(u) != 1 || u[0].Path != path || !strings.Contains(u[0].Error, "a folder, not a regular file") || u[0].Since.IsZero() {
		t.Fatalf("Unreadable() = %+v, want %s", u, path)
	}
	if s := d.model.lastSystem(t); strings.Contains(s, "Memory.md") {
		t.Errorf("the prompt claims a Memory.md it could not read:\n%s", s)
	}

	// Readable again: Unreadable is empty at once, the prompt carries it.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := d.folder.WriteMemory("# Memory\n- Respect the stop loss.\n"); err != nil {
		t.Fatal(err)
	}
	if u := r.Unreadable(); len(u) != 0 {
		t.Errorf("Unreadable() = %+v once Memory.md can be read", u)
	}
	d.send(r, "t3", triggers.Manual, "Now?")
	if s := d.model.lastSystem(t); !strings.Contains(s, "- Respect the stop loss.") {
		t.Errorf("the prompt lacks Memory.md once it can be read:\n%s", s)
	}
	// Closing the bus delivers every event published: once per unreadable file, not per prompt.
	d.bus.Close()
	eventtest.ExpectNone[event.MemoryUnreadable](events)
}

// TestUnreadableSkillIsAnnounced: a skill whose SKILL.md cannot be read is
// announced and listed; the prompt's index of skills still names the
// skills that can be read, which skill_read takes by folder name.
func TestUnreadableSkillIsAnnounced(t *testing.T) {
	d := newProvDesk(t)
	if _, err := d.folder.WriteSkill("vwap", "---\nname: vwap\ndescription: VWAP entries\n---\n\nBody.\n"); err != nil {
		t.Fatal(err)
	}
	r := d.router()
	d.send(r, "t1", triggers.Manual, "Check the tape.")
	if s := d.model.lastSystem(t); !strings.Contains(s, "- vwap: VWAP entries") {
		t.Fatalf("the prompt lacks the skills index:\n%s", s)
	}
	bad := d.folder.Path(filepath.Join(memory.SkillsDir, "broken", memory.SkillFile))
	if err := os.MkdirAll(bad, 0o750); err != nil { // a directory where SKILL.md should be
		t.Fatal(err)
	}
	events := eventtest.Watch[event.MemoryUnreadable](t, d.bus)
	d.send(r, "t2", triggers.Manual, "Again.")
	if e := eventtest.Next[event.MemoryUnreadable](events); e.Path != bad || e.Error == "" {
		t.Errorf("memory.unreadable = %+v, want path %s", e, bad)
	}
	if u := r.Unreadable(); len(u) != 1 || u[0].Path != bad {
		t.Errorf("Unreadable() = %+v, want %s", u, bad)
	}
	if s := d.model.lastSystem(t); !strings.Contains(s, "- vwap\n") || strings.Contains(s, "broken") {
		t.Errorf("the prompt should still name the readable skill, and not the broken one:\n%s", s)
	}
	if err := os.RemoveAll(filepath.Dir(bad)); err != nil {
		t.Fatal(err)
	}
	if u := r.Unreadable(); len(u) != 0 {
		t.Errorf("Unreadable() = %+v once the broken skill is gone", u)
	}
}
