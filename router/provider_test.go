package router

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/router/routertest"
)

// What the tests of both providers (openai_test.go, anthropic_test.go)
// share: the fake key, the fake services' replies, and the checks of a
// call's request, tool calls, failures, timeout and cancellation.

// fakeAPIKey is a recognisable fake key: no error text may contain it.
const fakeAPIKey = "sk-deskd-test-5f3a9c1e7b2d4068"

// newTestProvider returns a client of a fake service of api that answers
// with answer, and the service: an OpenAI client named "fast" (model
// gpt-test) or an Anthropic one named "claude" (model claude-test), with
// the fake key and an output cap of 2000.
func newTestProvider(t *testing.T, api routertest.API, timeout time.Duration, answer func(routertest.Request) routertest.Reply) (Provider, *routertest.Server) {
	t.Helper()
	srv := routertest.New(t, api, routertest.Options{Answer: answer})
	var p Provider
	var err error
	if api == routertest.Messages {
		p, err = NewAnthropic(AnthropicOptions{Name: "claude", BaseURL: srv.BaseURL(), Model: "claude-test", APIKey: fakeAPIKey,
			MaxOutputTokens: 2000, Timeout: timeout, HTTPClient: srv.Client()})
	} else {
		p, err = NewOpenAI(OpenAIOptions{Name: "fast", BaseURL: srv.BaseURL(), Model: "gpt-test", APIKey: fakeAPIKey,
			MaxOutputTokens: 2000, Timeout: timeout, HTTPClient: srv.Client()})
	}
	if err != nil {
		t.Fatal(err)
	}
	return p, srv
}

// stream is a reply of the fake service made of these events.
func stream(events ...string) func(routertest.Request) routertest.Reply {
	return routertest.Script(routertest.Reply{Events: events})
}

// jsonError is a failure with status, body and headers (name, value, ...).
func jsonError(status int, body string, headers ...string) routertest.Reply {
	h := map[string]string{}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	return routertest.Reply{Status: status, Body: body, Header: h}
}

// onlyRequest returns the one request srv got.
func onlyRequest(t *testing.T, srv *routertest.Server) routertest.Request {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the service got %d requests, want 1", len(reqs))
	}
	if reqs[0].Body == nil {
		t.Fatalf("request body is not JSON:\n%s", reqs[0].Raw)
	}
	return reqs[0]
}

// sayHi sends p one user message, "hi", fails t unless the answer is
// "ok", and returns the answer and the one request srv got.
func sayHi(t *testing.T, p Provider, srv *routertest.Server) (Response, routertest.Request) {
	t.Helper()
	resp, err := p.Complete(t.Context(), Request{Messages: []Message{{Role: RoleUser, Text: "hi"}}})
	if err != nil || resp.Text != "ok" {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	return resp, onlyRequest(t, srv)
}

// wire is one field of a request body: its path (see routertest.JSONAt)
// and the value it must have.
type wire struct {
	path []any
	want any
}

// checkWire fails t for each field of body that is not as wanted.
func checkWire(t *testing.T, body map[string]any, fields []wire) {
	t.Helper()
	for _, f := range fields {
		if v := routertest.JSONAt(body, f.path...); v != f.want {
			t.Errorf("request %v = %#v, want %#v", f.path, v, f.want)
		}
	}
}

// checkToolCalls fails t unless got are want: ids, names and arguments.
func checkToolCalls(t *testing.T, got, want []ToolCall) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("ToolCalls = %+v, want %+v", got, want)
	}
	for i := range want {
		g := got[i]
		if g.ID != want[i].ID || g.Name != want[i].Name || string(g.Arguments) != string(want[i].Arguments) {
			t.Errorf("ToolCalls[%d] = {%s %s %s}, want {%s %s %s}", i, g.ID, g.Name, g.Arguments, want[i].ID, want[i].Name, want[i].Arguments)
		}
	}
}

