package main

import "testing"

// TestTallyFindsLossesAndDoubles: the exactly-once check counts a
// trigger the owner does not know as lost, one the model saw twice, and
// two triggers answered as the same turn, and passes only a clean run.
func TestTallyFindsLossesAndDoubles(t *testing.T) {
	l := newLedger()
	h := &clusterHost{name: "a"}
	for range 4 {
		l.acked(l.next(), h)
	}
	ids := l.ids
	l.final[ids[0]] = "answered"
	l.final[ids[1]] = "answered"
	l.final[ids[2]] = "interrupted"
	l.final[ids[3]] = "LOST (404 on the owner)"
	l.turns["s1 turn 7"] = []string{ids[0], ids[1]}
	got := l.tally(func(id string) int {
		if id == ids[1] {
			return 2
		}
		return 1
	})
	if got.acked != 4 || got.answered != 2 || got.interrupted != 1 || got.lost != 1 || len(got.twice) != 1 || len(got.sameTurn) != 1 {
		t.Errorf("tally = %+v, want 4 acknowledged, 2 answered, 1 interrupted, 1 lost, 1 twice, 1 turn of two ids", got)
	}
	clean := newLedger()
	clean.acked(clean.next(), h)
	clean.final[clean.ids[0]] = "answered"
	if got := clean.tally(func(string) int { return 1 }); got.lost+got.other+len(got.twice)+len(got.sameTurn) != 0 || got.answered != 1 {
		t.Errorf("tally of a clean run = %+v, want 1 answered and nothing else", got)
	}
}
