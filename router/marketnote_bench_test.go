package router

import (
	"fmt"
	"testing"
)

// BenchmarkHoldsMarketEvent is the look for a market event in a session
// of 1,000 turns that holds none (manual texts and replies), the worst
// case: every request of such a desk makes it (a desk of market events
// stops at its first message).
func BenchmarkHoldsMarketEvent(b *testing.B) {
	msgs := make([]Message, 0, 2000)
	for i := range 1000 {
		msgs = append(msgs, Message{Role: RoleUser, Text: fmt.Sprintf("manual %d: NIFTY 22,%03d; check the tape.", i, i%1000)},
			Message{Role: RoleAssistant, Text: "noted"})
	}
	for b.Loop() {
		if holdsMarketEvent(msgs) {
			b.Fatal("found a market event in none")
		}
	}
}
