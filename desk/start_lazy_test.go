package desk_test

// An idle desk's folder is made lazily (issue 24 item 4): its first start
// names its first session and writes nothing; the desk's first durable
// write (a trigger, a pause, a rollover) makes its folder, and its first
// turn the session's file and state.json.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/triggers"
)

// lazyRun is a daemon of the config in a folder, on a fake clock the test
// moves, writing through fsys, its events watched (nil when startRun was
// told not to).
type lazyRun struct {
	dir    string
	d      *desk.Daemon
	clk    *clock.Fake
	events *eventtest.Watcher
	sigs   chan os.Signal
	done   chan error
	log    *syncBuffer
}

// runLazy starts the daemon of the config in dir at clk's time, its
// events watched, and waits (2 min) until it is ready.
func runLazy(tb testing.TB, dir string, clk *clock.Fake, fsys durable.FS) *lazyRun {
	tb.Helper()
	return startRun(tb, dir, clk, fsys, true)
}

// startRun starts the daemon of the config in dir at clk's time, its
// events watched when watch is set (a benchmark's are not: the watcher
// would keep every event of the run), and waits (2 min) until it is
// ready.
func startRun(tb testing.TB, dir string, clk *clock.Fake, fsys durable.FS, watch bool) *lazyRun {
	tb.Helper()
	cfg, err := config.Load(filepath.Join(dir, "deskd.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	bus := event.New()
	r := &lazyRun{dir: dir, clk: clk, sigs: make(chan os.Signal, 1), done: make(chan error, 1), log: &syncBuffer{}}
	if watch {
		r.events = eventtest.WatchAll(tb, bus)
	}
	r.d, err = desk.NewDaemon(desk.DaemonOptions{Config: cfg, Clock: clk, Bus: bus, FS: fsys, Log: zerolog.New(r.log).Level(zerolog.WarnLevel)})
	if err != nil {
		tb.Fatal(err)
	}
	go func() { r.done <- r.d.Run(context.Background(), r.sigs) }()
	select {
	case <-r.d.Ready():
	case err := <-r.done:
		tb.Fatalf("the daemon stopped before it was ready: %v\n%s", err, r.log)
	case <-time.After(2 * time.Minute):
		tb.Fatalf("the daemon was not ready within 2 min")
	}
	return r
}

// stop sends SIGTERM and waits (2 min) for Run; its error is returned.
func (r *lazyRun) stop(tb testing.TB) error {
	tb.Helper()
	r.sigs <- syscall.SIGTERM
	select {
	case err := <-r.done:
		return err
	case <-time.After(2 * time.Minute):
		tb.Fatalf("the daemon did not stop within 2 min\n%s", r.log)
		return nil
	}
}

// stopCleanly stops the daemon as stop does; Run must return nil.
func (r *lazyRun) stopCleanly(tb testing.TB) {
	tb.Helper()
	if err := r.stop(tb); err != nil {
		tb.Fatalf("Run = %v, want nil\n%s", err, r.log)
	}
}

// desk returns the running desk name.
func (r *lazyRun) desk(tb testing.TB, name string) *desk.Desk {
	tb.Helper()
	dk, ok := r.d.Set().Get(name)
	if !ok {
		tb.Fatalf("desk %s does not run; failed: %v\n%s", name, r.d.Set().Failed(), r.log)
	}
	return dk
}

// answer submits a trigger id to desk name and waits (1 min) until it is
// final, and returns its status.
func (r *lazyRun) answer(tb testing.TB, name, id string) desk.TriggerStatus {
	tb.Helper()
	dk := r.desk(tb, name)
	if _, err := dk.Submit(triggers.Trigger{ID: id, Kind: triggers.Manual, Text: "Good morning"}); err != nil {
		tb.Fatalf("submit %s to %s: %v", id, name, err)
	}
	ctx, cancel := context.WithTimeout(tb.Context(), time.Minute)
	defer cancel()
	s, ok := dk.WaitTrigger(ctx, id, time.Hour)
	if !ok || !s.Final() {
		tb.Fatalf("trigger %s of %s: %+v (known %v), want it final within 1 min\n%s", id, name, s, ok, r.log)
	}
	return s
}

// deskDir is desk name's folder under dir's state folder.
func deskDir(dir, name string) string { return filepath.Join(dir, "state", "desks", name) }

// readState reads desk name's state.json: its session and trading date.
func readState(tb testing.TB, dir, name string) (st memory.State, ok bool) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(deskDir(dir, name), memory.StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return memory.State{}, false
	}
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		tb.Fatalf("%s's state.json: %v: %s", name, err, b)
	}
	return st, true
}

