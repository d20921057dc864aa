package router_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
)

// deskFDs returns the files under dir this process holds open.
func deskFDs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var out []string
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			out = append(out, strings.TrimPrefix(target, dir+string(filepath.Separator)))
		}
	}
	return out
}

// TestAnIdleDeskHoldsNoSessionFile: a desk restarted over a session with
// turns holds its session file open only once it runs a turn; until then
// what it holds open of its folder is its trigger ledger alone.
func TestAnIdleDeskHoldsNoSessionFile(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := desktest.New(t, desktest.Options{Dir: dir})
	answered := eventtest.Watch[event.TurnCompleted](t, d.Bus)
	d.Submit(trigger("t1", "hello"))
	eventtest.Next[event.TurnCompleted](answered)
	session := filepath.Join("main", "sessions", d.Router.SessionID()+".jsonl")
	if fds := deskFDs(t, dir); !slices.Contains(fds, session) {
		t.Fatalf("a desk after a turn holds %v open, want its session file %s among them", fds, session)
	}
	d.Close()

	d2 := desktest.New(t, desktest.Options{Dir: dir, Clock: d.Clock})
	fds := deskFDs(t, dir)
	t.Logf("an idle restarted desk holds open: %v", fds)
	if slices.Contains(fds, session) {
		t.Errorf("an idle restarted desk holds its session file open: %v", fds)
	}
	if len(fds) > 1 {
		t.Errorf("an idle restarted desk holds %d files of its folder open (%v), want at most 1 (the ledger)", len(fds), fds)
	}
	if d2.Router.Exchanges() != 1 {
		t.Errorf("Exchanges() of the restarted desk = %d, want 1", d2.Router.Exchanges())
	}
	answered2 := eventtest.Watch[event.TurnCompleted](t, d2.Bus)
	d2.Submit(trigger("t2", "again"))
	if ev := eventtest.Next[event.TurnCompleted](answered2); ev.Turn != 2 {
		t.Errorf("the restarted desk's turn is turn %d, want 2", ev.Turn)
	}
	if fds := deskFDs(t, dir); !slices.Contains(fds, session) {
		t.Errorf("after its first turn the restarted desk holds %v open, want its session file among them", fds)
	}
}
