package main

// The bench's model server: an instant OpenAI Chat Completions service
// (streamed, as deskd asks for) that notes when each request arrives,
// keyed by the bench marker in its last message, and counts the TCP
// connections it accepts and the protocols the requests came over.

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// markerPrefix starts every bench marker: markerPrefix, then [0-9a-z-]+.
const markerPrefix = "dkb-"

// arrival is what the model server saw of one marker.
type arrival struct {
	At    time.Time // when its first request arrived (the handler was called)
	Count int       // how many requests were for it (it in their last message)
	Bytes int       // the body size of its last request
	// Times are when each of its first 8 requests arrived.
	Times []time.Time
}

// modelServer is the in-process model service.
type modelServer struct {
	srv   *httptest.Server
	conns atomic.Int64 // TCP connections accepted
	reqs  atomic.Int64 // requests answered

	mu      sync.Mutex
	seen    map[string]*arrival
	waiters map[string]chan struct{}
	protos  map[string]int
}

// newModelServer starts a model server on loopback: plain HTTP/1.1, or
// with tlsH2 TLS offering HTTP/2 and HTTP/1.1 (its certificate is then
// written to dir/model-ca.pem for the daemon's SSL_CERT_FILE).
func newModelServer(tlsH2 bool, dir string) (*modelServer, error) {
	m := &modelServer{seen: map[string]*arrival{}, waiters: map[string]chan struct{}{}, protos: map[string]int{}}
	m.srv = httptest.NewUnstartedServer(http.HandlerFunc(m.serve))
	m.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			m.conns.Add(1)
		}
	}
	if !tlsH2 {
		m.srv.Start()
		return m, nil
	}
	m.srv.EnableHTTP2 = true
	m.srv.StartTLS()
	cert := m.srv.Certificate()
	p := filepath.Join(dir, "model-ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		m.srv.Close()
		return nil, fmt.Errorf("write the model server's certificate: %w", err)
	}
	return m, nil
}

// BaseURL is the API's base URL for deskd's config (base_url).
func (m *modelServer) BaseURL() string { return m.srv.URL + "/v1" }

// Close stops the server.
func (m *modelServer) Close() { m.srv.Close() }

// expect returns a channel closed when a request carrying marker
// arrives. Call it before the request can be made.
func (m *modelServer) expect(marker string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := make(chan struct{})
	if m.seen[marker] != nil {
		close(ch)
		return ch
	}
	m.waiters[marker] = ch
	return ch
}

// arrival returns what the server saw of marker.
func (m *modelServer) arrival(marker string) (arrival, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.seen[marker]
	if !ok {
		return arrival{}, false
	}
	c := *a
	c.Times = slices.Clone(a.Times)
	return c, true
}

// protocols returns how many requests came over each protocol.
func (m *modelServer) protocols() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.protos) // never nil: newModelServer makes m.protos
}

// lastMarker returns the bench marker of the request's last message (a
// Chat Completions message is {"content":...,"role":...}, and a
// message's text cannot hold that unescaped): the marker of the trigger
// the request is for. A request whose last message holds none (a
// compaction's silent flush turn, its summary request, both of which
// carry the history) has none, so that its markers are not counted
// again.
func lastMarker(body []byte) string {
	if k := bytes.LastIndex(body, []byte(`{"content":`)); k >= 0 {
		body = body[k:]
	}
	i := bytes.LastIndex(body, []byte(markerPrefix))
	if i < 0 {
		return ""
	}
	j := i + len(markerPrefix)
	for j < len(body) && (body[j] >= '0' && body[j] <= '9' || body[j] >= 'a' && body[j] <= 'z' || body[j] == '-') {
		j++
	}
	return string(body[i:j])
}

// chatStream is the stream of an instant answer "noted": the text, the
// finish, the usage, [DONE].
const chatStream = `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1767225600,"model":"bench","choices":[{"index":0,"delta":{"role":"assistant","content":"noted"},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1767225600,"model":"bench","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1767225600,"model":"bench","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":0}}}

data: [DONE]

`

func (m *modelServer) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, `{"error":{"message":"read body","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	if r.Method != http.MethodPost || !bytes.HasSuffix([]byte(r.URL.Path), []byte("/chat/completions")) {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	marker := lastMarker(body)
	m.mu.Lock()
	m.protos[r.Proto]++
	if marker != "" {
		a := m.seen[marker]
		if a == nil {
			a = &arrival{At: at}
			m.seen[marker] = a
		}
		a.Count++
		a.Bytes = len(body)
		if len(a.Times) < 8 {
			a.Times = append(a.Times, at)
		}
		if ch, ok := m.waiters[marker]; ok {
			close(ch)
			delete(m.waiters, marker)
		}
	}
	m.mu.Unlock()
	m.reqs.Add(1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = io.WriteString(w, chatStream)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