// sessionRecords reads session id of desk name.
func sessionRecords(tb testing.TB, dir, name, id string) []memory.Record {
	tb.Helper()
	f, err := memory.OpenFolder(deskDir(dir, name), name, time.Now)
	if err != nil {
		tb.Fatal(err)
	}
	recs, err := f.ReadSession(id)
	if err != nil {
		tb.Fatalf("session %s of %s: %v", id, name, err)
	}
	return recs
}

// checkAnsweredIn checks that session id of desk name is whole: its header
// first, naming it and the desk, then trigger's message and its reply.
func checkAnsweredIn(tb testing.TB, dir, name, id, trigger string) {
	tb.Helper()
	recs := sessionRecords(tb, dir, name, id)
	if len(recs) == 0 || recs[0].Type != memory.RecordHeader || recs[0].Session != id || recs[0].Desk != name {
		tb.Fatalf("session %s of %s begins %+v, want its header", id, name, recs)
	}
	var asked, answered bool
	for _, rec := range recs[1:] {
		if rec.Type == memory.RecordHeader {
			tb.Errorf("session %s of %s holds a second header: %+v", id, name, rec)
		}
		if rec.Type == memory.RecordMessage && rec.Trigger == trigger {
			asked = asked || rec.Role == "user"
			answered = answered || rec.Role == "assistant"
		}
	}
	if !asked || !answered {
		tb.Errorf("session %s of %s: trigger %s asked %v, answered %v; want both: %+v", id, name, trigger, asked, answered, recs)
	}
}

