package mcphost_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/deskd/deskd/config"
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
	srv := &config.MCPServer{Name: "redir", URL: redirector.URL + "/mcp", Timeout: config.DefaultMCPTimeout,
		Secrets: config.MCPSecrets{Headers: map[string][]string{"Authorization": {"Bearer s3cret"}, "X-Api-Key": {"k3y"}}, Digest: "d"}}
	r.host.Configure(map[string]*config.MCPServer{"redir": srv})
	r.host.Use("d", []string{"redir"})
	down := r.waitDown("redir")
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) > 0 {
		t.Errorf("the secret headers went to another host: %q", leaked)
	}
	contains(t, "the down error", down.Error, "redirected to another host")
}