// mustComplete returns p's answer to req, failing t when the call fails.
func mustComplete(t *testing.T, p Provider, req Request) Response {
	t.Helper()
	resp, err := p.Complete(t.Context(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return resp
}

// checkTextReply fails t unless resp is the text reply want: its text,
// usage, model id and stop reason, and no tool call.
func checkTextReply(t *testing.T, resp, want Response) {
	t.Helper()
	if resp.Text != want.Text || resp.Usage != want.Usage || resp.ModelID != want.ModelID ||
		resp.StopReason != want.StopReason || len(resp.ToolCalls) != 0 {
		t.Errorf("Complete = %+v, want %+v", resp, want)
	}
}

// completeToolCalls sends msgs to p as a turn with the get_quote tool, and
// fails t unless the reply calls want (see checkToolCalls).
func completeToolCalls(t *testing.T, p Provider, msgs []Message, want []ToolCall) Response {
	t.Helper()
	resp := mustComplete(t, p, Request{Task: TaskTurn, Messages: msgs, Tools: []ToolSpec{getQuote}})
	checkToolCalls(t, resp.ToolCalls, want)
	return resp
}

// getQuote is the tool of the tool-call tests.
var getQuote = ToolSpec{
	Name: "get_quote", Description: "Last price of a symbol.",
	Schema: json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}},"required":["symbol"],"additionalProperties":false}`),
}

// buyINFY is the request of the failure, timeout and cancellation tests.
var buyINFY = Request{Messages: []Message{{Role: RoleUser, Text: "buy INFY"}}}

// apiFailureCase is one way a model call fails, and the *APIError it must give.
type apiFailureCase struct {
	name       string
	reply      routertest.Reply // the service's answer
	status     int
	retryable  bool
	overflow   bool
	retryAfter time.Duration
	text       string // the error text must contain this
}

func checkAPIFailure(t *testing.T, tt apiFailureCase, resp Response, err error, model string) {
	t.Helper()
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("Complete = %+v, %v; want an *APIError", resp, err)
	}
	if ae.Status != tt.status || ae.Retryable != tt.retryable || ae.ContextOverflow != tt.overflow || ae.RetryAfter != tt.retryAfter {
		t.Errorf("APIError{Status %d, Retryable %v, ContextOverflow %v, RetryAfter %v}, want {%d %v %v %v} (%v)",
			ae.Status, ae.Retryable, ae.ContextOverflow, ae.RetryAfter, tt.status, tt.retryable, tt.overflow, tt.retryAfter, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, tt.text) {
		t.Errorf("error %q does not contain %q", msg, tt.text)
	}
	if !strings.HasPrefix(msg, "model "+model+": ") {
		t.Errorf("error %q does not name model %s", msg, model)
	}
	if strings.Contains(msg, fakeAPIKey) || strings.Contains(msg, fakeAPIKey[len(fakeAPIKey)-12:]) {
		t.Errorf("error %q holds the key", msg)
	}
	if len(msg) > 500 {
		t.Errorf("error is %d bytes long, want it short: %q", len(msg), msg)
	}
	if resp.Text != "" || len(resp.ToolCalls) != 0 {
		t.Errorf("a failed call answered %+v", resp)
	}
}

// runAPIFailures runs each case as a subtest: a client of a fake service
// of api, named model, whose one answer is the case's reply, must fail as
// checkAPIFailure says, and its one request must carry the key as
// checkKey wants.
func runAPIFailures(t *testing.T, api routertest.API, cases []apiFailureCase, model string, checkKey func(*testing.T, routertest.Request)) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			p, srv := newTestProvider(t, api, time.Minute, routertest.Script(tt.reply))
			resp, err := p.Complete(t.Context(), buyINFY)
			checkAPIFailure(t, tt, resp, err, model)
			checkKey(t, onlyRequest(t, srv))
		})
	}
}

// checkTimeout calls p, whose service answers slower than p's timeout: the
// call fails retryable, with no status, saying it timed out, and not as a
// cancellation by the caller.
func checkTimeout(t *testing.T, p Provider) {
	t.Helper()
	_, err := p.Complete(t.Context(), buyINFY)
	var ae *APIError
	if !errors.As(err, &ae) || !ae.Retryable || ae.Status != 0 {
		t.Fatalf("Complete = %v, want a retryable *APIError with no status", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("a timeout reads as the caller's cancellation: %v", err)
	}
	if !strings.Contains(err.Error(), "timeout") {
		t.Errorf("error %q does not say it timed out", err)
	}
}

// checkCancelled calls p and cancels the call once started is closed: the
// call fails with context.Canceled, not retryable.
func checkCancelled(t *testing.T, p Provider, started <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	_, err := p.Complete(ctx, buyINFY)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Complete = %v, want context.Canceled", err)
	}
	var ae *APIError
	if errors.As(err, &ae) && ae.Retryable {
		t.Errorf("a cancelled call is retryable: %v", err)
	}
}