// TestIdleDeskFirstWrite: idle desks' first start makes no desk folder,
// and each desk shows the session it will write; a trigger to one desk
// makes its folder, its ledger, its first session's file under the id the
// start showed (its header, the message, the reply) and a state.json
// naming it, and nothing of the other desks'. A restart resumes the desk
// that wrote, and shows the idle ones under the same session ids as
// before, still writing nothing.
func TestIdleDeskFirstWrite(t *testing.T) {
	const idle = 3
	dir := idleFleet(t, idle)
	names := []string{"i00000", "i00001", "i00002"}
	r := runLazy(t, dir, clock.NewFake(start), nil)
	ids := map[string]string{}
	for _, name := range names {
		st := r.desk(t, name).Status()
		if st.Session == "" || st.Exchanges != 0 || st.TradingDate != desktest.Day().DateOf(start).String() {
			t.Errorf("idle desk %s shows session %q, %d exchanges, date %s; want a session of %s and none", name, st.Session, st.Exchanges, st.TradingDate, desktest.Day().DateOf(start))
		}
		ids[name] = st.Session
		if _, err := os.Lstat(deskDir(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("idle desk %s's first start made its folder (%v), want none", name, err)
		}
	}
	ev := eventtest.NextWhere(r.events, func(e event.SessionStarted) bool { return e.Desk == names[0] })
	if ev.Reason != event.ReasonFirst || ev.Session != ids[names[0]] {
		t.Errorf("session.started of %s = %+v, want its first session %s", names[0], ev, ids[names[0]])
	}

	s := r.answer(t, names[0], "a")
	if s.State != triggers.StateAnswered || s.Session != ids[names[0]] || s.Turn != 1 {
		t.Fatalf("the first trigger = %+v, want answered as turn 1 of %s", s, ids[names[0]])
	}
	if st, ok := readState(t, dir, names[0]); !ok || st.Session != ids[names[0]] || st.Date != desktest.Day().DateOf(start) {
		t.Errorf("after the first turn state.json = %+v (there %v), want session %s of %s", st, ok, ids[names[0]], desktest.Day().DateOf(start))
	}
	checkAnsweredIn(t, dir, names[0], ids[names[0]], "a")
	if _, err := os.Stat(filepath.Join(deskDir(dir, names[0]), triggers.LedgerFile)); err != nil {
		t.Errorf("the first trigger left no ledger: %v", err)
	}
	for _, name := range names[1:] {
		if _, err := os.Lstat(deskDir(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a trigger of %s made the folder of %s (%v)", names[0], name, err)
		}
	}
	r.stopCleanly(t)

	fsys := &faultfs.FS{Under: string(filepath.Separator) + "desks"}
	r = runLazy(t, dir, clock.NewFake(start.Add(time.Hour)), fsys)
	for _, name := range names {
		st := r.desk(t, name).Status()
		want := 0
		if name == names[0] {
			want = 1
		}
		if st.Session != ids[name] || st.Exchanges != want {
			t.Errorf("after a restart %s shows session %s with %d exchanges, want %s with %d", name, st.Session, st.Exchanges, ids[name], want)
		}
	}
	for _, e := range eventtest.Rest[event.SessionStarted](r.events) {
		if want := map[bool]event.SessionReason{true: event.ReasonResumed, false: event.ReasonFirst}[e.Desk == names[0]]; e.Reason != want {
			t.Errorf("after a restart session.started %+v, want reason %s", e, want)
		}
	}
	for _, op := range startOps {
		if n := fsys.Count(op); n != 0 {
			t.Errorf("the restart made %d %s operations, want none", n, op)
		}
	}
	s = r.answer(t, names[1], "b")
	if s.State != triggers.StateAnswered || s.Session != ids[names[1]] || s.Turn != 1 {
		t.Errorf("the first trigger of %s after the restart = %+v, want answered as turn 1 of %s", names[1], s, ids[names[1]])
	}
	checkAnsweredIn(t, dir, names[1], ids[names[1]], "b")
	r.stopCleanly(t)
}

// TestIdleDeskRollsOverWithoutWriting: at the day boundary the idle desks
// roll over (session.started, daily_rollover, naming the session before)
// to a new session, and still hold no session file nor state.json; the
// new session is the one a restart on the new trading date shows,
// and a trigger then writes it, dated the new day, without a parent (the
// session before it was never written).
func TestIdleDeskRollsOverWithoutWriting(t *testing.T) {
	dir := idleFleet(t, 2)
	names := []string{"i00000", "i00001"}
	clk := clock.NewFake(start)
	r := runLazy(t, dir, clk, nil)
	before := map[string]string{}
	for _, name := range names {
		before[name] = r.desk(t, name).Status().Session
	}
	next := desktest.Day().NextBoundary(start)
	clk.Set(next.Add(time.Second))
	after := map[string]string{}
	for len(after) < len(names) {
		ev := eventtest.NextWhere(r.events, func(e event.SessionStarted) bool { return e.Reason == event.ReasonDailyRollover })
		if _, ok := before[ev.Desk]; !ok || after[ev.Desk] != "" {
			t.Fatalf("session.started %+v, want one rollover of each desk", ev)
		}
		if ev.Previous != before[ev.Desk] || ev.Session == before[ev.Desk] {
			t.Errorf("%s rolled over %+v, want from %s to a new session", ev.Desk, ev, before[ev.Desk])
		}
		after[ev.Desk] = ev.Session
	}
	for _, name := range names {
		for _, rel := range []string{memory.StateFile, memory.SessionsDir} {
			if _, err := os.Lstat(filepath.Join(deskDir(dir, name), rel)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the rollover of idle desk %s wrote %s (%v), want nothing of its session", name, rel, err)
			}
		}
	}
	r.stopCleanly(t)

	r = runLazy(t, dir, clock.NewFake(next.Add(time.Hour)), nil)
	for _, name := range names {
		if got := r.desk(t, name).Status().Session; got != after[name] {
			t.Errorf("a restart on the new date shows %s's session %s, want %s (the rollover's)", name, got, after[name])
		}
	}
	s := r.answer(t, names[0], "a")
	if s.State != triggers.StateAnswered || s.Session != after[names[0]] {
		t.Fatalf("the trigger after the rollover = %+v, want answered in %s", s, after[names[0]])
	}
	checkAnsweredIn(t, dir, names[0], after[names[0]], "a")
	h := sessionRecords(t, dir, names[0], after[names[0]])[0]
	if h.Date != desktest.Day().DateOf(next).String() || h.Parent != "" {
		t.Errorf("the session's header %+v, want dated %s without a parent", h, desktest.Day().DateOf(next))
	}
	r.stopCleanly(t)
}

// TestIdleDeskFirstWriteCutShort: a crash at each step of an idle desk's
// first durable write (a trigger's record, then its turn: the desk's
// folder, its ledger, sessions/, the session's file, state.json, the
// turn's records), simulated by a file layer that refuses every write,
// fsync, creation, rename and removal from that step on. The next start,
// on a sound disk, runs every desk; the trigger, if its submission was
// acknowledged, is answered or interrupted, never lost; a new trigger is
// answered in the session state.json names, whose file is whole; and the
// start after that writes nothing.
func TestIdleDeskFirstWriteCutShort(t *testing.T) {
	// How many steps a sound first write takes.
	dir := idleFleet(t, 2)
	count := &crashFS{left: -1}
	r := runLazy(t, dir, clock.NewFake(start), count)
	count.arm(-1)
	r.answer(t, "i00000", "a")
	r.stopCleanly(t)
	steps := count.made()
	if steps < 10 {
		t.Fatalf("a sound first write made %d steps, want at least 10 (the folder, ledger, session and state.json)", steps)
	}
	t.Logf("a desk's first write (trigger and turn): %d steps", steps)
	for at := 0; at < steps; at++ {
		t.Run(fmt.Sprintf("crash at step %d", at), func(t *testing.T) {
			dir := idleFleet(t, 2)
			c := &crashFS{left: -1}
			r := runLazy(t, dir, clock.NewFake(start), c)
			c.arm(at)
			acc, err := r.desk(t, "i00000").Submit(triggers.Trigger{ID: "a", Kind: triggers.Manual, Text: "Good morning"})
			acked := err == nil && !acc.Duplicate
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			select {
			case <-c.crashed:
			case <-waitFinal(ctx, r.desk(t, "i00000"), "a", acked):
			}
			cancel()
			_ = r.stop(t) // a crashed disk may fail the stop: the process is gone anyway

			r = runLazy(t, dir, clock.NewFake(start.Add(time.Minute)), nil)
			if f := r.d.Set().Failed(); len(f) != 0 {
				t.Fatalf("after a crash at step %d desks failed to start: %v\n%s", at, f, r.log)
			}
			if acked {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				s, ok := r.desk(t, "i00000").WaitTrigger(ctx, "a", time.Hour)
				cancel()
				if !ok || (s.State != triggers.StateAnswered && s.State != triggers.StateInterrupted) {
					t.Errorf("the acknowledged trigger after the crash: %+v (known %v), want answered or interrupted", s, ok)
				}
			}
			s := r.answer(t, "i00000", "b")
			if s.State != triggers.StateAnswered {
				t.Fatalf("a trigger after the crash = %+v, want answered\n%s", s, r.log)
			}
			st, ok := readState(t, dir, "i00000")
			if !ok || st.Session != s.Session {
				t.Fatalf("state.json = %+v (there %v), want the session %s of the answer", st, ok, s.Session)
			}
			checkAnsweredIn(t, dir, "i00000", st.Session, "b")
			r.stopCleanly(t)

			again := &faultfs.FS{Under: string(filepath.Separator) + "desks"}
			r = runLazy(t, dir, clock.NewFake(start.Add(2*time.Minute)), again)
			if got := len(r.d.Set().Names()); got != 2 {
				t.Fatalf("the start after that runs %d desks of 2\n%s", got, r.log)
			}
			r.stopCleanly(t)
			for _, op := range startOps {
				if n := again.Count(op); n != 0 {
					t.Errorf("the start after that made %d %s operations, want none: the desk's files were not whole", n, op)
				}
			}
		})
	}
}

// waitFinal returns a channel closed once trigger id of dk is final (or
// ctx ends); when the trigger was not acknowledged it is closed at once
// after a look.
func waitFinal(ctx context.Context, dk *desk.Desk, id string, acked bool) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if acked {
			dk.WaitTrigger(ctx, id, time.Hour)
		}
	}()
	return done
}

