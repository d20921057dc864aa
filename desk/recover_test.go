package desk_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// TestRecoveryReconcilesFromSession: deskd was killed after a turn's reply
// reached the session file but before the ledger recorded it answered; and
// with another trigger recorded sent whose message never reached the
// session. After the restart the first is answered (from the session
// file), not interrupted, and not run again; the second runs once.
func TestRecoveryReconcilesFromSession(t *testing.T) {
	dir := t.TempDir()
	m := &countingModel{turns: map[string]int{}}
	h := desktest.New(t, desktest.Options{Model: m, Dir: dir})
	submitRetrying(t, h, triggers.Trigger{ID: "A", Kind: triggers.Market, Text: "tick A"})
	done := settle(t, h, "A")
	session := h.Router.SessionID()
	h.Stop()
	_ = h.Ledger.Close()

	// The kill: the ledger lacks A's answered record. B was sent in the
	// same session, but its message was never written.
	path := filepath.Join(dir, "main", triggers.LedgerFile)
	dropAnswers(t, path)
	l, err := triggers.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	b := triggers.Trigger{ID: "B", Desk: "main", Kind: triggers.Market, Text: "tick B"}
	for _, r := range []triggers.Record{
		{At: start, ID: "B", State: triggers.StateQueued, Trigger: &b},
		{At: start, ID: "B", State: triggers.StateRunning},
		{At: start, ID: "B", State: triggers.StateSent, Session: session, Turn: 2},
	} {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	_ = l.Close()
	staged, err := triggers.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	stagedA, _ := staged.Get("A")
	_ = staged.Close()
	if stagedA.State != triggers.StateSent {
		t.Fatalf("the staged ledger has A %s, want sent", stagedA.State)
	}

	m2 := &countingModel{turns: map[string]int{}}
	h2 := desktest.New(t, desktest.Options{Model: m2, Dir: dir})
	got := eventtest.NextWhere(h2.Events, func(e event.TurnCompleted) bool { return e.Trigger == "A" })
	if !got.Reconciled || got.Session != session || got.Turn != done.Turn {
		t.Errorf("turn.completed for A after the restart = %+v, want reconciled in %s, turn %d", got, session, done.Turn)
	}
	a, _ := h2.Desk.Trigger("A")
	if a.State != triggers.StateAnswered || a.Reply != done.Reply || a.Reply == "" {
		t.Errorf("A after the restart = %+v, want answered with the reply %q", a, done.Reply)
	}
	if s := settle(t, h2, "B"); s.State != triggers.StateAnswered {
		t.Errorf("B after the restart = %+v, want answered", s)
	}
	if n := m2.count("tick A"); n != 0 {
		t.Errorf("A reached the model %d times after the restart, want 0", n)
	}
	if n := m2.count("tick B"); n != 1 {
		t.Errorf("B reached the model %d times after the restart, want once", n)
	}
	for _, it := range h2.Desk.Status().Interrupted {
		t.Errorf("interrupted after the restart: %+v", it)
	}
}

// TestLedgerDamageIsAnnounced: a torn ledger tail found at start is set
// aside and announced as file.torn, never dropped without a word.
func TestLedgerDamageIsAnnounced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "main", triggers.LedgerFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	const frag = `{"at":"2026-03-02T04:00:00Z","id":"x","sta`
	if err := os.WriteFile(path, []byte(frag), 0o640); err != nil {
		t.Fatal(err)
	}
	h := desktest.New(t, desktest.Options{Dir: dir})
	ev := eventtest.Next[event.FileTorn](h.Events)
	if ev.Path != path || ev.Bytes != len(frag) || ev.Offset != 0 || !strings.HasPrefix(ev.SavedTo, path+".torn-") {
		t.Errorf("file.torn = %+v, want the ledger's %d torn bytes at 0, saved beside it", ev, len(frag))
	}
}

// TestInterruptedSaysWhetherTheRequestWasSent: deskd is killed while a
// turn is with the model (the files copied as the kill leaves them), or
// after its message was recorded and before its request went out (the
// same files without the session's request.sent record). After the
// restart the trigger is interrupted either way, not run again, and its
// reason, in the ledger (GET trigger), the status and turn.interrupted,
// tells the two apart: "sent: the model may have acted" or "never sent
// to the model". On a host of a cluster a missing request.sent record
// proves nothing (a takeover can lose it): the reason says the model may
// have acted, and model_called is set.
func TestInterruptedSaysWhetherTheRequestWasSent(t *testing.T) {
	tests := []struct {
		name       string
		dropMarker bool
		cluster    bool
		want       string
	}{
		{"sent", false, false, "sent: the model may have acted"},
		{"never sent", true, false, "never sent to the model"},
		{"marker lost on a cluster", true, true, "may have been sent: the model may have acted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gate := desktest.NewGate()
			h := desktest.New(t, desktest.Options{Model: gate})
			h.Submit(triggers.Trigger{ID: "A", Kind: triggers.Market, Text: "tick A"})
			gate.Expect(t, "tick A")
			// The kill: the state folder as it is now, the model call
			// under way.
			crash := t.TempDir()
			if err := os.CopyFS(crash, os.DirFS(h.Dir)); err != nil {
				t.Fatal(err)
			}
			rel, err := filepath.Rel(h.Dir, h.Folder.SessionPath(h.Desk.Status().Session)) // the router is busy
			if err != nil {
				t.Fatal(err)
			}
			gate.Release()
			h.Close()

			path := filepath.Join(crash, rel)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var kept [][]byte
			marker := []byte(`"kind":"` + memory.RequestSentKind + `"`)
			for _, line := range bytes.SplitAfter(data, []byte("\n")) {
				if !bytes.Contains(line, marker) || !tt.dropMarker {
					kept = append(kept, line)
				}
			}
			if !bytes.Contains(data, marker) {
				t.Fatalf("the session file has no request.sent record while the model call is under way:\n%s", data)
			}
			if err := os.WriteFile(path, bytes.Join(kept, nil), 0o640); err != nil {
				t.Fatal(err)
			}

			m := &countingModel{turns: map[string]int{}}
			h2 := desktest.New(t, desktest.Options{Model: m, Dir: crash, SentMayBeLost: tt.cluster})
			ev := eventtest.NextWhere(h2.Events, func(e event.TurnInterrupted) bool { return e.Trigger == "A" })
			if !strings.HasPrefix(ev.Reason, tt.want) {
				t.Errorf("turn.interrupted reason = %q, want it to begin %q", ev.Reason, tt.want)
			}
			a, _ := h2.Desk.Trigger("A")
			if a.State != triggers.StateInterrupted || !strings.HasPrefix(a.Reason, tt.want) {
				t.Errorf("A after the restart = %s, %q; want interrupted, %q...", a.State, a.Reason, tt.want)
			}
			if want := !tt.dropMarker || tt.cluster; a.ModelCalled != want {
				t.Errorf("A's model_called = %v, want %v: it says whether the request may have gone to the model", a.ModelCalled, want)
			}
			st := h2.Desk.Status()
			if len(st.Interrupted) != 1 || !strings.HasPrefix(st.Interrupted[0].Reason, tt.want) {
				t.Errorf("status interrupted = %+v, want A, %q...", st.Interrupted, tt.want)
			}
			if st.QueueDepth != 0 || m.count("tick A") != 0 {
				t.Errorf("A queued again (%d) or run again (%d): want neither", st.QueueDepth, m.count("tick A"))
			}
		})
	}
}
