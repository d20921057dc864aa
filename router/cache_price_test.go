package router_test

import (
	"context"
	"math"
	"testing"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
	"github.com/deskd/deskd/triggers"
)

// TestCachedTokensArePriced runs a turn against each service, which
// reports tokens read from (and, on the Messages API, written to) its
// prompt cache, and checks the turn's usage, its cost at the prices'
// defaults (or the configured cached_input), and the day's spend.
func TestCachedTokensArePriced(t *testing.T) {
	const M = 1_000_000
	cases := []struct {
		name   string
		api    routertest.API
		prices router.Prices
		usage  routertest.Usage
		want   memory.Usage
		cost   float64
	}{
		{"openai, reads at half the input price", routertest.ChatCompletions, router.Prices{Input: 10, Output: 20},
			routertest.Usage{Input: M, Output: M / 10, Cached: 6 * M / 10},
			memory.Usage{InputTokens: M, OutputTokens: M / 10, CachedTokens: 6 * M / 10},
			0.4*10 + 0.6*5 + 0.1*20},
		{"anthropic, reads at a tenth, writes at 1.25", routertest.Messages, router.Prices{Input: 10, Output: 20},
			routertest.Usage{Input: M, Output: M / 10, Cached: 6 * M / 10, CacheWrite: 2 * M / 10},
			memory.Usage{InputTokens: M, OutputTokens: M / 10, CachedTokens: 6 * M / 10, CacheWriteTokens: 2 * M / 10},
			0.2*10 + 0.6*1 + 0.2*12.5 + 0.1*20},
		{"anthropic, configured cached_input", routertest.Messages, router.Prices{Input: 10, Output: 20, CachedInput: 2},
			routertest.Usage{Input: M, Output: M / 10, Cached: 6 * M / 10, CacheWrite: 2 * M / 10},
			memory.Usage{InputTokens: M, OutputTokens: M / 10, CachedTokens: 6 * M / 10, CacheWriteTokens: 2 * M / 10},
			0.2*10 + 0.6*2 + 0.2*12.5 + 0.1*20},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			g := newLoopRig(t)
			srv := routertest.New(t, tt.api, routertest.Options{Answer: routertest.Always(routertest.Reply{Text: "ok", Usage: tt.usage})})
			m := serviceModel(t, srv, "k", 0)
			m.Prices = tt.prices
			r := g.router(router.Settings{Route: []router.Model{m}})
			reply, err := r.Send(context.Background(), triggers.Trigger{ID: "t1", Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			if reply.Usage != tt.want {
				t.Errorf("Usage = %+v, want %+v", reply.Usage, tt.want)
			}
			if math.Abs(reply.Cost-tt.cost) > 1e-9 {
				t.Errorf("Cost = %g, want %g", reply.Cost, tt.cost)
			}
			s := r.Spend()
			if s.DayCachedTokens != int64(tt.want.CachedTokens) || math.Abs(s.DayCost-tt.cost) > 1e-9 || s.DayTokens != int64(M+M/10) {
				t.Errorf("Spend = %+v, want %d cached tokens, %d tokens, cost %g", s, tt.want.CachedTokens, M+M/10, tt.cost)
			}
		})
	}
}

// TestPriceDefaults lists the cache's prices each provider defaults to.
func TestPriceDefaults(t *testing.T) {
	cases := []struct {
		provider router.ProviderName
		in, want router.Prices
	}{
		{router.OpenAIProvider, router.Prices{Input: 2}, router.Prices{Input: 2, CachedInput: 1, CacheWrite: 2}},
		{router.AnthropicProvider, router.Prices{Input: 4}, router.Prices{Input: 4, CachedInput: 0.4, CacheWrite: 5}},
		{router.AnthropicProvider, router.Prices{Input: 3, CachedInput: 1, CacheWrite: 5}, router.Prices{Input: 3, CachedInput: 1, CacheWrite: 5}},
		{router.ScriptedProvider, router.Prices{Input: 4}, router.Prices{Input: 4, CachedInput: 4, CacheWrite: 4}},
	}
	for _, tt := range cases {
		if got := tt.in.WithDefaults(tt.provider); got != tt.want {
			t.Errorf("%+v.WithDefaults(%s) = %+v, want %+v", tt.in, tt.provider, got, tt.want)
		}
	}
}
