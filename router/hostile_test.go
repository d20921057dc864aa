package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
	"github.com/deskd/deskd/triggers"
)

// hostileKey is the key of the services below: long enough that a
// partial echo of it is still a secret.
const hostileKey = "sk-live-Hq7TzP2mWc9KxR4vNb8YdL3sFg6JaE5u"

// keyRun is how long a run of the key's characters a scrubbed text may
// still hold: shorter ones are ordinary text.
const keyRun = 12

// leaksKey returns the first run of at least keyRun characters of
// hostileKey found in s.
func leaksKey(s string) (string, bool) {
	for i := 0; i+keyRun <= len(hostileKey); i++ {
		if strings.Contains(s, hostileKey[i:i+keyRun]) {
			return hostileKey[i : i+keyRun], true
		}
	}
	return "", false
}

// echoes are the ways a service echoed part of the key back.
var echoes = []struct{ name, text string }{
	{"whole", hostileKey},
	{"all but the last 4", hostileKey[:len(hostileKey)-4]},
	{"an infix", hostileKey[6:26]},
	{"a masked middle", hostileKey[:14] + "****" + hostileKey[len(hostileKey)-14:]},
}

// echoingServices are services that fail with an echo of the key in each
// way a failure can reach deskd.
func echoingServices(echo string) []struct {
	name     string
	provider router.ProviderName
	reply    routertest.Reply
} {
	msg := jsonString("Incorrect API key provided: " + echo + ". You can find your API key at https://example.com.")
	return []struct {
		name     string
		provider router.ProviderName
		reply    routertest.Reply
	}{
		{"openai 401 body", router.OpenAIProvider, routertest.Reply{Status: http.StatusUnauthorized,
			Body: `{"error":{"message":` + msg + `,"type":"invalid_request_error","code":"invalid_api_key"}}`}},
		{"openai stream error", router.OpenAIProvider, routertest.Reply{Events: []string{
			`data: {"error":{"message":` + msg + `,"type":"server_error"}}`}}},
		{"anthropic 401 body", router.AnthropicProvider, routertest.Reply{Status: http.StatusUnauthorized,
			Body: `{"type":"error","error":{"type":"authentication_error","message":` + msg + `}}`}},
		{"anthropic stream error", router.AnthropicProvider, routertest.Reply{Events: []string{antHead,
			"event: error\ndata: " + `{"type":"error","error":{"type":"overloaded_error","message":` + msg + `}}`}}},
		{"anthropic odd event", router.AnthropicProvider, routertest.Reply{Events: []string{
			"event: x\ndata: " + `{"type":` + jsonString(echo) + `}`}}},
	}
}

// TestPartialKeyEchoesAreScrubbed: whatever part of the key a failing
// service echoes (all of it, all but its last characters, a run from its
// middle), no error that leaves the provider holds a run of it, and so
// neither do the turn's error, the session file nor the model.failed event.
func TestPartialKeyEchoesAreScrubbed(t *testing.T) {
	for _, echo := range echoes {
		for _, svc := range echoingServices(echo.text) {
			t.Run(svc.name+" "+echo.name, func(t *testing.T) {
				srv := routertest.New(t, apiOf(svc.provider), routertest.Options{Answer: routertest.Always(svc.reply)})
				m := serviceModel(t, srv, hostileKey, 0)
				_, err := m.Client.Complete(t.Context(), router.Request{Task: router.TaskTurn,
					Messages: []router.Message{{Role: router.RoleUser, Text: "hi"}}})
				if err == nil {
					t.Fatal("Complete succeeded against a failing service")
				}
				var ae *router.APIError
				if !errors.As(err, &ae) {
					t.Errorf("error %T is not an *APIError: %v", err, err)
				}
				if run, ok := leaksKey(err.Error()); ok {
					t.Fatalf("the provider's error holds %q of the key: %v", run, err)
				}

				g := newLoopRig(t)
				failed := eventtest.Watch[event.ModelFailed](t, g.bus)
				r := g.router(router.Settings{Route: []router.Model{m}})
				_, err = r.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "hi"})
				if err == nil {
					t.Fatal("Send succeeded against a failing service")
				}
				if run, ok := leaksKey(err.Error()); ok {
					t.Errorf("the turn's error holds %q of the key: %v", run, err)
				}
				for _, rec := range g.sessionRecords(r) {
					if run, ok := leaksKey(rec.Text); ok {
						t.Errorf("session record %s %s holds %q of the key: %q", rec.Type, rec.Kind, run, rec.Text)
					}
				}
				if e := eventtest.Next[event.ModelFailed](failed); e.Error == "" {
					t.Errorf("model.failed carries no error: %+v", e)
				} else if run, ok := leaksKey(e.Error); ok {
					t.Errorf("model.failed holds %q of the key: %q", run, e.Error)
				}
			})
		}
	}
}

