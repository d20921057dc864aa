package mcphost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/mcphost"
)

// TestRedirectKeepsSecretHeaders: an HTTP server that redirects to another
// host does not get deskd's secret headers sent there.
func TestRedirectKeepsSecretHeaders(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		for _, h := range []string{"Authorization", "X-Api-Key"} {
			if v := req.Header.Get(h); v != "" {
				leaked = append(leaked, h+": "+v)
			}
		}
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer other.Close()
	// localhost, not 127.0.0.1: another host, for the client.
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/mcp"
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		http.Redirect(w, req, target, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	r := newRig(t)
	r.configure(&config.MCPServer{Name: "redir", URL: redirector.URL + "/mcp", Timeout: config.DefaultMCPTimeout,
		Secrets: config.MCPSecrets{Headers: map[string][]string{"Authorization": {"Bearer s3cret"}, "X-Api-Key": {"k3y"}}, Digest: "d"}})
	down := r.waitDown("redir")
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Errorf("the secret headers went to another host: %q", leaked)
	}
	contains(t, "the down error", down.Error, "redirected to another host")
}

// readRPC reads the JSON-RPC request that req POSTs, to the body's end:
// only then does net/http watch the connection, and end the request's
// context when the client drops it. Anything else (another method, a
// notification, a body that is not JSON-RPC) it answers itself, and
// returns false.
func readRPC(w http.ResponseWriter, req *http.Request) (rpcRequest, bool) {
	var msg rpcRequest
	if req.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return msg, false
	}
	body, err := io.ReadAll(req.Body)
	if err != nil || json.Unmarshal(body, &msg) != nil || msg.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return msg, false
	}
	return msg, true
}

// rawHTTP is a raw streamable-HTTP MCP server that answers every call in
// application/json; answer gives a tools/call's result.
func rawHTTP(t *testing.T, answer func(w http.ResponseWriter, id json.RawMessage)) *config.MCPServer {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		msg, ok := readRPC(w, req)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		if msg.Method == "tools/call" {
			answer(ctxWriter{w, req.Context(), msg.Params.Name}, msg.ID)
			return
		}
		json.NewEncoder(w).Encode(rpcResult(msg.ID, rawResult("", msg.Method)))
	}))
	t.Cleanup(srv.Close)
	return &config.MCPServer{Name: "raw", URL: srv.URL + "/mcp", Timeout: config.DefaultMCPTimeout}
}

// TestHugeJSONAnswerIsRefused: an HTTP server that answers a call with a
// 40 MiB application/json body: deskd stops reading at
// mcphost.MaxMessage, the call fails with a clear error, and the server
// is reconnected.
func TestHugeJSONAnswerIsRefused(t *testing.T) {
	r := newRig(t)
	var sent atomic.Int64
	srv := rawHTTP(t, func(w http.ResponseWriter, id json.RawMessage) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range 40 {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
		io.WriteString(w, `"}]}}`)
	})
	r.serve(srv)
	ts := r.toolset("raw")
	out, err := call(t, tool(t, ts, "mcp__raw__echo"), map[string]any{"text": "x"})
	if err == nil {
		t.Fatalf("a 40 MiB answer was taken (%d bytes)", len(out))
	}
	contains(t, "the call's error", err.Error(), fmt.Sprintf("larger than %d bytes", mcphost.MaxMessage))
	r.retry(r.waitDown("raw"))
	r.waitUp("raw")
}

// TestOversizedResultOverBothTransports: a result larger than
// mcphost.MaxMessage (over stdio a line, over HTTP an event) fails the
// call, the connection is made again, and the next call works.
func TestOversizedResultOverBothTransports(t *testing.T) {
	overTransports(t, func(t *testing.T, r *rig, srv *config.MCPServer) {
		r.serve(srv)
		ts := r.toolset(srv.Name)
		if _, err := call(t, tool(t, ts, mcphost.ToolName(srv.Name, "big")), map[string]any{"bytes": mcphost.MaxMessage + 1}); err == nil {
			t.Fatal("an answer over the cap was taken")
		}
		r.retry(r.waitDown(srv.Name))
		r.waitUp(srv.Name)
		if got := mustCall(t, tool(t, ts, mcphost.ToolName(srv.Name, "echo")), map[string]any{"text": "back"}); got != "back" {
			t.Errorf("echo after the big answer = %q", got)
		}
	})
}

// TestHTTPErrorsAreClear: an HTTP server that answers 401 or 500 is down
// with an error that names the status and shows no secret.
func TestHTTPErrorsAreClear(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusInternalServerError, http.StatusServiceUnavailable} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				http.Error(w, "\x1b[31mgo away\x1b[0m", status)
			}))
			defer srv.Close()
			r := newRig(t)
			r.configure(&config.MCPServer{Name: "bad", URL: srv.URL + "/mcp", Timeout: config.DefaultMCPTimeout,
				Secrets: config.MCPSecrets{Headers: map[string][]string{"Authorization": {"Bearer s3cret"}}, Digest: "d"}})
			down := r.waitDown("bad")
			contains(t, "the down error", down.Error, http.StatusText(status))
			if strings.Contains(down.Error, "s3cret") || strings.ContainsRune(down.Error, '\x1b') {
				t.Errorf("the down error %q shows the secret or an escape", down.Error)
			}
		})
	}
}

