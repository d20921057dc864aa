package router_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable/faultfs"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
	"github.com/deskd/deskd/triggers"
)

// sessionRecordsOf counts the records of trigger id in the rig's session
// files, read from disk (Outcomes would wait for the turn under way).
func sessionRecordsOf(t *testing.T, g *loopRig, id string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(g.folder.Path(memory.SessionsDir), "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += bytes.Count(data, []byte(`"trigger":"`+id+`"`))
	}
	return n
}

// countingOpenAI returns an OpenAI client of a service that answers
// "noted" to every request, and the count of its requests.
func countingOpenAI(t *testing.T) (*router.OpenAI, *atomic.Int32) {
	t.Helper()
	requests := new(atomic.Int32)
	srv := routertest.New(t, routertest.ChatCompletions, routertest.Options{Answer: func(routertest.Request) routertest.Reply {
		requests.Add(1)
		return routertest.Reply{Text: "noted"}
	}})
	client, err := router.NewOpenAI(router.OpenAIOptions{Name: "openai", BaseURL: srv.BaseURL(), Model: "gpt-test",
		APIKey: "test-key", Timeout: time.Minute, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return client, requests
}

// TestTurnBeginsBeforeAnythingOfItIsWritten: TurnOptions.Begin is called
// once a turn, before the session holds anything of it and before its
// request reaches the model service (an HTTP model's, or the scripted
// model's call), for Send's turns and SendAccepted's; the turn then
// records its message and request.sent in one write, and its answer.
func TestTurnBeginsBeforeAnythingOfItIsWritten(t *testing.T) {
	client, requests := countingOpenAI(t)
	routes := map[string]router.Model{
		"http":     {Name: "openai", Provider: router.OpenAIProvider, Client: client},
		"scripted": {Name: "offline", Provider: router.ScriptedProvider, Client: router.Scripted{}},
	}
	for name, m := range routes {
		for _, accepted := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/accepted %v", name, accepted), func(t *testing.T) {
				g := newLoopRig(t)
				ffs := &faultfs.FS{Under: memory.SessionsDir}
				g.folder.FS = ffs
				r := g.router(router.Settings{Route: []router.Model{m}})
				if _, err := r.Turn(context.Background(), triggers.Trigger{ID: "warm-up", Kind: triggers.Manual, Text: "hello"}, router.TurnOptions{}); err != nil {
					t.Fatal(err) // the first turn opens the session's file
				}
				id := fmt.Sprintf("%s-%v", name, accepted)
				before, writes := requests.Load(), ffs.Count(faultfs.Write)
				var begun int
				reply, err := r.Turn(context.Background(), triggers.Trigger{ID: id, Kind: triggers.Manual, Text: "what is the book?"}, router.TurnOptions{
					Accepted: accepted,
					Begin: func() error {
						begun++
						if n := sessionRecordsOf(t, g, id); n != 0 {
							t.Errorf("Begin: the session already holds %d records of the turn", n)
						}
						if n := requests.Load() - before; n != 0 {
							t.Errorf("Begin: the model service already got %d requests", n)
						}
						return nil
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				if begun != 1 {
					t.Errorf("Begin called %d times, want once", begun)
				}
				if n := ffs.Count(faultfs.Write) - writes; n != 2 {
					t.Errorf("the turn made %d writes to its session, want 2 (its message with request.sent, its answer)", n)
				}
				if reply.Text == "" {
					t.Errorf("no reply")
				}
				out, err := r.Outcomes("", []string{id})
				if err != nil {
					t.Fatal(err)
				}
				if o := out[id]; !o.Seen || !o.Requested || !o.Answered {
					t.Errorf("the session says %+v of the turn, want seen, requested and answered", o)
				}
			})
		}
	}
}

// TestTurnThatDoesNotBeginWritesAndSendsNothing: when Begin fails, Turn
// returns ErrNotBegun with Begin's error; no request reaches the model
// service, no other model of the route is asked, no model.failed is
// announced, and the session holds nothing of the turn. The router's next
// turn runs as ever.
func TestTurnThatDoesNotBeginWritesAndSendsNothing(t *testing.T) {
	client, requests := countingOpenAI(t)
	for _, first := range []string{"http", "scripted"} {
		t.Run(first, func(t *testing.T) {
			g := newLoopRig(t)
			var failed atomic.Int32
			defer event.Subscribe(g.bus, func(event.ModelFailed) { failed.Add(1) })()
			route := []router.Model{
				{Name: "openai", Provider: router.OpenAIProvider, Client: client},
				{Name: "offline", Provider: router.ScriptedProvider, Client: router.Scripted{}},
			}
			if first == "scripted" {
				route[0], route[1] = route[1], route[0]
			}
			r := g.router(router.Settings{Route: route})
			before := requests.Load()
			refused := errors.New("its acceptance could not be made durable")
			_, err := r.Turn(context.Background(), triggers.Trigger{ID: "never", Kind: triggers.Manual, Text: "what is the book?"},
				router.TurnOptions{Accepted: true, Begin: func() error { return refused }})
			if !errors.Is(err, router.ErrNotBegun) || !errors.Is(err, refused) || !strings.Contains(err.Error(), "never") {
				t.Fatalf("Turn with Begin failing = %v, want ErrNotBegun with Begin's error, naming the trigger", err)
			}
			if n := requests.Load() - before; n != 0 {
				t.Errorf("the model service got %d requests", n)
			}
			if n := sessionRecordsOf(t, g, "never"); n != 0 {
				t.Errorf("the session holds %d records of a turn that did not begin", n)
			}
			if _, err := r.Turn(context.Background(), triggers.Trigger{ID: "next", Kind: triggers.Manual, Text: "and now?"}, router.TurnOptions{}); err != nil {
				t.Fatalf("the next turn: %v", err)
			}
			if n := failed.Load(); n != 0 {
				t.Errorf("%d model.failed announced", n)
			}
			out, err := r.Outcomes("", []string{"never", "next"})
			if err != nil {
				t.Fatal(err)
			}
			if o := out["never"]; o.Seen || o.Requested || o.Answered {
				t.Errorf("the session says %+v of the turn that did not begin, want nothing", o)
			}
			if o := out["next"]; !o.Answered {
				t.Errorf("the next turn: %+v, want answered", o)
			}
		})
	}
}
