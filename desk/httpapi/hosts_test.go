package httpapi_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// The tokens of the route tables.
const (
	routesFeedToken    = "feed-t0ken"
	routesMetricsToken = "scrape-t0ken"
)

// routeHarness is the harness of the route tables: every route served,
// the console's included (a stub), and approvals left unconfigured.
func routeHarness(t *testing.T, token bool) *httpapitest.Harness {
	o := httpapitest.Options{
		Console:      http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "console") }),
		AllowedHosts: func() []string { return []string{"deskd.example.lan"} },
	}
	if token {
		o.Token, o.FeedToken, o.MetricsToken = consoleToken, routesFeedToken, routesMetricsToken
	}
	return httpapitest.Start(t, o)
}

// routeRequest is a request to the endpoint of a pattern the server
// registered: its method (GET when the pattern has none) and a path with
// each wildcard filled in (the desk "main").
func routeRequest(t *testing.T, pattern string) (method, path, body string) {
	t.Helper()
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = http.MethodGet, pattern
	}
	if path == "/" {
		path = "/no/such/endpoint"
	}
	fill := strings.NewReplacer("{desk}", "main", "{id}", "t-1", "{session}", "s-1", "{version}", "v-1", "{replay}", "r-1", "{$}", "")
	path = fill.Replace(path)
	if strings.Contains(path, "{") {
		t.Fatalf("route %q: a wildcard this table does not fill in: add it to routeRequest", pattern)
	}
	if method == http.MethodPost {
		body = "{}"
		if pattern == "POST /v1/desks/{desk}/triggers" {
			body = `{"text": "a market tick", "kind": "market"}`
		}
	}
	return method, path, body
}

// answer is what the server said to one request.
type answer struct {
	status int
	header http.Header
	body   string
}

// ask sends one request to h with the header's name, value pairs ("Host"
// sets the request's Host). An event stream is cut once its headers are
// in.
func ask(t *testing.T, h *httpapitest.Harness, method, path, body string, header ...string) answer {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: read the answer: %v", method, path, err)
		}
		a.body = string(b)
	}
	return a
}

// port is the harness's port.
func port(t *testing.T, h *httpapitest.Harness) string {
	u, err := url.Parse(h.URL())
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// TestHostRule: over TCP, a request whose Host names anything but an IP
// address, localhost, a listen address's host or a name of allowed_hosts
// is refused 421 with a JSON error naming the Host and allowed_hosts; the
// port and the case do not matter, and a final dot is ignored.
func TestHostRule(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{
		Listen:       []string{"deskd-host.example.lan:7317", "127.0.0.1:0", "unix:/run/deskd/api.sock"},
		AllowedHosts: func() []string { return []string{"deskd.example.lan"} },
	})
	p := port(t, h)
	tests := []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:" + p, true},
		{"127.0.0.1", true},
		{"127.3.4.5:" + p, true},
		{"[::1]:" + p, true},
		{"[::1]", true},
		{"localhost:" + p, true},
		{"LocalHost.:" + p, true},
		{"192.168.1.20:7317", true}, // an address: no page can rebind it
		{"[2001:db8::1]:7317", true},
		{"deskd.example.lan:" + p, true}, // allowed_hosts
		{"DESKD.Example.LAN.", true},
		{"deskd-host.example.lan:7317", true}, // listen's own host

		{"rebind.evil.example:" + p, false},
		{"rebind.evil.example", false},
		{"127.0.0.1.nip.io:" + p, false},
		{"localhost.evil.example:" + p, false},
		{"evil.localhost:" + p, false},
		{"deskd.example.lan.evil.example", false},
		{"example.lan", false},
		{"deskd:" + p, false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			a := ask(t, h, "GET", "/v1/desks", "", "Host", tt.host)
			if tt.ok {
				if a.status != http.StatusOK {
					t.Errorf("GET /v1/desks with Host %s = %d %s, want 200", tt.host, a.status, a.body)
				}
				return
			}
			e := httpapitest.Decode[map[string]string](t, a.body)
			if a.status != http.StatusMisdirectedRequest || !strings.Contains(e["error"], `"`+tt.host+`"`) ||
				!strings.Contains(e["error"], "allowed_hosts") || a.header.Get("Content-Type") != "application/json" {
				t.Errorf("GET /v1/desks with Host %s = %d %s %v, want 421, a JSON error naming the Host and allowed_hosts", tt.host, a.status, a.header, a.body)
			}
		})
	}
}

