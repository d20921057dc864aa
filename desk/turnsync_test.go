package desk_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// syncsAtModel is the scripted model, noting how many fsyncs the desk's
// file layer had made when each turn's request reached it.
type syncsAtModel struct {
	fs *faultfs.FS
	mu sync.Mutex
	at []int
}

func (m *syncsAtModel) Complete(ctx context.Context, req router.Request) (router.Response, error) {
	if req.Task == router.TaskTurn {
		m.mu.Lock()
		m.at = append(m.at, m.fs.Count(faultfs.Sync))
		m.mu.Unlock()
	}
	return router.Scripted{}.Complete(ctx, req)
}

func (m *syncsAtModel) last() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.at[len(m.at)-1]
}

// TestOneFsyncFromAcceptanceToTheModel: a trigger accepted while the
// desk's loop waits for work (Submit returns once its record is fsynced:
// the API's 202) goes to the model with no fsync after its acceptance:
// its ledger record (at_once) is the turn's one durability point, and the
// session's record of its message rides on the reply's fsync. The whole
// turn makes one (the reply; the ledger's answered record and the spend
// ride on it). A desk that does not take triggers at once (a cluster's
// host) fsyncs the message too: one fsync before the model, two a turn.
func TestOneFsyncFromAcceptanceToTheModel(t *testing.T) {
	for _, c := range []struct {
		name              string
		noAtOnce          bool
		toModel, toAnswer int
	}{
		{"taken at once", false, 0, 1},
		{"not taken at once", true, 1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			ffs := &faultfs.FS{}
			m := &syncsAtModel{fs: ffs}
			h := desktest.New(t, desktest.Options{Model: m, FS: ffs, NoAtOnce: c.noAtOnce})
			for _, id := range []string{"warm-up", "A", "B"} {
				if !c.noAtOnce {
					awaitWaiting(t, h)
				}
				// Submit makes one fsync, its record's; the turn may be
				// under way, even over, by the time it returns.
				accepted := ffs.Count(faultfs.Sync) + 1
				if _, err := h.Desk.Submit(triggers.Trigger{ID: id, Kind: triggers.Market, Text: "tick " + id}); err != nil {
					t.Fatal(err)
				}
				if s := settle(t, h, id); s.State != triggers.StateAnswered {
					t.Fatalf("%s ended %s (%s)", id, s.State, s.Reason)
				}
				if it, _ := h.Ledger.Get(id); it.AtOnce == c.noAtOnce {
					t.Errorf("trigger %s: its ledger record says at_once %v, want %v", id, it.AtOnce, !c.noAtOnce)
				}
				if id == "warm-up" {
					continue // the first turn may open the session's files
				}
				if n := m.last() - accepted; n != c.toModel {
					t.Errorf("trigger %s: %d fsyncs between its acceptance and its model request, want %d", id, n, c.toModel)
				}
				if n := ffs.Count(faultfs.Sync) - accepted; n != c.toAnswer {
					t.Errorf("trigger %s: %d fsyncs from its acceptance to its answer, want %d", id, n, c.toAnswer)
				}
			}
		})
	}
}

// awaitWaiting waits until h's loop waits for work (desk.Desk.Waiting).
func awaitWaiting(t *testing.T, h *desktest.Desk) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !h.Desk.Waiting() {
		if time.Now().After(deadline) {
			t.Fatalf("the desk's loop does not wait for work within 10s: %+v", h.Desk.Status())
		}
		<-time.After(time.Millisecond) // the loop returns to its select with no event to say so
	}
}

// TestATriggerThatWaitsHasItsMessageFsynced: a trigger accepted while a
// turn runs is not the loop's next step at once; its record is not at
// once, and its own message is fsynced before its request.
func TestATriggerThatWaitsHasItsMessageFsynced(t *testing.T) {
	ffs := &faultfs.FS{}
	g := desktest.NewGate()
	h := desktest.New(t, desktest.Options{Model: g, FS: ffs})
	awaitWaiting(t, h)
	h.Submit(triggers.Trigger{ID: "A", Kind: triggers.Market, Text: "tick A"})
	g.Expect(t, "tick A")
	h.Submit(triggers.Trigger{ID: "B", Kind: triggers.Market, Text: "tick B"})
	a, _ := h.Ledger.Get("A")
	b, _ := h.Ledger.Get("B")
	if !a.AtOnce || b.AtOnce {
		t.Fatalf("at_once: A %v, B %v; want A taken at once (the loop was waiting), B not (it waited behind A)", a.AtOnce, b.AtOnce)
	}
	before := ffs.Count(faultfs.Sync)
	g.Release()
	g.Expect(t, "tick B")
	// A's reply, then B's message.
	if n := ffs.Count(faultfs.Sync) - before; n != 2 {
		t.Errorf("%d fsyncs from A's answer to B's model request, want 2 (A's reply and B's message)", n)
	}
	g.Release()
	if s := settle(t, h, "B"); s.State != triggers.StateAnswered {
		t.Fatalf("B ended %s (%s)", s.State, s.Reason)
	}
}

