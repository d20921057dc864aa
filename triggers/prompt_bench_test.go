package triggers_test

import (
	"testing"
	"time"

	"github.com/deskd/deskd/triggers"
)

// BenchmarkPrompt frames a market event as the turn path does, once a
// turn:
//
//	go test -run '^$' -bench BenchmarkPrompt -benchmem ./triggers
func BenchmarkPrompt(b *testing.B) {
	t := triggers.Trigger{ID: "evt-20261204-101500-000123", Kind: triggers.Market, Source: "feed:nse", Key: "NIFTY",
		At:   time.Date(2026, 12, 4, 10, 15, 0, 0, time.UTC),
		Text: "NIFTY 24,512.35 (+0.42%), BANKNIFTY 52,118.10 (-0.08%); India VIX 13.2; FII net buy 1,245 cr in cash."}
	b.ReportAllocs()
	for b.Loop() {
		if p := triggers.Prompt(t); len(p) < len(t.Text) {
			b.Fatalf("Prompt is %d bytes, shorter than the text", len(p))
		}
	}
}
