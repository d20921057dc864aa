package router_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
)

// TestRestoreAnOlderStateFileCountsOnceAndMarks: a state file without a
// mark (an older deskd's, or one written by hand) is resumed by counting
// its session's records once, and is marked at the file's end; a session
// that ends in a torn line is mended and announced as it starts, and
// marked at its good end. Either way the next restore reads nothing
// after the mark, and the turns go on.
func TestRestoreAnOlderStateFileCountsOnceAndMarks(t *testing.T) {
	for _, tail := range []string{"", `{"type":"message","role":"assistant","te`} {
		name := "clean"
		if tail != "" {
			name = "torn"
		}
		t.Run(name, func(t *testing.T) {
			g := newRig(t, "2026-03-01T04:30:00Z")
			torn := eventtest.Watch[event.SessionTorn](t, g.bus)
			r, folder, _ := g.open(offline)
			send(t, r, "t1", "hello")
			send(t, r, "t2", "again")
			id := r.SessionID()
			path, good := closeWithTail(t, r, folder, tail)
			unmarked := `{"session": "` + id + `", "trading_date": "2026-03-01"}` + "\n"
			if err := os.WriteFile(folder.Path(memory.StateFile), []byte(unmarked), 0o640); err != nil {
				t.Fatal(err)
			}

			r2, _, resumed := g.open(offline)
			if !resumed || r2.SessionID() != id || r2.Exchanges() != 2 {
				t.Fatalf("restored %s (resumed %v) with %d exchanges, want %s resumed with 2", r2.SessionID(), resumed, r2.Exchanges(), id)
			}
			var st struct {
				AsOf *struct {
					Offset    int64 `json:"offset"`
					Exchanges int   `json:"exchanges"`
				} `json:"as_of"`
			}
			if err := json.Unmarshal([]byte(readFile(t, folder.Path(memory.StateFile))), &st); err != nil {
				t.Fatal(err)
			}
			if st.AsOf == nil || st.AsOf.Offset != int64(len(good)) || st.AsOf.Exchanges != 2 {
				t.Errorf("state file after the restore = %s, want it marked at the good end of the session file (%d), 2 exchanges",
					readFile(t, folder.Path(memory.StateFile)), len(good))
			}
			if got := readFile(t, path); got != good {
				t.Errorf("session file after the restore = %q, want its good records %q", got, good)
			}
			if tail != "" {
				if ev := eventtest.Next[event.SessionTorn](torn); ev.Session != id || ev.Bytes != len(tail) {
					t.Errorf("session.torn = %+v, want session %s, %d bytes", ev, id, len(tail))
				}
			}
			if reply := send(t, r2, "t3", "once more"); reply.Turn != 3 {
				t.Errorf("the turn after the restore is turn %d, want 3", reply.Turn)
			}
			g.bus.Close()
			eventtest.ExpectNone[event.SessionTorn](torn)
		})
	}
}
