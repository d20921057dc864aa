package desk_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/triggers"
)

// TestStatusShowsUnreadableMemory: a Memory.md the desk cannot read is in
// its status (GET /v1/desks, deskd status --json) until it can be read
// again. A directory named Memory.md fails to read for root too (the tests
// run as root, who reads a chmod 000 file).
func TestStatusShowsUnreadableMemory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "main", "Memory.md")
	if err := os.MkdirAll(path, 0o750); err != nil {
		t.Fatal(err)
	}
	h := desktest.New(t, desktest.Options{Dir: dir})
	if u := h.Desk.Status().Unreadable; len(u) != 0 {
		t.Fatalf("Unreadable before any prompt = %+v", u)
	}
	h.Submit(triggers.Trigger{ID: "t1", Kind: triggers.Manual, Text: "Check the tape."})
	eventtest.NextWhere(h.Events, func(e event.TurnCompleted) bool { return e.Trigger == "t1" })

	st := h.Desk.Status()
	if len(st.Unreadable) != 1 || st.Unreadable[0].Path != path || !strings.Contains(st.Unreadable[0].Error, "a folder, not a regular file") {
		t.Fatalf("Status().Unreadable = %+v, want %s with its error", st.Unreadable, path)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"unreadable":[{"path":"`+path+`"`) {
		t.Errorf("the status as JSON lacks the unreadable file: %s", b)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("# Memory\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if u := h.Desk.Status().Unreadable; len(u) != 0 {
		t.Errorf("Status().Unreadable = %+v once Memory.md can be read", u)
	}
}