// TestRecoveryWhenTheHostLostTheUnsyncedRecords: a crash of the host
// keeps what was fsynced, so the ledger may say only "queued" (its running
// and sent records are not fsynced) of a trigger whose message the session
// file holds. The restart goes by the session file: a trigger the model
// saw is interrupted, one whose reply was written is answered. A trigger
// the session never got runs when that proves the model was not asked:
// its message was fsynced before its request. One taken at once (its
// message written without an fsync of its own) is interrupted instead: a
// crash of the host may have lost the message of a request that went
// out. None runs twice.
func TestRecoveryWhenTheHostLostTheUnsyncedRecords(t *testing.T) {
	all := func([]byte) bool { return true }
	noReply := func(line []byte) bool { return !bytes.Contains(line, []byte(`"role":"assistant"`)) }
	none := func([]byte) bool { return false }
	for _, c := range []struct {
		name string
		// atOnce: B was taken at once; cluster: the restart is a
		// cluster's host.
		atOnce, cluster bool
		// keep reports which of B's session lines survive the crash.
		keep func(line []byte) bool
		want triggers.State
		runs int
	}{
		{"message and reply written", true, false, all, triggers.StateAnswered, 0},
		{"message written", true, false, noReply, triggers.StateInterrupted, 0},
		{"message written, not taken at once", false, false, noReply, triggers.StateInterrupted, 0},
		{"nothing written, taken at once", true, false, none, triggers.StateInterrupted, 0},
		{"nothing written, taken at once, on a cluster's host", true, true, none, triggers.StateInterrupted, 0},
		{"nothing written, its message fsynced first", false, false, none, triggers.StateAnswered, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The crash: B's ledger records after "queued" are lost, and
			// the session file keeps what c.keep says of B's turn.
			dir, session := crashAfterB(t, c.atOnce, func(line []byte) bool { return bytes.Contains(line, []byte(`"state":"queued"`)) }, c.keep)

			m := &countingModel{turns: map[string]int{}}
			h2 := desktest.New(t, desktest.Options{Model: m, Dir: dir, SentMayBeLost: c.cluster})
			if c.want == triggers.StateInterrupted {
				got := eventtest.NextWhere(h2.Events, func(e event.TurnInterrupted) bool { return e.Trigger == "B" })
				want := session
				if !c.keep([]byte(`"role":"user"`)) {
					want = "" // nothing on disk names the session B went to
				}
				if got.Session != want {
					t.Errorf("turn.interrupted of B names session %q, want %q", got.Session, want)
				}
			}
			s := settle(t, h2, "B")
			if s.State != c.want {
				t.Errorf("B after the restart: %s (%s), want %s", s.State, s.Reason, c.want)
			}
			if c.atOnce && c.want == triggers.StateInterrupted && !c.keep([]byte(`"role":"user"`)) &&
				(!strings.HasPrefix(s.Reason, "may have been sent") || !s.ModelCalled) {
				t.Errorf("B's status: reason %q, model called %v; want a reason that says it may have been sent, and model called", s.Reason, s.ModelCalled)
			}
			if n := m.count("tick B"); n != c.runs {
				t.Errorf("B reached the model %d times after the restart, want %d", n, c.runs)
			}
		})
	}
}

// filter rewrites the file at path with the lines keep keeps, and
// returns how many it dropped.
func filter(t *testing.T, path string, keep func(line []byte) bool) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	dropped := 0
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		switch {
		case len(line) == 0:
		case keep(line):
			kept = append(kept, line)
		default:
			dropped++
		}
	}
	if err := os.WriteFile(path, bytes.Join(kept, nil), 0o640); err != nil {
		t.Fatal(err)
	}
	return dropped
}

// crashAfterB answers trigger B ("tick B") on a desk in a new folder,
// taken at once when atOnce, stops it, and cuts its files as a crash
// would have left them: of B's records, the ledger keeps those keepLedger
// says and the session file those keepSession says. It returns the folder
// and B's session.
func crashAfterB(t *testing.T, atOnce bool, keepLedger, keepSession func(line []byte) bool) (dir, session string) {
	t.Helper()
	dir = t.TempDir()
	h := desktest.New(t, desktest.Options{Dir: dir, NoAtOnce: !atOnce})
	if atOnce {
		awaitWaiting(t, h)
	}
	if _, err := h.Desk.Submit(triggers.Trigger{ID: "B", Kind: triggers.Market, Text: "tick B"}); err != nil {
		t.Fatal(err)
	}
	settle(t, h, "B")
	session = h.Router.SessionID()
	h.Stop()
	_ = h.Ledger.Close()
	filter(t, filepath.Join(dir, "main", triggers.LedgerFile), func(line []byte) bool {
		return !bytes.Contains(line, []byte(`"id":"B"`)) || keepLedger(line)
	})
	filter(t, h.Folder.SessionPath(session), func(line []byte) bool {
		return !bytes.Contains(line, []byte(`"trigger":"B"`)) || keepSession(line)
	})
	return dir, session
}

// TestATurnRecordsWhenItBeganOnItsSentRecord: a turn whose Prepare has no
// rollover to run writes no running record; its sent record says when it
// began, which the trigger's status shows.
func TestATurnRecordsWhenItBeganOnItsSentRecord(t *testing.T) {
	h := desktest.New(t, desktest.Options{})
	began := h.Clock.Now()
	h.Submit(triggers.Trigger{ID: "A", Kind: triggers.Market, Text: "tick A"})
	s := settle(t, h, "A")
	if s.State != triggers.StateAnswered || !s.StartedAt.Equal(began) {
		t.Errorf("A: %s, started at %v; want answered, started at %v", s.State, s.StartedAt, began)
	}
	data, err := os.ReadFile(h.Folder.Path(triggers.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if bytes.Contains(line, []byte(`"state":"running"`)) {
			t.Errorf("the ledger holds a running record: %s", line)
		}
		if bytes.Contains(line, []byte(`"state":"sent"`)) && !bytes.Contains(line, []byte(`"started_at"`)) {
			t.Errorf("A's sent record does not say when the turn began: %s", line)
		}
	}
}
