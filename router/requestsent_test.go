package router_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// TestOutcomeSaysWhetherTheRequestWasSent: deskd is killed while a turn's
// request is with the model (the folder copied as the kill leaves it); a
// restart's Outcomes finds the trigger seen and requested. The same files
// without the request.sent record (a kill after the message was recorded,
// before the request went out) are seen and not requested; the finished
// turn is answered and requested.
func TestOutcomeSaysWhetherTheRequestWasSent(t *testing.T) {
	g := newRig(t, "2026-03-01T04:30:00Z")
	gate := desktest.NewGate()
	r, folder, _ := g.open(router.Model{Name: "m", Provider: "openai", Client: gate})
	done := make(chan error, 1)
	go func() { _, err := r.Send(t.Context(), trigger("t1", "tick")); done <- err }()
	gate.Expect(t, "tick")
	crash := filepath.Join(t.TempDir(), "desks", "main")
	if err := os.CopyFS(crash, os.DirFS(g.dir)); err != nil {
		t.Fatal(err)
	}
	gate.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	session := r.SessionID()
	if got, err := r.Outcomes(session, []string{"t1"}); err != nil || !got["t1"].Answered || !got["t1"].Requested {
		t.Errorf("Outcomes of the finished turn = %+v, %v; want answered and requested", got, err)
	}
	rel, err := filepath.Rel(g.dir, folder.SessionPath(session))
	if err != nil {
		t.Fatal(err)
	}
	outcome := func(name string) router.Outcome {
		t.Helper()
		g2 := &rig{t: t, dir: crash, clock: g.clock, bus: g.bus}
		r2, _, _ := g2.open(offline)
		got, err := r2.Outcomes(session, []string{"t1"})
		if err != nil {
			t.Fatalf("%s: Outcomes: %v", name, err)
		}
		_ = r2.Close()
		return got["t1"]
	}
	if o := outcome("killed during the call"); !o.Seen || !o.Requested || o.Answered {
		t.Errorf("killed during the model call: %+v, want seen and requested, not answered", o)
	}
	path := filepath.Join(crash, rel)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	marker := []byte(`"kind":"` + memory.RequestSentKind + `"`)
	var kept [][]byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if !bytes.Contains(line, marker) {
			kept = append(kept, line)
		}
	}
	if len(kept) == len(bytes.SplitAfter(data, []byte("\n"))) {
		t.Fatalf("no request.sent record in the session file:\n%s", data)
	}
	if err := os.WriteFile(path, bytes.Join(kept, nil), 0o640); err != nil {
		t.Fatal(err)
	}
	if o := outcome("killed before the request"); !o.Seen || o.Requested || o.Answered {
		t.Errorf("killed before the request went out: %+v, want seen, not requested", o)
	}
}

// TestRequestSentRecordFailureAsksNoModel: when the request.sent record
// cannot be written, the model is not asked, and the turn's error says so
// (ErrNotSent: the trigger may run again).
func TestRequestSentRecordFailureAsksNoModel(t *testing.T) {
	gate := desktest.NewGate()
	faults := &faultfs.FS{}
	r := faultyRouter(t, faults, gate)
	gate.Release() // a call, were one made, answers at once (and is seen below)
	// The first session's header and its state file are the first writes
	// (at its first use); the message and request.sent, in one write, the
	// third.
	faults.FailAt(faultfs.Write, 3, faultfs.ErrNoSpace)
	_, err := r.Send(t.Context(), trigger("t1", "tick"))
	if !errors.Is(err, router.ErrNotSent) || !strings.Contains(err.Error(), "the model was not asked") || !strings.Contains(err.Error(), "t1") {
		t.Fatalf("Send with request.sent unwritable = %v, want an error saying the model was not asked", err)
	}
	gate.ExpectNoCall(t, "request.sent could not be written")
}

// TestSendAcceptedWritesTheMessageWithoutItsFsync: Send fsyncs the user's
// message before the request goes out; SendAccepted (for a trigger whose
// acceptance is the turn's durability point) writes it in the same place
// with no fsync before the request, and the reply's fsync makes it
// durable. Both turns record the same messages, and Outcomes finds both
// answered and requested.
func TestSendAcceptedWritesTheMessageWithoutItsFsync(t *testing.T) {
	faults := &faultfs.FS{}
	m := &syncCounter{fs: faults}
	r := faultyRouter(t, faults, m)
	if _, err := r.Send(t.Context(), trigger("warm-up", "tick 0")); err != nil { // opens the session's files
		t.Fatal(err)
	}
	for _, c := range []struct {
		id        string
		send      func(context.Context, triggers.Trigger) (router.Reply, error)
		toModel   int
		wholeTurn int
	}{
		{"t1", r.Send, 1, 2},
		{"t2", r.SendAccepted, 0, 1},
	} {
		before := faults.Count(faultfs.Sync)
		if _, err := c.send(t.Context(), trigger(c.id, "tick "+c.id)); err != nil {
			t.Fatal(err)
		}
		if n := m.at - before; n != c.toModel {
			t.Errorf("%s: %d fsyncs before its request, want %d", c.id, n, c.toModel)
		}
		if n := faults.Count(faultfs.Sync) - before; n != c.wholeTurn {
			t.Errorf("%s: %d fsyncs in its turn, want %d", c.id, n, c.wholeTurn)
		}
	}
	got, err := r.Outcomes(r.SessionID(), []string{"t1", "t2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t1", "t2"} {
		if o := got[id]; !o.Seen || !o.Requested || !o.Answered {
			t.Errorf("Outcomes of %s = %+v, want seen, requested and answered", id, o)
		}
	}
}

// syncCounter is the scripted model, noting how many fsyncs fs had made
// when the last turn's request reached it.
type syncCounter struct {
	fs *faultfs.FS
	at int
}

func (m *syncCounter) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	if req.Task == router.TaskTurn {
		m.at = m.fs.Count(faultfs.Sync)
	}
	return router.Scripted{}.Complete(ctx, req)
}

// faultyRouter is a router over a new folder whose files go through
// faults, on the one model client, with its session restored.
func faultyRouter(t *testing.T, faults *faultfs.FS, client router.Provider) *router.Router {
	t.Helper()
	g := newRig(t, "2026-03-01T04:30:00Z")
	folder, err := memory.OpenFolder(g.dir, "main", g.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	folder.FS = faults
	r, err := router.New(router.Options{Desk: "main", Folder: folder, Clock: g.clock, Day: desktest.Day(), Bus: g.bus,
		Settings: router.Settings{Route: []router.Model{{Name: "m", Provider: "openai", Client: client}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	if _, err := r.RestoreSession(t.Context()); err != nil {
		t.Fatal(err)
	}
	return r
}
