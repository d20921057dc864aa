// Package routertest runs fake model services on httptest for tests: one
// that speaks OpenAI's streamed Chat Completions API and one that speaks
// Anthropic's streamed Messages API, as the real services do on the wire.
//
// A Server records every request it gets (path, headers, body, the
// conversation), answers 404 to one that is not posted to the API's
// endpoint (.../chat/completions, /v1/messages), and answers each other one
// with the Reply its Answer function gives:
// a text, tool calls, an error with a status code and headers, raw stream
// events, a connection cut mid-stream, or a reply held until the test
// releases it (delays are channels, never sleeps). A Strict server also
// refuses, with the service's own 400, a request that breaks the rules the
// real service enforces on a conversation with tool calls.
//
// The package speaks HTTP only and does not import router, so that
// router's own tests can use it; a test builds the provider's client over
// BaseURL and Client.
package routertest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// API is the wire protocol a Server speaks.
type API int

const (
	// ChatCompletions is OpenAI's Chat Completions API (POST
	// /v1/chat/completions), also spoken by vLLM, Ollama and llama.cpp.
	ChatCompletions API = iota + 1
	// Messages is Anthropic's Messages API (POST /v1/messages).
	Messages
)

// String names the API as deskd's config names its provider.
func (a API) String() string {
	switch a {
	case ChatCompletions:
		return "openai"
	case Messages:
		return "anthropic"
	}
	return fmt.Sprintf("API(%d)", int(a))
}

// endpoint is the path the API's calls are posted to (below the base URL).
func (a API) endpoint() string {
	if a == Messages {
		return "/v1/messages"
	}
	return "/chat/completions"
}

// DefaultWait is how long Await waits unless Options.Wait says otherwise:
// long enough for a loaded machine running the built binary.
const DefaultWait = 30 * time.Second

// ToolCall is one tool call of a scripted reply.
type ToolCall struct {
	// ID is the call's id; empty gives call_<n>_<i> (Chat Completions) or
	// toolu_<n>_<i> (Messages), n the request's number, i the call's.
	ID string
	// Name is the tool's name.
	Name string
	// Args is the arguments' JSON text, sent as the service streams it.
	Args string
}

// Usage is the token counts a reply reports. Input is the whole prompt;
// Cached of it was read from the prompt cache and CacheWrite written to it
// (the Messages API reports both, apart from its input_tokens; Chat
// Completions reports Cached only).
type Usage struct {
	Input, Output, Cached, CacheWrite int
}

// Reply is a Server's answer to one request. The zero Reply is a stream
// of the text "ok". Which fields count, in order: Write replaces all the
// rest; with Body, or a Status of 400 or more, the answer is a plain
// failure; with Cut, the connection is cut after Events; otherwise the
// answer is a stream: Events as they are, or else the stream the service
// sends for Text and ToolCalls.
type Reply struct {
	// Text is the assistant's text ("ok" when neither Text nor ToolCalls
	// is set).
	Text string
	// ToolCalls are the calls the assistant asks for.
	ToolCalls []ToolCall
	// Usage is what the stream reports; zero reports 10 tokens in, 5 out.
	Usage Usage
	// Model is the model id the stream names (default "fake").
	Model string

	// Status, 400 or more, fails the request with this status and an
	// error body in the service's shape, carrying Message and ErrorType.
	Status int
	// Message is the failure's message (default "injected failure").
	Message string
	// ErrorType is the failure's type (default: the service's type for
	// the status, such as server_error or invalid_request_error).
	ErrorType string
	// Body, if set, is the whole body of the answer, sent with Status
	// (default 200) and a JSON content type unless Header sets one.
	Body string
	// Header is set on the answer (Retry-After, Content-Type, ...).
	Header map[string]string

	// Events, if set, are the stream's events, written as they are (each
	// followed by an empty line), instead of the stream built from Text
	// and ToolCalls.
	Events []string
	// Cut writes the start of a chunked stream of Events on the raw
	// connection and closes it, as a proxy or a crashing server does.
	Cut bool

	// Hold, if set, delays the answer until a value is received from it or
	// it is closed (or the client goes, or the server closes). The request
	// is recorded, and Await sees it, before the wait.
	Hold <-chan struct{}
	// Hang leaves the stream open after its events, until the client goes
	// or the server closes: a reply slower than any timeout.
	Hang bool
	// Flushed, if set, is closed once the answer's status, headers and
	// events have reached the client.
	Flushed chan<- struct{}

	// Write, if set, writes the whole answer itself, for streams the
	// other fields cannot describe.
	Write func(w http.ResponseWriter, r *http.Request)
}