// TestToolRoundsExceededIsMarked: a model that still calls tools after
// max_tool_rounds gets no further round; its turn is answered with a
// reply that says so, never an empty one, and the reply and the
// assistant's record carry a flag.
func TestToolRoundsExceededIsMarked(t *testing.T) {
	g := newLoopRig(t)
	loop := router.Response{ToolCalls: []router.ToolCall{call("c", "skill_read", `{"name":"x"}`)}}
	p := &playbook{steps: []router.Response{loop, loop, loop}}
	r := g.router(router.Settings{Route: []router.Model{model(p, 0)}, MaxToolRounds: 2})
	reply, err := r.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "loop"})
	if err != nil {
		t.Fatal(err)
	}
	const note = "[deskd: the model was still calling tools after 2 rounds; its last calls were not run]"
	if !strings.Contains(reply.Text, note) {
		t.Errorf("reply text %q, want it to say %q", reply.Text, note)
	}
	if !reply.ToolRoundsExceeded {
		t.Error("reply.ToolRoundsExceeded is false")
	}
	if reply.ToolCalls != 2 {
		t.Errorf("ran %d tools, want 2", reply.ToolCalls)
	}
	var last memory.Record
	for _, rec := range g.sessionRecords(r) {
		if rec.Type == memory.RecordMessage && rec.Role == router.RoleAssistant {
			last = rec
		}
	}
	if !strings.Contains(last.Text, note) {
		t.Errorf("the last assistant record says %q, want %q", last.Text, note)
	}
	var data struct {
		Exceeded int      `json:"tool_rounds_exceeded"`
		NotRun   []string `json:"tool_calls_not_run"`
	}
	if err := json.Unmarshal(last.Data, &data); err != nil || data.Exceeded != 2 || len(data.NotRun) != 1 || data.NotRun[0] != "skill_read" {
		t.Errorf("the last assistant record's data = %s (%v), want tool_rounds_exceeded 2 and the call not run", last.Data, err)
	}

	// A model that answers within the rounds is not marked.
	g2 := newLoopRig(t)
	p2 := &playbook{steps: []router.Response{loop, {Text: "done"}}}
	r2 := g2.router(router.Settings{Route: []router.Model{model(p2, 0)}, MaxToolRounds: 2})
	if reply, err := r2.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "once"}); err != nil || reply.Text != "done" || reply.ToolRoundsExceeded {
		t.Errorf("a turn within the rounds: %+v, %v", reply, err)
	}
}

// TestInvalidToolArgumentsAreReported: a tool call whose arguments are
// not valid JSON is not run; the model gets the parse error as the tool's
// error result (not a complaint about arguments it never sent), from
// either provider.
func TestInvalidToolArgumentsAreReported(t *testing.T) {
	const bad = `{"symbol": "TCS", "qty": `
	for _, provider := range []router.ProviderName{router.AnthropicProvider, router.OpenAIProvider} {
		t.Run(string(provider), func(t *testing.T) {
			// The first answer calls quote with arguments that are not JSON;
			// every later one is "ok".
			srv := routertest.New(t, apiOf(provider), routertest.Options{Answer: routertest.Script(
				routertest.Reply{ToolCalls: []routertest.ToolCall{{ID: "call_1", Name: "quote", Args: bad}}})})
			m := serviceModel(t, srv, hostileKey, 0)
			g := newLoopRig(t)
			ran := false
			tools := router.BuiltinTools(g.folder, func() memory.Date { return g.day.DateOf(g.clock.Now()) })
			tools = append(tools, router.Tool{
				Spec: router.ToolSpec{Name: "quote", Schema: json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}}}`)},
				Run:  func(context.Context, json.RawMessage) (string, error) { ran = true; return "1234.5", nil },
			})
			r := g.router(router.Settings{Route: []router.Model{m}, Tools: tools})
			reply, err := r.Send(t.Context(), triggers.Trigger{ID: "t1", Text: "quote TCS"})
			if err != nil {
				t.Fatal(err)
			}
			if ran || reply.ToolCalls != 0 {
				t.Errorf("the tool ran (%d tool calls) with arguments that are not JSON", reply.ToolCalls)
			}
			var result *memory.Record
			recs := g.sessionRecords(r)
			for i := range recs {
				if recs[i].Type == memory.RecordTool {
					result = &recs[i]
				}
			}
			if result == nil {
				t.Fatal("no tool result recorded")
			}
			if !result.IsError || !strings.Contains(result.Text, "not valid JSON") ||
				!strings.Contains(result.Text, "unexpected end of JSON input") || strings.Contains(result.Text, "Go value") {
				t.Errorf("tool result %q (error %v), want the parse error of the arguments", result.Text, result.IsError)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), "not valid JSON") {
				t.Errorf("the model was not sent the parse error: %d requests\n%+v", len(reqs), reqs)
			}
		})
	}
}
