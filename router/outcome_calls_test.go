package router_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/deskd/deskd/desk/desktest"
	"github.com/deskd/deskd/memory"
)

// TestOutcomeNamesTheCallsWithoutAResult: a turn cut off after the model
// asked for two tools, one of which has its result: Outcomes names the
// other as unanswered; a finished turn has none.
func TestOutcomeNamesTheCallsWithoutAResult(t *testing.T) {
	g := newRig(t, "2026-03-01T04:30:00Z")
	r, folder, _ := g.open(offline)
	log, err := folder.CreateSession(memory.Record{Session: "s-tools", Date: "2026-03-01", At: desktest.At("2026-03-01T04:30:00Z")})
	if err != nil {
		t.Fatal(err)
	}
	at := desktest.At("2026-03-01T04:30:01Z")
	for _, rec := range []memory.Record{
		{Type: memory.RecordMessage, Role: "user", Trigger: "t1", Text: "Buy NIFTY."},
		{Type: memory.RecordMessage, Role: "assistant", Trigger: "t1",
			ToolCalls: json.RawMessage(`[{"id":"c1","name":"quote","arguments":{}},{"id":"c2","name":"mcp__broker__place_order","arguments":{}}]`)},
		{Type: memory.RecordTool, Role: "tool", Trigger: "t1", ToolCallID: "c1", ToolName: "quote", Text: "101.25"},
		{Type: memory.RecordMessage, Role: "user", Trigger: "t2", Text: "Quote it."},
		{Type: memory.RecordMessage, Role: "assistant", Trigger: "t2", ToolCalls: json.RawMessage(`[{"id":"c3","name":"quote","arguments":{}}]`)},
		{Type: memory.RecordTool, Role: "tool", Trigger: "t2", ToolCallID: "c3", ToolName: "quote", Text: "101.25"},
		{Type: memory.RecordMessage, Role: "assistant", Trigger: "t2", Text: "101.25."},
	} {
		rec.At = at
		if err := log.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := r.Outcomes("s-tools", []string{"t1", "t2"})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(calls []memory.ToolCall) []string {
		var out []string
		for _, c := range calls {
			out = append(out, c.ID+" "+c.Name)
		}
		return out
	}
	if t1 := got["t1"]; !t1.Requested || t1.Answered || !slices.Equal(ids(t1.Unanswered), []string{"c2 mcp__broker__place_order"}) {
		t.Errorf("Outcomes of t1 = %+v, want requested, not answered, c2 unanswered", t1)
	}
	if t2 := got["t2"]; !t2.Answered || len(t2.Unanswered) != 0 {
		t.Errorf("Outcomes of t2 = %+v, want answered, no call unanswered", t2)
	}
}
