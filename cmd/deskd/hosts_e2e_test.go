package main

// End-to-end test of the Host rule against DNS rebinding (issue 21): the
// daemon in process on the README's first-run setup (no token, loopback),
// with a debug listener; a rebound page's requests, the CLI's, and a
// reload of allowed_hosts.

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostCall sends a request to base+path naming host in its Host header
// (and, for a page, the Origin and Sec-Fetch-Site a same-origin fetch
// sends), and returns the status and the body.
func hostCall(t *testing.T, method, base, path, host, body string, page bool) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if page {
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s with Host %s: %v", method, path, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// hostRuleDaemon starts deskd in process on the open API of a scripted
// desk, with extra lines in its main file, and returns it, that file,
// its API's base URL and port.
func hostRuleDaemon(t *testing.T, extra string) (d *deskdProc, cfg, base, port string) {
	t.Helper()
	cfg = apiConfig(t, t.TempDir(), "{provider: scripted}", extra, "")
	d = startInProcess(t, "deskd", cfg, apiStart)
	base = d.waitReady(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return d, cfg, base, u.Port()
}

// TestHostRuleE2E: on the open API, a page of rebind.evil.example that
// re-resolves to 127.0.0.1 can neither read nor act (421 on the API, the
// metrics, the health check and the debug listener's profiles), and the
// desk is not paused; the CLI, by 127.0.0.1 or localhost, works; a reload
// that adds the name to allowed_hosts lets it through at once.
func TestHostRuleE2E(t *testing.T) {
	t.Parallel()
	d, cfg, base, p := hostRuleDaemon(t, "debug_listen: 127.0.0.1:0\n")
	evil := "rebind.evil.example:" + p
	debug := "http://" + d.waitFor(t, time.Now().Add(30*time.Second), "the debug listener's line", logMessage(debugLine)).Str("debug_listen")
	_, dp, _ := net.SplitHostPort(strings.TrimPrefix(debug, "http://"))

	for _, c := range []struct{ method, base, path, host, body string }{
		{"POST", base, "/v1/desks/main/pause", evil, "{}"},
		{"POST", base, "/v1/desks/main/triggers", evil, `{"text": "buy", "kind": "manual"}`},
		{"GET", base, "/v1/desks", evil, ""},
		{"GET", base, "/v1/approvals", evil, ""},
		{"GET", base, "/metrics", evil, ""},
		{"GET", base, "/healthz", evil, ""},
		{"GET", base, "/", evil, ""},
		{"GET", debug, "/debug/pprof/heap?debug=1", "rebind.evil.example:" + dp, ""},
	} {
		status, body := hostCall(t, c.method, c.base, c.path, c.host, c.body, true)
		if status != http.StatusMisdirectedRequest || !strings.Contains(body, c.host) {
			t.Errorf("%s %s from the rebound page = %d %.300s, want 421 naming the Host", c.method, c.path, status, body)
		}
	}
	if status, body := d.call(t, "GET", "/v1/desks/main", "", ""); status != 200 || strings.Contains(body, `"paused"`) {
		t.Errorf("GET /v1/desks/main = %d %s: want the desk not paused", status, body)
	}
	for _, addr := range []string{"127.0.0.1:" + p, "localhost:" + p} {
		if code, out := deskdCLI(t, "status", "--addr", addr); code != 0 || !strings.Contains(out, "main") {
			t.Errorf("deskd status --addr %s = %d\n%s", addr, code, out)
		}
	}
	if status, body := hostCall(t, "GET", debug, "/debug/pprof/", "localhost:"+dp, "", false); status != http.StatusOK {
		t.Errorf("the debug listener by localhost = %d %.200s, want 200", status, body)
	}

	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(text, "allowed_hosts: [desk-box.example.lan]\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	rel := d.waitFor(t, time.Now().Add(30*time.Second), "config.reloaded", isEvent("config.reloaded"))
	if !strings.Contains(rel.Raw, "allowed_hosts changed from none to [desk-box.example.lan]") || strings.Contains(rel.Raw, "allowed_hosts changed from none to [desk-box.example.lan] (takes effect after a restart)") {
		t.Errorf("the reload does not say allowed_hosts changed, at once: %s", rel.Raw)
	}
	if status, body := hostCall(t, "GET", base, "/v1/desks", "desk-box.example.lan:"+p, "", true); status != http.StatusOK {
		t.Errorf("GET /v1/desks by an allowed name after the reload = %d %.300s, want 200", status, body)
	}
	if status, _ := hostCall(t, "GET", base, "/v1/desks", evil, "", true); status != http.StatusMisdirectedRequest {
		t.Errorf("GET /v1/desks from the rebound page after the reload = %d, want 421", status)
	}
	d.terminate(t)
}