// crashFS is the operating system's file layer with a crash in it: once
// armed, it lets so many mutating operations through (a creation, a
// write, an fsync, a rename, a link, a removal, a truncation) and refuses
// every later one, as a process killed at that point would make no more.
// left < 0 lets every one through (counting them).
type crashFS struct {
	mu      sync.Mutex
	armed   bool
	left    int
	n       int
	crashed chan struct{}
}

var _ durable.FS = (*crashFS)(nil)

// arm starts counting: at steps through, then the crash (at < 0: none).
func (c *crashFS) arm(at int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.left, c.n, c.crashed = true, at, 0, make(chan struct{})
}

// made returns how many mutating operations were made since arm.
func (c *crashFS) made() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// step counts one mutating operation on path and says whether it may be
// made.
func (c *crashFS) step(op, path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.armed {
		return nil
	}
	if c.left == 0 {
		select {
		case <-c.crashed:
		default:
			close(c.crashed)
		}
		return &fs.PathError{Op: op, Path: path, Err: syscall.EIO}
	}
	c.n++
	if c.left > 0 {
		c.left--
	}
	return nil
}

func (c *crashFS) OpenFile(name string, flag int, perm fs.FileMode) (durable.File, error) {
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		if err := c.step("open", name); err != nil {
			return nil, err
		}
	}
	f, err := durable.OS{}.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, c: c}, nil
}

