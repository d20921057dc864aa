package httpapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/triggers"
)

// writeCutAndDone writes a ledger at path (and its folder) whose records,
// all at at, are of "cut", a trigger interrupted in a turn, and "done",
// an answered one.
func writeCutAndDone(t *testing.T, path string, at time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	l, err := triggers.OpenLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []triggers.Record{
		{At: at, ID: "cut", State: triggers.StateQueued, Trigger: &triggers.Trigger{ID: "cut", Desk: "main", Kind: triggers.Manual, Text: "buy 10"}},
		{At: at, ID: "cut", State: triggers.StateInterrupted, Session: "s0", Turn: 1, Reason: "deskd stopped while the turn was with the model"},
		{At: at, ID: "done", State: triggers.StateQueued, Trigger: &triggers.Trigger{ID: "done", Desk: "main", Kind: triggers.Manual, Text: "hello"}},
		{At: at, ID: "done", State: triggers.StateAnswered, Session: "s0", Turn: 2, Reply: "hi"},
	} {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// startInterrupted serves a desk whose ledger holds "cut", a trigger
// interrupted in a turn, and "done", an answered one.
func startInterrupted(t *testing.T) *httpapitest.Harness {
	t.Helper()
	dir := t.TempDir()
	writeCutAndDone(t, filepath.Join(dir, httpapitest.DeskName, triggers.LedgerFile), time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC))
	h := httpapitest.Start(t, httpapitest.Options{Dir: dir})
	if in := h.Desk.Status().Interrupted; len(in) != 1 || in[0].ID != "cut" {
		t.Fatalf("Status.Interrupted = %+v, want cut", in)
	}
	return h
}

// TestAPIAck: only an interrupted trigger is acknowledged (409, 404
// otherwise); it then leaves the status's interrupted list, GET shows the
// acknowledgement, trigger.acknowledged is published; a second one is 200
// with the first.
func TestAPIAck(t *testing.T) {
	h := startInterrupted(t)
	for _, tt := range []struct {
		path, body string
		status     int
		err        string
	}{
		{"/v1/desks/main/triggers/done/ack", `{"by": "alice"}`, http.StatusConflict, "only an interrupted trigger"},
		{"/v1/desks/main/triggers/nope/ack", `{"by": "alice"}`, http.StatusNotFound, `no trigger "nope"`},
		{"/v1/desks/nope/triggers/cut/ack", `{"by": "alice"}`, http.StatusNotFound, `unknown desk "nope"`},
		{"/v1/desks/main/triggers/cut/ack", `{"by": "alice", "priority": 1}`, http.StatusBadRequest, `unknown field "priority"`},
	} {
		status, _, body := h.Call("POST", tt.path, tt.body)
		if e := httpapitest.Decode[map[string]string](t, body); status != tt.status || !strings.Contains(e["error"], tt.err) {
			t.Errorf("POST %s %s = %d %s, want %d %q", tt.path, tt.body, status, body, tt.status, tt.err)
		}
	}
	if in := h.Desk.Status().Interrupted; len(in) != 1 {
		t.Fatalf("a refused acknowledgement changed Interrupted: %+v", in)
	}

	status, _, body := h.Call("POST", "/v1/desks/main/triggers/cut/ack", `{"by": "alice", "note": "no order reached the broker"}`)
	st := httpapitest.Decode[desk.TriggerStatus](t, body)
	if status != 200 || st.ID != "cut" || st.State != triggers.StateInterrupted || st.Acknowledged == nil ||
		st.Acknowledged.By != "alice" || st.Acknowledged.Note != "no order reached the broker" || !st.Acknowledged.At.Equal(h.Clock.Now()) {
		t.Fatalf("POST ack = %d %s", status, body)
	}
	for _, want := range []string{`"acknowledged": {`, `"by": "alice"`, `"at": "`, `"note": "no order`} {
		if !strings.Contains(body, want) {
			t.Errorf("POST ack = %s: want %s", body, want)
		}
	}
	var got event.TriggerAcknowledged
	deadline := time.After(10 * time.Second)
	for got.Trigger == "" {
		select {
		case e := <-h.Events:
			if a, ok := e.(event.TriggerAcknowledged); ok {
				got = a
			}
		case <-deadline:
			t.Fatal("no trigger.acknowledged within 10s")
		}
	}
	if got.Trigger != "cut" || got.By != "alice" || got.Note != "no order reached the broker" || got.Desk != "main" {
		t.Errorf("trigger.acknowledged = %+v", got)
	}
	if in := h.Desk.Status().Interrupted; len(in) != 0 {
		t.Errorf("Status.Interrupted after the ack = %+v, want none", in)
	}
	status, _, body = h.Call("GET", "/v1/desks/main/triggers/cut", "")
	if st := httpapitest.Decode[desk.TriggerStatus](t, body); status != 200 || st.Acknowledged == nil || st.Acknowledged.By != "alice" {
		t.Errorf("GET the trigger = %d %s", status, body)
	}

	h.Clock.Advance(time.Minute)
	status, _, body = h.Call("POST", "/v1/desks/main/triggers/cut/ack", `{"by": "bob", "note": "again"}`)
	if st := httpapitest.Decode[desk.TriggerStatus](t, body); status != 200 || st.Acknowledged == nil || st.Acknowledged.By != "alice" || st.Acknowledged.Note != "no order reached the broker" {
		t.Errorf("second POST ack = %d %s: want alice's to stand", status, body)
	}
}