// TestHostRuleAllowedHostsAreReadEachRequest: the names of allowed_hosts
// are read at each request: a reload that adds or removes one applies at
// once.
func TestHostRuleAllowedHostsAreReadEachRequest(t *testing.T) {
	var names []string
	h := httpapitest.Start(t, httpapitest.Options{AllowedHosts: func() []string { return names }})
	if a := ask(t, h, "GET", "/v1/desks", "", "Host", "deskd.example.lan"); a.status != http.StatusMisdirectedRequest {
		t.Errorf("before the name is allowed: %d %s, want 421", a.status, a.body)
	}
	names = []string{"deskd.example.lan"}
	if a := ask(t, h, "GET", "/v1/desks", "", "Host", "deskd.example.lan"); a.status != http.StatusOK {
		t.Errorf("once the name is allowed: %d %s, want 200", a.status, a.body)
	}
	names = nil
	if a := ask(t, h, "GET", "/v1/desks", "", "Host", "deskd.example.lan"); a.status != http.StatusMisdirectedRequest {
		t.Errorf("once the name is no longer allowed: %d %s, want 421", a.status, a.body)
	}
}

// TestHostRuleStopsARebindingPage: the repro. A page of
// rebind.evil.example that re-resolves to 127.0.0.1 sends what a
// same-origin fetch sends; on the open API (no token, the README's first
// run) it was the operator. It is refused 421, and the desk is not
// paused.
func TestHostRuleStopsARebindingPage(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	evil := "rebind.evil.example:" + port(t, h)
	page := []string{"Host", evil, "Origin", "http://" + evil, "Sec-Fetch-Site", "same-origin"}
	if a := ask(t, h, "POST", "/v1/desks/main/pause", "{}", page...); a.status != http.StatusMisdirectedRequest {
		t.Errorf("POST /v1/desks/main/pause from the rebound page = %d %s, want 421", a.status, a.body)
	}
	if h.Desk.Paused() != nil {
		t.Errorf("the desk is paused: %+v", h.Desk.Paused())
	}
	if a := ask(t, h, "GET", "/v1/events", "", page...); a.status != http.StatusMisdirectedRequest {
		t.Errorf("GET /v1/events from the rebound page = %d, want 421", a.status)
	}
	// The same page, named as deskd knows itself (the console), is let through.
	if a := ask(t, h, "POST", "/v1/desks/main/pause", "{}", "Host", "localhost:"+port(t, h), "Origin", "http://localhost:"+port(t, h),
		"Sec-Fetch-Site", "same-origin"); a.status != http.StatusOK || h.Desk.Paused() == nil {
		t.Errorf("POST /v1/desks/main/pause from the console on localhost = %d %s, want 200 and a paused desk", a.status, a.body)
	}
}

