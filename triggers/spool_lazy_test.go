package triggers_test

import (
	"path/filepath"
	"testing"
)

// TestSpoolMakesItsSubfoldersAtFirstUse: an inbox just opened is one
// folder (10,000 idle desks' start makes 10,000 of them, not 30,000);
// processed/ is made by the first file taken, rejected/ by the first one
// refused.
func TestSpoolMakesItsSubfoldersAtFirstUse(t *testing.T) {
	h := runSpool(t, nil)
	for _, sub := range []string{"processed", "rejected"} {
		if exists(filepath.Join(h.inbox(), sub)) {
			t.Errorf("the spool's open made %s/ in an empty inbox, want it made by the first file moved there", sub)
		}
	}
	h.drop(t, "tick.json", `{"text": "a tick"}`)
	expect(t, h.taken, "taken", "tick.json")
	if !exists(filepath.Join(h.inbox(), "processed", "tick.json")) {
		t.Error("tick.json is not in processed/ once taken")
	}
	h.drop(t, "bad.json", `{"text": "x", "kind": "urgent"}`)
	expect(t, h.rejected, "rejected", `bad.json: kind "urgent"`)
	if !exists(filepath.Join(h.inbox(), "rejected", "bad.json")) {
		t.Error("bad.json is not in rejected/ once refused")
	}
}
