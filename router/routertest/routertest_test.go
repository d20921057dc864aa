package routertest_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/router/routertest"
)

// post sends body to the service's endpoint and returns the answer's
// status, content type and body (and the error of reading it).
func post(t *testing.T, s *routertest.Server, api routertest.API, body string) (int, string, string, error) {
	t.Helper()
	path := "/v1/chat/completions"
	if api == routertest.Messages {
		path = "/v1/messages"
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b), err
}

const hello = `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"NIFTY opens"}]}`

func TestTextAndToolCallStreams(t *testing.T) {
	for _, tt := range []struct {
		api  routertest.API
		want []string
	}{
		{routertest.ChatCompletions, []string{`"content":"filled"`, `"finish_reason":"tool_calls"`, `"name":"note","arguments":"{\"text\":\"x\"}"`,
			`"id":"call_1_1"`, `"prompt_tokens":20`, `"cached_tokens":4`, "data: [DONE]"}},
		{routertest.Messages, []string{"event: message_start", `"text":"filled"`, `"type":"tool_use","id":"toolu_1_1","name":"note"`,
			`"partial_json":"{\"text\":\"x\"}"`, `"stop_reason":"tool_use"`, `"input_tokens":16,"cache_read_input_tokens":4`, "event: message_stop"}},
	} {
		t.Run(tt.api.String(), func(t *testing.T) {
			s := routertest.New(t, tt.api, routertest.Options{Answer: func(routertest.Request) routertest.Reply {
				return routertest.Reply{Text: "filled", ToolCalls: []routertest.ToolCall{{Name: "note", Args: `{"text":"x"}`}},
					Usage: routertest.Usage{Input: 20, Output: 5, Cached: 4}}
			}})
			status, ctype, body, err := post(t, s, tt.api, hello)
			if err != nil || status != 200 || ctype != "text/event-stream" {
				t.Fatalf("answer = %d %s (%v)", status, ctype, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("the stream lacks %s:\n%s", w, body)
				}
			}
			reqs := s.Requests()
			if len(reqs) != 1 || s.Count() != 1 {
				t.Fatalf("%d requests recorded, want 1", len(reqs))
			}
			r := reqs[0]
			if r.N != 1 || r.API != tt.api || r.LastUser() != "NIFTY opens" || r.Last().Role != "user" ||
				r.Header.Get("Authorization") != "Bearer sk-test" || routertest.JSONAt(r.Body, "messages", 0, "content") != "be brief" {
				t.Errorf("recorded %+v", r)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	for _, tt := range []struct {
		api  routertest.API
		want string
	}{
		{routertest.ChatCompletions, `{"error":{"message":"slow down","type":"invalid_request_error","param":null,"code":null}}`},
		{routertest.Messages, `{"type":"error","error":{"type":"invalid_request_error","message":"slow down"}}`},
	} {
		s := routertest.New(t, tt.api, routertest.Options{Answer: routertest.Script(
			routertest.Reply{Status: 429, Message: "slow down", Header: map[string]string{"Retry-After": "7"}},
			routertest.Reply{Status: 502, Body: "<html>bad gateway</html>", Header: map[string]string{"Content-Type": "text/html"}},
		)})
		if status, ctype, body, _ := post(t, s, tt.api, hello); status != 429 || ctype != "application/json" || body != tt.want {
			t.Errorf("%s: first answer = %d %s %s, want 429 %s", tt.api, status, ctype, body, tt.want)
		}
		if status, ctype, body, _ := post(t, s, tt.api, hello); status != 502 || ctype != "text/html" || body != "<html>bad gateway</html>" {
			t.Errorf("%s: second answer = %d %s %s", tt.api, status, ctype, body)
		}
		if _, _, body, _ := post(t, s, tt.api, hello); !strings.Contains(body, `ok`) {
			t.Errorf("%s: past the script = %s, want ok", tt.api, body)
		}
	}
}

func TestOtherPathsAreNotFound(t *testing.T) {
	s := routertest.New(t, routertest.ChatCompletions, routertest.Options{})
	resp, err := s.Client().Post(s.URL()+"/v1/completions", "application/json", strings.NewReader(hello))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || s.CountWhere(func(r routertest.Request) bool { return r.Path == "/v1/completions" }) != 1 {
		t.Errorf("POST /v1/completions = %d, recorded %d times; want 404, recorded once", resp.StatusCode, s.Count())
	}
}

func TestCutEndsTheStreamEarly(t *testing.T) {
	s := routertest.New(t, routertest.ChatCompletions, routertest.Options{Answer: func(routertest.Request) routertest.Reply {
		return routertest.Reply{Events: []string{`data: {"partial":true}`}, Cut: true}
	}})
	_, _, body, err := post(t, s, routertest.ChatCompletions, hello)
	if err == nil || !strings.Contains(body, "partial") {
		t.Errorf("a cut stream read as %q, %v; want its start and an error", body, err)
	}
}

func TestHoldWaitsForTheTest(t *testing.T) {
	release := make(chan struct{})
	s := routertest.New(t, routertest.ChatCompletions, routertest.Options{Answer: func(r routertest.Request) routertest.Reply {
		if strings.Contains(r.LastUser(), "HOLD") {
			return routertest.Reply{Text: "held", Hold: release}
		}
		return routertest.Reply{}
	}})
	answered := make(chan string, 1)
	go func() {
		_, _, body, _ := post(t, s, routertest.ChatCompletions, `{"messages":[{"role":"user","content":"HOLD this"}]}`)
		answered <- body
	}()
	if r := s.Await(t, routertest.UserContains("HOLD")); r.LastUser() != "HOLD this" {
		t.Errorf("Await = %+v", r)
	}
	select {
	case body := <-answered:
		t.Fatalf("a held request was answered before its release: %s", body)
	default:
	}
	release <- struct{}{}
	if body := <-answered; !strings.Contains(body, `"content":"held"`) {
		t.Errorf("released answer = %s", body)
	}
}

func TestStrictRefusesBrokenRequests(t *testing.T) {
	called := false
	var mu sync.Mutex
	s := routertest.New(t, routertest.ChatCompletions, routertest.Options{Strict: true, Answer: func(routertest.Request) routertest.Reply {
		mu.Lock()
		defer mu.Unlock()
		called = true
		return routertest.Reply{}
	}})
	stray := `{"messages":[{"role":"user","content":"go"},{"role":"tool","tool_call_id":"c9","content":"x"}]}`
	status, _, body, _ := post(t, s, routertest.ChatCompletions, stray)
	if status != 400 || !strings.Contains(body, "role 'tool' must be a response") {
		t.Errorf("a stray tool message = %d %s, want the service's 400", status, body)
	}
	if got := s.Refused(); len(got) != 1 || !strings.Contains(got[0], "role 'tool'") {
		t.Errorf("Refused = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if called {
		t.Error("Answer was called for a refused request")
	}
	if p := routertest.Problems(routertest.Messages, map[string]any{"messages": []any{map[string]any{"role": "assistant", "content": "hi"}}}); len(p) == 0 {
		t.Error("Problems accepts a Messages conversation that opens with the assistant")
	}
}

// failer is a testing.TB whose Fatalf records and ends the goroutine.
type failer struct {
	testing.TB
	msg string
}

func (f *failer) Helper() {}

func (f *failer) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestAwaitFailsWhenNothingComes(t *testing.T) {
	s := routertest.New(t, routertest.Messages, routertest.Options{Wait: time.Millisecond})
	f := &failer{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Await(f, nil)
		f.msg = "Await returned"
	}()
	<-done
	if !strings.Contains(f.msg, "got no awaited request") {
		t.Errorf("Await with no request: %q", f.msg)
	}
}