func (c *crashFS) CreateTemp(dir, pattern string) (durable.File, error) {
	if err := c.step("createtemp", dir); err != nil {
		return nil, err
	}
	f, err := durable.OS{}.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: f, c: c}, nil
}

func (c *crashFS) Rename(oldpath, newpath string) error {
	if err := c.step("rename", newpath); err != nil {
		return err
	}
	return os.Rename(oldpath, newpath)
}

func (c *crashFS) Link(oldname, newname string) error {
	if err := c.step("link", newname); err != nil {
		return err
	}
	return os.Link(oldname, newname)
}

func (c *crashFS) Remove(name string) error {
	if err := c.step("remove", name); err != nil {
		return err
	}
	return os.Remove(name)
}

func (c *crashFS) Mkdir(name string, perm fs.FileMode) error {
	if err := c.step("mkdir", name); err != nil {
		return err
	}
	return os.Mkdir(name, perm)
}

func (c *crashFS) Chown(name string, uid, gid int) error { return os.Lchown(name, uid, gid) }

// crashFile is a file opened through a crashFS.
type crashFile struct {
	durable.File
	c *crashFS
}

func (f *crashFile) Write(p []byte) (int, error) {
	if err := f.c.step("write", f.Name()); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *crashFile) Sync() error {
	if err := f.c.step("fsync", f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *crashFile) Truncate(size int64) error {
	if err := f.c.step("truncate", f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}
