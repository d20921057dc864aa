package desk_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

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

// TestOneFsyncFromAcceptanceToTheModel: between a trigger's acceptance
// (Submit returns once its record is fsynced: the API's 202) and its
// request at the model, the desk makes one fsync, the session's record of
// the message; the ledger's running and sent records ride on it. The
// whole turn makes two: the reply is the other, and the ledger's answered
// record and the spend ride on the session's records.
func TestOneFsyncFromAcceptanceToTheModel(t *testing.T) {
	ffs := &faultfs.FS{}
	m := &syncsAtModel{fs: ffs}
	h := desktest.New(t, desktest.Options{Model: m, FS: ffs})
	for _, id := range []string{"warm-up", "A", "B"} {
		if _, err := h.Desk.Submit(triggers.Trigger{ID: id, Kind: triggers.Market, Text: "tick " + id}); err != nil {
			t.Fatal(err)
		}
		accepted := ffs.Count(faultfs.Sync)
		if s := settle(t, h, id); s.State != triggers.StateAnswered {
			t.Fatalf("%s ended %s (%s)", id, s.State, s.Reason)
		}
		if id == "warm-up" {
			continue // the first turn may open the session's files
		}
		if n := m.last() - accepted; n > 1 {
			t.Errorf("trigger %s: %d fsyncs between its acceptance and its model request, want at most 1", id, n)
		}
		if n := ffs.Count(faultfs.Sync) - accepted; n > 2 {
			t.Errorf("trigger %s: %d fsyncs from its acceptance to its answer, want 2 (its message and the reply, in the session file)", id, n)
		}
	}
}

// TestRecoveryWhenTheHostLostTheUnsyncedRecords: a crash of the host
// keeps what was fsynced, so the ledger may say only "queued" (its running
// and sent records are not fsynced) of a trigger whose message the session
// file holds. The restart goes by the session file: a trigger the model
// saw is interrupted, one whose reply was written is answered, and only
// one the session never got runs; none runs twice.
func TestRecoveryWhenTheHostLostTheUnsyncedRecords(t *testing.T) {
	for _, c := range []struct {
		name string
		// keep reports which of B's session lines survive the crash.
		keep func(line []byte) bool
		want triggers.State
		runs int
	}{
		{"message and reply written", func([]byte) bool { return true }, triggers.StateAnswered, 0},
		{"message written", func(line []byte) bool { return !bytes.Contains(line, []byte(`"role":"assistant"`)) },
			triggers.StateInterrupted, 0},
		{"nothing written", func([]byte) bool { return false }, triggers.StateAnswered, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The crash: B's ledger records after "queued" are lost, and
			// the session file keeps what c.keep says of B's turn.
			dir, session := crashAfterB(t, func(line []byte) bool { return bytes.Contains(line, []byte(`"state":"queued"`)) }, c.keep)

			m := &countingModel{turns: map[string]int{}}
			h2 := desktest.New(t, desktest.Options{Model: m, Dir: dir})
			if c.want == triggers.StateInterrupted {
				got := eventtest.NextWhere(h2.Events, func(e event.TurnInterrupted) bool { return e.Trigger == "B" })
				if got.Session != session {
					t.Errorf("turn.interrupted of B names session %q, want %q", got.Session, session)
				}
			}
			s := settle(t, h2, "B")
			if s.State != c.want {
				t.Errorf("B after the restart: %s (%s), want %s", s.State, s.Reason, c.want)
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
// stops it, and cuts its files as a crash would have left them: of B's
// records, the ledger keeps those keepLedger says and the session file
// those keepSession says. It returns the folder and B's session.
func crashAfterB(t *testing.T, keepLedger, keepSession func(line []byte) bool) (dir, session string) {
	t.Helper()
	dir = t.TempDir()
	h := desktest.New(t, desktest.Options{Dir: dir})
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