// TestSlowLorisHTTP: an HTTP server that sends its answer's headers and
// then never the body is down once the server's timeout has passed on
// the host's clock.
func TestSlowLorisHTTP(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"jsonrpc":`)
		w.(http.Flusher).Flush()
		select {
		case <-req.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	r := newRig(t)
	r.configure(&config.MCPServer{Name: "loris", URL: srv.URL + "/mcp", Timeout: 5 * time.Second})
	r.expire(start.Add(5 * time.Second))
	contains(t, "the down error", r.waitDown("loris").Error, "no answer within 5s")
}

// TestEchoedSecretsAreHidden: a server that echoes deskd's secret header
// back, in an HTTP error at the start and in a tool's result and error,
// does not get the secret into the down error (logs, status, the model's
// note) or into what the model reads.
func TestEchoedSecretsAreHidden(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		auth := req.Header.Get("Authorization")
		msg, ok := readRPC(w, req)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if refuse.Load() {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
				"error": map[string]any{"code": -32600, "message": "bad credentials: " + auth}})
			return
		}
		res := rawResult("", msg.Method)
		if msg.Method == "tools/call" {
			res = map[string]any{"isError": msg.Params.Name == "fail", "content": []any{map[string]any{"type": "text", "text": "you sent " + auth}}}
		}
		json.NewEncoder(w).Encode(rpcResult(msg.ID, res))
	}))
	defer srv.Close()
	r := newRig(t)
	r.configure(&config.MCPServer{Name: "echoer", URL: srv.URL + "/mcp", Timeout: config.DefaultMCPTimeout,
		Secrets: config.MCPSecrets{Headers: map[string][]string{"Authorization": {"Bearer s3cret-t0ken"}}, Digest: "d"}})
	down := r.waitDown("echoer")
	if strings.Contains(down.Error, "s3cret-t0ken") {
		t.Errorf("the down error shows the secret: %q", down.Error)
	}
	contains(t, "the down error", down.Error, "bad credentials")
	refuse.Store(false)
	r.retry(down)
	r.waitUp("echoer")
	ts := r.toolset("echoer")
	out, err := call(t, tool(t, ts, "mcp__echoer__echo"), map[string]any{})
	if err != nil || strings.Contains(out, "s3cret-t0ken") {
		t.Errorf("echo = %q, %v: the secret reaches the model", out, err)
	}
}

// TestSlowLorisCallIsDropped: an HTTP server that starts its answer to a
// call and never ends it: the call times out on the host's clock, and
// deskd drops the request (the server sees it go), so that slow answers
// do not pile up.
func TestSlowLorisCallIsDropped(t *testing.T) {
	gaveUp, asked := make(chan struct{}, 1), make(chan struct{}, 1)
	srv := rawHTTP(t, func(w http.ResponseWriter, id json.RawMessage) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
		w.(http.Flusher).Flush()
		asked <- struct{}{}
		<-rawRequest(w).Done()
		gaveUp <- struct{}{}
	})
	srv.Timeout = 5 * time.Second
	r := newRig(t)
	r.serve(srv)
	ts := r.toolset("raw")
	errc := make(chan error, 1)
	go func() { _, err := call(t, tool(t, ts, "mcp__raw__echo"), map[string]any{}); errc <- err }()
	await(t, asked, "the call did not reach the server") // the call and its request are then under way, each with its 5s timer
	r.expire(start.Add(5 * time.Second))
	err := await(t, errc, "the call did not end at its timeout")
	contains(t, "the call's error", fmt.Sprint(err), "timed out after 5s")
	await(t, gaveUp, "deskd did not drop the slow answer's request")
}

// ctxWriter carries the request's context, and the tool called, to an
// answer.
type ctxWriter struct {
	http.ResponseWriter
	ctx  context.Context
	name string
}

func (w ctxWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

func rawRequest(w http.ResponseWriter) context.Context { return w.(ctxWriter).ctx }

// rawName is the name of the tool a call of rawHTTP calls.
func rawName(w http.ResponseWriter) string { return w.(ctxWriter).name }

// TestCloseWithAStalledHTTPServer: an HTTP server that never answers the
// DELETE ending its session does not keep Close from returning: the
// DELETE is given the host's grace (the MCP SDK's own bound is 5 s).
func TestCloseWithAStalledHTTPServer(t *testing.T) {
	t.Parallel() // the grace, in real time: run beside the others
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodDelete {
			<-release // stalls
			return
		}
		msg, ok := readRPC(w, req)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		json.NewEncoder(w).Encode(rpcResult(msg.ID, rawResult("", msg.Method)))
	}))
	defer srv.Close()
	defer close(release) // before srv.Close, which waits for the handlers
	r := newRig(t)
	r.serve(&config.MCPServer{Name: "stall", URL: srv.URL + "/mcp", Timeout: 5 * time.Second})
	closed := make(chan error, 1)
	go func() { closed <- r.host.Close() }()
	await(t, closed, "Close did not return")
}