// TestHostRuleEveryRoute: every route the server registers (a route
// added later is in the table by itself), on the open API and with a
// token, with and without the operator's token: a Host that is not
// deskd's is refused 421 before anything else, and deskd's own names
// are let through to the endpoint.
func TestHostRuleEveryRoute(t *testing.T) {
	for _, mode := range []struct {
		name  string
		token bool
	}{{"open", false}, {"token", true}} {
		t.Run(mode.name, func(t *testing.T) {
			h := routeHarness(t, mode.token)
			p := port(t, h)
			routes := h.API.Routes()
			if len(routes) < 30 {
				t.Fatalf("Routes() = %q: want every route the server serves", routes)
			}
			for _, pattern := range routes {
				method, path, body := routeRequest(t, pattern)
				for _, creds := range [][]string{nil, {"Authorization", "Bearer " + consoleToken}} {
					for _, host := range []string{"rebind.evil.example:" + p, "127.0.0.1.nip.io"} {
						a := ask(t, h, method, path, body, append([]string{"Host", host}, creds...)...)
						if a.status != http.StatusMisdirectedRequest || !strings.Contains(a.body, host) {
							t.Errorf("%s (%s %s), Host %s, credential %q = %d %s, want 421 naming the Host", pattern, method, path, host, creds, a.status, a.body)
						}
						if a.header.Get("Set-Cookie") != "" {
							t.Errorf("%s, Host %s: Set-Cookie %q", pattern, host, a.header.Get("Set-Cookie"))
						}
					}
				}
				if pattern == "POST /v1/logout" || pattern == "POST /v1/login" {
					continue // their own tests; here a sign-in's body would be wrong
				}
				for _, host := range []string{"127.0.0.1:" + p, "localhost:" + p, "[::1]:" + p, "deskd.example.lan"} {
					a := ask(t, h, method, path, body, "Host", host, "Authorization", "Bearer "+consoleToken)
					if a.status == http.StatusMisdirectedRequest {
						t.Errorf("%s (%s %s), Host %s = 421 %s, want it let through", pattern, method, path, host, a.body)
					}
				}
			}
		})
	}
}

// TestHostRuleNotOverUnixSockets: over a unix socket Host is not looked
// at (no browser can open one): the CLI's client sends Host: deskd.
func TestHostRuleNotOverUnixSockets(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	srv := h.ServeUnix()
	c, err := httpapi.Dial(srv.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Desks(t.Context()); err != nil {
		t.Errorf("the client over %s: %v", srv.Addrs()[0], err)
	}
	path := strings.TrimPrefix(srv.Addrs()[0], "unix:")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://rebind.evil.example/v1/desks", nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/desks over the socket with Host rebind.evil.example = %d, want 200", resp.StatusCode)
	}
}

// TestHostRuleClient: the CLI's client reaches the API by the address it
// is given (127.0.0.1, localhost, or a wildcard listen reached on
// loopback).
func TestHostRuleClient(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	p := port(t, h)
	for _, addr := range []string{"127.0.0.1:" + p, "localhost:" + p, "0.0.0.0:" + p, "http://localhost:" + p} {
		c, err := httpapi.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Desks(t.Context()); err != nil {
			t.Errorf("the client of %s: %v", addr, err)
		}
	}
}

// TestDebugListenerHostRule: the debug listener keeps the Host rule
// (its profiles show the daemon's memory), without allowed_hosts.
func TestDebugListenerHostRule(t *testing.T) {
	d, err := httpapi.ServeDebug("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	_, p, _ := net.SplitHostPort(d.Addr())
	for _, tt := range []struct {
		host string
		want int
	}{
		{d.Addr(), http.StatusOK},
		{"localhost:" + p, http.StatusOK},
		{"rebind.evil.example:" + p, http.StatusMisdirectedRequest},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+d.Addr()+"/debug/pprof/", nil)
		req.Host = tt.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("GET /debug/pprof/ with Host %s = %d %.200s, want %d", tt.host, resp.StatusCode, b, tt.want)
		}
	}
}

// access is what a credential gets from an endpoint.
type access int

const (
	through      access = iota // past the credential check, to the endpoint
	unauthorized               // 401
	forbidden                  // 403
)

func (a access) String() string {
	return [...]string{"through to the endpoint", "401", "403"}[a]
}

// accessOf is what each credential kind should get from the endpoint of
// pattern. Any route not named here is the operator's alone, so that a
// new route is checked as one until this table says otherwise.
func accessOf(pattern, kind string) access {
	switch pattern {
	case "GET /healthz", "GET /{$}", "GET /console/", "GET /v1/proof":
		return through // no credential needed (a proof needs a token's id, proof.go)
	case "POST /v1/login":
		if kind == "operator" {
			return through
		}
		return unauthorized // its credential is its body's token
	}
	switch {
	case kind == "none":
		return unauthorized
	case kind == "operator", kind == "cookie", pattern == "/":
		return through
	case kind == "feed" && (pattern == "POST /v1/desks/{desk}/triggers" || pattern == "GET /v1/desks/{desk}/triggers/{id}"):
		return through
	case kind == "metrics" && pattern == "GET /metrics":
		return through
	}
	return forbidden
}

