package router_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/event/eventtest"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
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
	name, provider string
	h              http.HandlerFunc
} {
	msg := "Incorrect API key provided: " + echo + ". You can find your API key at https://example.com."
	return []struct {
		name, provider string
		h              http.HandlerFunc
	}{
		{"openai 401 body", router.OpenAIProvider, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","code":"invalid_api_key"}}`, jsonString(msg))
		}},
		{"openai stream error", router.OpenAIProvider, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, "data: {\"error\":{\"message\":%s,\"type\":\"server_error\"}}\n\n", jsonString(msg))
		}},
		{"anthropic 401 body", router.AnthropicProvider, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","message":%s}}`, jsonString(msg))
		}},
		{"anthropic stream error", router.AnthropicProvider, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, antHead, "\n\n")
			fmt.Fprintf(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":%s}}\n\n", jsonString(msg))
		}},
		{"anthropic odd event", router.AnthropicProvider, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, "event: x\ndata: {\"type\":%s}\n\n", jsonString(echo))
		}},
	}
}

// echoingModel is a model of provider at srv, with hostileKey.
func echoingModel(t *testing.T, provider string, srv *httptest.Server) router.Model {
	t.Helper()
	m := router.Model{Name: provider, Provider: provider}
	var err error
	if provider == router.AnthropicProvider {
		m.Client, err = router.NewAnthropic(router.AnthropicOptions{Name: provider, BaseURL: srv.URL, Model: "claude-test",
			APIKey: hostileKey, Timeout: time.Minute, HTTPClient: srv.Client()})
	} else {
		m.Client, err = router.NewOpenAI(router.OpenAIOptions{Name: provider, BaseURL: srv.URL + "/v1", Model: "gpt-test",
			APIKey: hostileKey, Timeout: time.Minute, HTTPClient: srv.Client()})
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPartialKeyEchoesAreScrubbed: whatever part of the key a failing
// service echoes (all of it, all but its last characters, a run from its
// middle), no error that leaves the provider holds a run of it, and so
// neither do the turn's error, the session file nor the model.failed event.
func TestPartialKeyEchoesAreScrubbed(t *testing.T) {
	for _, echo := range echoes {
		for _, svc := range echoingServices(echo.text) {
			t.Run(svc.name+" "+echo.name, func(t *testing.T) {
				srv := httptest.NewServer(svc.h)
				t.Cleanup(srv.Close)
				m := echoingModel(t, svc.provider, srv)
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

// twoStepService answers its first request with first and every later one
// with then, and keeps the bodies it was sent.
type twoStepService struct {
	mu     sync.Mutex
	bodies []string
	first  func(w http.ResponseWriter)
	then   func(w http.ResponseWriter)
}

func (s *twoStepService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	n := len(s.bodies)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if n == 1 {
		s.first(w)
	} else {
		s.then(w)
	}
}

func (s *twoStepService) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// TestInvalidToolArgumentsAreReported: a tool call whose arguments are
// not valid JSON is not run; the model gets the parse error as the tool's
// error result (not a complaint about arguments it never sent), from
// either provider.
func TestInvalidToolArgumentsAreReported(t *testing.T) {
	const bad = `{"symbol": "TCS", "qty": `
	antEnd := []string{
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}`,
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}`,
		"event: message_stop\n" + `data: {"type":"message_stop"}`,
	}
	antAnswer := func(w http.ResponseWriter) {
		for _, e := range append([]string{antHead,
			"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`,
		}, antTail...) {
			fmt.Fprint(w, e, "\n\n")
		}
	}
	oaiAnswer := func(w http.ResponseWriter) {
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`, "\n\n")
		for _, e := range oaiTail {
			fmt.Fprint(w, e, "\n\n")
		}
	}
	tests := []struct {
		name, provider string
		first, then    func(w http.ResponseWriter)
	}{
		{"anthropic", router.AnthropicProvider, func(w http.ResponseWriter) {
			for _, e := range append([]string{antHead,
				"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"quote","input":{}}}`,
				"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":` + jsonString(bad) + `}}`,
			}, antEnd...) {
				fmt.Fprint(w, e, "\n\n")
			}
		}, antAnswer},
		{"openai", router.OpenAIProvider, func(w http.ResponseWriter) {
			fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"quote","arguments":`+jsonString(bad)+`}}]},"finish_reason":null}]}`, "\n\n")
			fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
		}, oaiAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &twoStepService{first: tt.first, then: tt.then}
			srv := httptest.NewServer(svc)
			t.Cleanup(srv.Close)
			m := echoingModel(t, tt.provider, srv)
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
			reqs := svc.requests()
			if len(reqs) != 2 || !strings.Contains(reqs[1], "not valid JSON") {
				t.Errorf("the model was not sent the parse error: %d requests\n%s", len(reqs), strings.Join(reqs, "\n"))
			}
		})
	}
}
