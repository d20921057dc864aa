package mcptest

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/deskd/deskd/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Token is the bearer token the HTTP server requires.
const Token = "test-secret"

// Stdio returns the config of a server named "stdio" that runs the test
// binary (os.Args[0]) as an MCP server on stdio: the test package's
// TestMain must call ServeStdioIfAsked first. Its orders go to a file in
// t.TempDir() (StdioOrders reads them).
func Stdio(t testing.TB) *config.MCPServer {
	t.Helper()
	return &config.MCPServer{
		Name:    "stdio",
		Command: []string{os.Args[0]},
		Env: map[string]string{
			EnvMode:   "stdio",
			EnvOrders: filepath.Join(t.TempDir(), "orders"),
		},
		Timeout: config.DefaultMCPTimeout,
	}
}

// StdioOrders returns the order lines a server of Stdio has written.
func StdioOrders(t testing.TB, srv *config.MCPServer) []string {
	t.Helper()
	b, err := os.ReadFile(srv.Env[EnvOrders])
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("read the orders of MCP server %s: %v", srv.Name, err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// HTTPServer is the test server over streamable HTTP, on a fixed local
// address, that a test can stop and start again.
type HTTPServer struct {
	// URL is the server's endpoint.
	URL string

	addr   string
	orders atomic.Int64
	mu     sync.Mutex
	srv    *http.Server
	mcp    *mcp.Server
	wg     sync.WaitGroup
}

// HTTP starts the test server over streamable HTTP and returns the config
// of a server named "http" that reaches it (its Authorization header in
// Secrets.Headers). The server requires that header, and stops when the
// test ends.
func HTTP(t testing.TB) (*config.MCPServer, *HTTPServer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen for the MCP test server: %v", err)
	}
	h := &HTTPServer{addr: ln.Addr().String()}
	h.URL = "http://" + h.addr + "/mcp"
	h.serve(ln)
	t.Cleanup(h.Stop)
	cfg := &config.MCPServer{
		Name:    "http",
		URL:     h.URL,
		Timeout: config.DefaultMCPTimeout,
		Secrets: config.MCPSecrets{
			Headers: map[string][]string{"Authorization": {"Bearer " + Token}},
			Digest:  "test",
		},
	}
	return cfg, h
}

// MCP returns the MCP server now serving, so that a test can change its
// tools (the clients are told their list changed).
func (h *HTTPServer) MCP() *mcp.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mcp
}

// Orders counts the orders placed on the server (across restarts).
func (h *HTTPServer) Orders() int { return int(h.orders.Load()) }

// Stop closes the server and every connection to it, as a server that
// dies; it waits for the server to end.
func (h *HTTPServer) Stop() {
	h.mu.Lock()
	srv := h.srv
	h.srv = nil
	h.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
	h.wg.Wait()
}

// Start serves again on the same address, with no memory of the sessions
// before (a server that came back).
func (h *HTTPServer) Start() error {
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		return err
	}
	h.serve(ln)
	return nil
}

func (h *HTTPServer) serve(ln net.Listener) {
	o := Options{
		OnOrder: func(string) { h.orders.Add(1) },
		Crash:   func() { go h.Stop() },
	}
	s := NewServer(o)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+Token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})}
	h.mu.Lock()
	h.srv, h.mcp = srv, s
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		srv.Serve(ln)
	}()
}
