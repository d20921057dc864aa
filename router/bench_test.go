package router_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
	"github.com/deskd/deskd/triggers"
)

// benchSessionRecords is the size of the session BenchmarkRouterTurn1000
// measures a turn at: issue 12's "CPU per turn at a 1,000-record session".
const benchSessionRecords = 1000

// BenchmarkRouterTurn1000 measures one turn of Router.Send (record the
// user message, build the request, call the model, record the answer) on a
// session that already holds about 1,000 records, against routertest's
// fake Chat Completions service over loopback. Each turn adds two records,
// so run it with a fixed count to stay near 1,000.
//
// It also reports the CPU time of the test process per turn (cpu-ns/op),
// which includes the fake service's share:
//
//	go test -run '^$' -bench BenchmarkRouterTurn1000 -benchmem -benchtime 200x ./router
func BenchmarkRouterTurn1000(b *testing.B) {
	srv := routertest.New(b, routertest.ChatCompletions, routertest.Options{Answer: func(routertest.Request) routertest.Reply {
		return routertest.Reply{Text: "noted", Usage: routertest.Usage{Input: 10, Output: 1}}
	}})
	client, err := router.NewOpenAI(router.OpenAIOptions{Name: "openai", BaseURL: srv.BaseURL(), Model: "gpt-test",
		APIKey: "bench-key", Timeout: time.Minute, HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	g := newLoopRig(b) // 09:30 IST; its router has the built-in tools
	r := g.router(router.Settings{
		Route:        []router.Model{{Name: "openai", Provider: router.OpenAIProvider, Client: client}},
		Instructions: "You run the main desk. Keep notes of what you learn.",
	})
	ctx := context.Background()
	send := func(i int) {
		text := fmt.Sprintf("market event %d: NIFTY 22,%03d, BANKNIFTY 47,%03d; check the tape.", i, i%1000, (7*i)%1000)
		if _, err := r.Send(ctx, triggers.Trigger{ID: fmt.Sprintf("t%d", i), Kind: triggers.Market, Text: text}); err != nil {
			b.Fatalf("Send(t%d): %v", i, err)
		}
	}
	i := 0
	for ; i < benchSessionRecords/2; i++ { // two records a turn: user, assistant
		send(i)
	}
	recs, err := g.folder.ReadSession(r.SessionID())
	if err != nil {
		b.Fatal(err)
	}
	if len(recs) < benchSessionRecords {
		b.Fatalf("the session holds %d records after %d turns, want %d or more", len(recs), i, benchSessionRecords)
	}
	b.ReportAllocs()
	cpu0 := processCPU(b)
	n := 0
	for b.Loop() {
		i++
		n++
		send(i)
	}
	// The CPU of this process: the router's and the fake service's.
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(n), "cpu-ns/op")
}

// processCPU returns the user and system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