// Message is one message of a request's conversation.
type Message struct {
	// Role is the message's role: system, user, assistant or tool (Chat
	// Completions); user or assistant (Messages).
	Role string
	// Text is the message's text: its string content, or its text parts
	// (blocks) joined.
	Text string
	// ToolCallID is the tool call a tool message answers (Chat
	// Completions), or the first one a user message's tool_result blocks
	// answer (Messages).
	ToolCallID string
}

// Request is what a Server got in one request.
type Request struct {
	// N numbers the server's requests from 1.
	N int
	// API is the server's API.
	API API
	// Path is the request's URL path.
	Path string
	// Header is the request's headers.
	Header http.Header
	// Raw is the request's body.
	Raw []byte
	// Body is the body decoded as a JSON object (nil if it is not one).
	Body map[string]any
	// Messages is the request's conversation.
	Messages []Message
	// Problems are the service's rules the request breaks (a Strict
	// server refuses it with the first).
	Problems []string
}

// LastUser returns the text of the request's last user message.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// Last returns the request's last message (the zero Message if none).
func (r Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// MayCallTools reports whether the request defines tools and lets the
// model call them.
func (r Request) MayCallTools() bool {
	tools, _ := r.Body["tools"].([]any)
	if len(tools) == 0 {
		return false
	}
	if r.API == Messages {
		return JSONAt(r.Body, "tool_choice", "type") != "none"
	}
	return r.Body["tool_choice"] != "none"
}

// UserContains returns a predicate for Await: the request's last user
// message contains text.
func UserContains(text string) func(Request) bool {
	return func(r Request) bool { return strings.Contains(r.LastUser(), text) }
}

// Options configure a Server.
type Options struct {
	// Answer gives the reply to each request; nil answers "ok" to all.
	// It runs on the server's goroutines, one call per request, and must
	// not call testing's Fatal.
	Answer func(Request) Reply
	// Strict refuses a request that breaks the service's rules (see
	// Problems) with the service's 400, without calling Answer.
	Strict bool
	// Wait bounds Await (default DefaultWait).
	Wait time.Duration
	// KeepBodies, if set, is how many of the latest requests keep their
	// Raw, Body and Messages; older ones keep the rest (a test of a long
	// session reads each body in Answer, or only the last ones, and need
	// not hold them all). 0 keeps every body.
	KeepBodies int
}

// Server is a fake model service on httptest. It is closed at the end of
// the test.
type Server struct {
	api  API
	o    Options
	srv  *httptest.Server
	tb   testing.TB
	stop chan struct{} // closed by Close: held and hanging answers end
	once sync.Once

	mu       sync.Mutex
	requests []Request
	refused  []string
	awaited  int           // how many requests Await has looked at
	changed  chan struct{} // closed, and replaced, when a request arrives
}

// New starts a fake service speaking api.
func New(tb testing.TB, api API, o Options) *Server {
	tb.Helper()
	if o.Answer == nil {
		o.Answer = func(Request) Reply { return Reply{} }
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	s := &Server{api: api, o: o, tb: tb, stop: make(chan struct{}), changed: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.Close)
	return s
}

// Script returns an Answer that gives replies in order, one per request,
// and "ok" once they are used up.
func Script(replies ...Reply) func(Request) Reply {
	var mu sync.Mutex
	return func(Request) Reply {
		mu.Lock()
		defer mu.Unlock()
		if len(replies) == 0 {
			return Reply{}
		}
		r := replies[0]
		replies = replies[1:]
		return r
	}
}

// Always returns an Answer that gives r to every request.
func Always(r Reply) func(Request) Reply {
	return func(Request) Reply { return r }
}

// API returns the API the server speaks.
func (s *Server) API() API { return s.api }

// URL is the server's root, such as http://127.0.0.1:1234.
func (s *Server) URL() string { return s.srv.URL }

// BaseURL is the base URL a provider of the server's API is configured
// with: URL/v1 for Chat Completions, URL for Messages.
func (s *Server) BaseURL() string {
	if s.api == ChatCompletions {
		return s.srv.URL + "/v1"
	}
	return s.srv.URL
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close ends held and hanging answers, cuts the clients' connections and
// shuts the server down, waiting for its handlers. It may be called more
// than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.stop)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Requests returns every request so far, in order of arrival.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns how many requests the server has had.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// CountWhere returns how many of the server's requests ok accepts.
func (s *Server) CountWhere(ok func(Request) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if ok(r) {
			n++
		}
	}
	return n
}

// Refused returns the rule a Strict server refused each request for, in
// order.
func (s *Server) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.refused...)
}

