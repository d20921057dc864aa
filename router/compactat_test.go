package router_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
)

// TestCompactAtTokensBoundsTheRequest: with compact_at_tokens set, the
// request of every turn of a long session stays under the bound (on the
// wire: at most 5 bytes a token of it, JSON and all), because the session
// is compacted each time the next request would pass it, long before
// compact_share of the 128k window would; without it, the same session's
// requests grow with every turn.
func TestCompactAtTokensBoundsTheRequest(t *testing.T) {
	const (
		turns = 120
		bound = 4000
	)
	tests := []struct {
		name        string
		at          int
		checkpoints bool
	}{
		{"compact_at_tokens 4000", bound, true},
		{"compact_share alone", 0, false},
	}
	for _, api := range []routertest.API{routertest.ChatCompletions, routertest.Messages} {
		for _, tt := range tests {
			t.Run(api.String()+"/"+tt.name, func(t *testing.T) {
				g := newLoopRig(t)
				answer := strings.Repeat("Held the position; the spread is wide. ", 10) // about 100 tokens
				srv := routertest.New(t, api, routertest.Options{Answer: func(req routertest.Request) routertest.Reply {
					if strings.Contains(req.LastUser(), "Summarise the conversation so far") {
						return routertest.Reply{Text: "Checkpoint: flat, watching the spread."}
					}
					return routertest.Reply{Text: answer}
				}})
				m := serviceModel(t, srv, "sk-test", 0)
				m.ContextWindow = router.DefaultContextWindow
				r := g.router(router.Settings{Route: []router.Model{m}, CompactAtTokens: tt.at})
				for i := range turns {
					g.send(r, fmt.Sprintf("t%03d", i), fmt.Sprintf("Tick %d: ", i)+strings.Repeat("bid 101.5 ask 101.7; ", 20))
				}

				var turnBodies []int
				for _, req := range srv.Requests() {
					if strings.HasPrefix(req.LastUser(), "Tick ") {
						turnBodies = append(turnBodies, len(req.Raw))
					}
				}
				if len(turnBodies) != turns {
					t.Fatalf("%d turn requests, want %d", len(turnBodies), turns)
				}
				largest := 0
				for _, n := range turnBodies {
					largest = max(largest, n)
				}
				last := turnBodies[len(turnBodies)-1]
				t.Logf("turn requests: largest %d bytes, last %d bytes", largest, last)
				var checkpoints []memory.Record
				for _, rec := range g.sessionRecords(r) {
					if rec.Type == memory.RecordCheckpoint {
						checkpoints = append(checkpoints, rec)
					}
				}
				if !tt.checkpoints {
					if len(checkpoints) != 0 || last < 20*bound {
						t.Fatalf("without the bound: %d checkpoints and a last request of %d bytes; "+
							"want none and a request that grew past %d bytes (else this test shows nothing)", len(checkpoints), last, 20*bound)
					}
					return
				}
				if largest > 5*bound {
					t.Errorf("the largest turn request is %d bytes, want at most %d (5 bytes a token of compact_at_tokens %d)",
						largest, 5*bound, bound)
				}
				if len(checkpoints) < 5 {
					t.Fatalf("%d checkpoints in %d turns, want the session compacted again and again", len(checkpoints), turns)
				}
				var data struct {
					Estimated int64 `json:"estimated_tokens"`
					Bound     int64 `json:"bound"`
					At        int   `json:"compact_at_tokens"`
				}
				if err := json.Unmarshal(checkpoints[0].Data, &data); err != nil || data.Bound != bound || data.At != bound || data.Estimated <= bound {
					t.Errorf("checkpoint data %s (%v): want bound and compact_at_tokens %d, and an estimate past it", checkpoints[0].Data, err, bound)
				}
			})
		}
	}
}

// TestCompactAtTokensWithoutAWindow: a model whose context window is not
// known (0, as a scripted one's) has no share rule, but compact_at_tokens
// still compacts its session; the smaller bound wins where both apply.
func TestCompactAtTokensWithoutAWindow(t *testing.T) {
	tests := []struct {
		name    string
		window  int
		share   float64
		at      int
		compact bool
	}{
		{"no window, no bound", 0, 0, 0, false},
		{"no window, compact_at_tokens", 0, 0, 1000, true},
		{"share of a large window, compact_at_tokens smaller", 1_000_000, 0.8, 1000, true},
		{"share smaller than compact_at_tokens", 1000, 0.5, 100_000, true},
		{"neither bound reached", 1_000_000, 0.8, 100_000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newLoopRig(t)
			p := &playbook{}
			r := g.router(router.Settings{Route: []router.Model{model(p, tt.window)}, CompactShare: tt.share, CompactAtTokens: tt.at})
			for i := range 30 {
				g.send(r, fmt.Sprintf("t%02d", i), strings.Repeat("tick ", 100)) // about 125 tokens
			}
			compacted := false
			for _, req := range p.requests() {
				compacted = compacted || req.Task == router.TaskCompact
			}
			if compacted != tt.compact {
				t.Errorf("compacted = %v, want %v", compacted, tt.compact)
			}
		})
	}
}