// TestCredentialsEveryRoute: every credential kind (none, the operator's
// token, a feed's, the scraper's, the console's cookie) on every route the
// server registers (a new route is in the table by itself), with the
// status each should get. POST /v1/login takes its token in its body: it
// signs in the operator's alone, and sets no cookie for any other.
func TestCredentialsEveryRoute(t *testing.T) {
	h := routeHarness(t, true)
	kinds := []string{"none", "operator", "feed", "metrics", "cookie"}
	tokens := map[string]string{"operator": consoleToken, "feed": routesFeedToken, "metrics": routesMetricsToken}
	for _, pattern := range h.API.Routes() {
		method, path, body := routeRequest(t, pattern)
		for _, kind := range kinds {
			var header []string
			switch {
			case pattern == "POST /v1/login":
				body = `{"token": "` + tokens[kind] + `"}`
				if kind == "cookie" {
					header = []string{"Cookie", cookieHeader(signIn(t, h))}
				}
			case kind == "cookie":
				header = []string{"Cookie", cookieHeader(signIn(t, h))} // afresh: POST /v1/logout ends it
			case kind != "none":
				header = []string{"Authorization", "Bearer " + tokens[kind]}
			}
			a := ask(t, h, method, path, body, header...)
			want := accessOf(pattern, kind)
			var got access
			switch a.status {
			case http.StatusUnauthorized:
				got = unauthorized
			case http.StatusForbidden:
				got = forbidden
			case http.StatusMisdirectedRequest, http.StatusTooManyRequests:
				t.Fatalf("%s with %s = %d %s: the table's requests must reach the credential check", pattern, kind, a.status, a.body)
			}
			if got != want {
				t.Errorf("%s (%s %s) with %s = %d %.300s, want %v", pattern, method, path, kind, a.status, a.body, want)
			}
			if pattern == "POST /v1/login" && kind != "operator" && a.header.Get("Set-Cookie") != "" {
				t.Errorf("POST /v1/login with the %s's token set a cookie: %q", kind, a.header.Get("Set-Cookie"))
			}
		}
	}
}

// TestLoginTakesOnlyTheOperatorsToken: POST /v1/login with a feed's or
// the scraper's token (tokens deskd knows, of less trust) is 401 and sets
// no cookie; with the operator's it signs in.
func TestLoginTakesOnlyTheOperatorsToken(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: consoleToken, FeedToken: routesFeedToken, MetricsToken: routesMetricsToken})
	for _, tt := range []struct {
		name, token string
		want        int
	}{
		{"the feed's token", routesFeedToken, http.StatusUnauthorized},
		{"the scraper's token", routesMetricsToken, http.StatusUnauthorized},
		{"the operator's token", consoleToken, http.StatusOK},
	} {
		status, hdr, body := h.Call("POST", "/v1/login", `{"token": "`+tt.token+`"}`, "Content-Type", "application/json")
		cookie := hdr.Get("Set-Cookie")
		if status != tt.want || (cookie != "") != (tt.want == http.StatusOK) {
			t.Errorf("POST /v1/login with %s = %d %s, Set-Cookie %q: want %d, a cookie only on 200", tt.name, status, body, cookie, tt.want)
		}
	}
}

// TestHostRuleNoHost: an HTTP/1.0 request with no Host at all (a bare
// health probe) is let through: a browser always names the host, so a
// request without one cannot come from a rebound page. An empty Host
// header is the same request.
func TestHostRuleNoHost(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Listen: []string{"127.0.0.1:0"}})
	u, err := url.Parse(h.URL())
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []string{"GET /healthz HTTP/1.0\r\n\r\n", "GET /healthz HTTP/1.0\r\nHost:\r\n\r\n"} {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if status, _, _ := strings.Cut(string(b), "\r\n"); status != "HTTP/1.0 200 OK" {
			t.Errorf("%q answered %q, want 200: no Host names nothing a page could rebind", req, status)
		}
	}
}