// Await returns the next request that ok accepts (nil accepts any),
// among those Await has not looked at yet, waiting for it up to
// Options.Wait; it fails tb if none comes.
func (s *Server) Await(tb testing.TB, ok func(Request) bool) Request {
	tb.Helper()
	deadline := time.NewTimer(s.o.Wait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		for s.awaited < len(s.requests) {
			r := s.requests[s.awaited]
			s.awaited++
			if ok == nil || ok(r) {
				s.mu.Unlock()
				return r
			}
		}
		n := len(s.requests)
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("the %s service got no awaited request within %v (%d requests in all)", s.api, s.o.Wait, n)
			return Request{}
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{API: s.api, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		req.Problems = []string{"the body is not a JSON object: " + err.Error()}
	} else {
		req.Messages = messages(s.api, req.Body)
		req.Problems = Problems(s.api, req.Body)
	}
	s.mu.Lock()
	req.N = len(s.requests) + 1
	s.requests = append(s.requests, req)
	if k := s.o.KeepBodies; k > 0 && len(s.requests) > k {
		old := &s.requests[len(s.requests)-k-1]
		old.Raw, old.Body, old.Messages = nil, nil, nil
	}
	refuse := s.o.Strict && len(req.Problems) > 0
	if refuse {
		s.refused = append(s.refused, req.Problems...)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()

	var reply Reply
	switch {
	case !strings.HasSuffix(req.Path, s.api.endpoint()):
		reply = Reply{Status: http.StatusNotFound, Message: "no such endpoint: " + req.Path}
	case refuse:
		reply = Reply{Status: http.StatusBadRequest, ErrorType: "invalid_request_error", Message: req.Problems[0]}
	default:
		reply = s.o.Answer(req)
	}
	if reply.Hold != nil {
		select {
		case <-reply.Hold:
		case <-r.Context().Done():
			return
		case <-s.stop:
			return
		}
	}
	s.write(w, r, req, reply)
}

func (s *Server) write(w http.ResponseWriter, r *http.Request, req Request, reply Reply) {
	if reply.Write != nil {
		reply.Write(w, r)
		return
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	switch {
	case reply.Body != "" || reply.Status >= 400:
		body := reply.Body
		if body == "" {
			body = errorBody(s.api, reply)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(max(reply.Status, http.StatusOK))
		io.WriteString(w, body)
		return
	case reply.Cut:
		cut(w, reply.Events)
		return
	}
	events := reply.Events
	if events == nil {
		events = Stream(s.api, req.N, reply)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		fmt.Fprint(w, e, "\n\n")
	}
	w.(http.Flusher).Flush()
	if reply.Flushed != nil {
		close(reply.Flushed)
	}
	if reply.Hang {
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
	}
}

// cut writes the start of a chunked event stream on the raw connection and
// closes it.
func cut(w http.ResponseWriter, events []string) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		http.Error(w, "hijack: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	body := strings.Join(events, "\n\n") + "\n\n"
	writeRaw(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	writeRaw(buf, fmt.Sprintf("%x\r\n%s\r\n", len(body), body))
	_ = buf.Flush()
}

func writeRaw(w *bufio.ReadWriter, s string) { _, _ = w.WriteString(s) }

// errorBody is a failure's body in the service's shape.
func errorBody(api API, r Reply) string {
	msg := r.Message
	if msg == "" {
		msg = "injected failure"
	}
	kind := r.ErrorType
	if kind == "" {
		switch {
		case r.Status >= 500 && api == Messages:
			kind = "api_error"
		case r.Status >= 500:
			kind = "server_error"
		default:
			kind = "invalid_request_error"
		}
	}
	m, k := jsonString(msg), jsonString(kind)
	if api == Messages {
		return `{"type":"error","error":{"type":` + k + `,"message":` + m + `}}`
	}
	return `{"error":{"message":` + m + `,"type":` + k + `,"param":null,"code":null}}`
}

// messages reads the conversation of a request body.
func messages(api API, body map[string]any) []Message {
	raw, _ := body["messages"].([]any)
	var out []Message
	for _, m := range raw {
		mm, _ := m.(map[string]any)
		msg := Message{}
		msg.Role, _ = mm["role"].(string)
		msg.ToolCallID, _ = mm["tool_call_id"].(string)
		var texts []string
		for _, b := range blocks(mm) {
			switch b["type"] {
			case "text":
				s, _ := b["text"].(string)
				texts = append(texts, s)
			case "tool_result":
				if msg.ToolCallID == "" {
					msg.ToolCallID, _ = b["tool_use_id"].(string)
				}
			}
		}
		msg.Text = strings.Join(texts, "")
		out = append(out, msg)
	}
	return out
}

// JSONAt digs into decoded JSON: a string steps into an object's key, an
// int into an array's index; a missing step gives nil.
func JSONAt(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k < 0 || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
