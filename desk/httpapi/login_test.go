package httpapi_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

const consoleToken = "op-s3cret-token"

// signIn signs a console in and returns its cookie.
func signIn(t *testing.T, h *httpapitest.Harness) *http.Cookie {
	t.Helper()
	status, hdr, body := h.Call("POST", "/v1/login", `{"token": "`+consoleToken+`"}`, "Content-Type", "application/json")
	if status != http.StatusOK || !strings.Contains(body, `"credential": "operator"`) {
		t.Fatalf("POST /v1/login = %d %s", status, body)
	}
	resp := http.Response{Header: hdr}
	for _, c := range resp.Cookies() {
		if c.Name == httpapi.CookieName {
			return c
		}
	}
	t.Fatalf("POST /v1/login set no %s cookie: %v", httpapi.CookieName, hdr["Set-Cookie"])
	return nil
}

// cookieHeader is the Cookie header of c.
func cookieHeader(c *http.Cookie) string { return c.Name + "=" + c.Value }

// TestLoginCookie: the right token gets a cookie of the operator's
// credential (HttpOnly, SameSite=Strict, Path=/, 12 h); the cookie reads
// the API; whoami says how each request came.
func TestLoginCookie(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: consoleToken, FeedToken: "feed-token"})
	status, hdr, _ := h.Call("POST", "/v1/login", `{"token": "`+consoleToken+`"}`, "Content-Type", "application/json")
	raw := hdr.Get("Set-Cookie")
	for _, want := range []string{httpapi.CookieName + "=", "Path=/", "HttpOnly", "SameSite=Strict", "Max-Age=43200"} {
		if status != 200 || !strings.Contains(raw, want) {
			t.Errorf("POST /v1/login = %d, Set-Cookie %q: want %s", status, raw, want)
		}
	}
	if strings.Contains(raw, "Secure") {
		t.Errorf("Set-Cookie %q is Secure over plain HTTP", raw)
	}
	c := signIn(t, h)
	if len(c.Value) != 64 {
		t.Errorf("session id %q: want 32 random bytes in hex", c.Value)
	}
	if other := signIn(t, h); other.Value == c.Value {
		t.Errorf("two sign-ins got the same id %q", c.Value)
	}
	if status, _, body := h.Call("GET", "/v1/desks", "", "Cookie", cookieHeader(c)); status != 200 || !strings.Contains(body, `"main"`) {
		t.Errorf("GET /v1/desks with the cookie = %d %s", status, body)
	}
	tests := []struct {
		name   string
		header []string
		status int
		via    string
	}{
		{"cookie", []string{"Cookie", cookieHeader(c)}, 200, "cookie"},
		{"token", []string{"Authorization", "Bearer " + consoleToken}, 200, "token"},
		{"nothing", nil, 401, ""},
		{"a made-up cookie", []string{"Cookie", httpapi.CookieName + "=" + strings.Repeat("0", 64)}, 401, ""},
		{"a feed's token", []string{"Authorization", "Bearer feed-token"}, 403, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := h.Call("GET", "/v1/whoami", "", tt.header...)
			if status != tt.status {
				t.Fatalf("GET /v1/whoami = %d %s, want %d", status, body, tt.status)
			}
			if status == 200 {
				w := httpapitest.Decode[httpapi.WhoamiResponse](t, body)
				if w.Credential != "operator" || w.Via != tt.via || !w.NeedsToken {
					t.Errorf("whoami = %+v, want operator via %s, needs_token", w, tt.via)
				}
			}
		})
	}
	t.Run("unix", func(t *testing.T) {
		srv := h.ServeUnix()
		path := strings.TrimPrefix(srv.Addrs()[0], "unix:")
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}}
		resp, err := hc.Get("http://deskd/v1/whoami")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		if w := httpapitest.Decode[httpapi.WhoamiResponse](t, buf.String()); resp.StatusCode != 200 || w.Via != "unix" {
			t.Errorf("whoami over %s = %d %s", filepath.Base(path), resp.StatusCode, buf.String())
		}
	})
}

// TestLoginWrongToken: a wrong token is 401, sets no cookie, and is
// logged at warn with the remote address, never the token.
func TestLoginWrongToken(t *testing.T) {
	var logs bytes.Buffer
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Token: consoleToken, Log: zerolog.New(&logs)}))
	defer srv.Close()
	for _, body := range []string{`{"token": "guess-123"}`, `{"token": ""}`, `{"token": "` + consoleToken + `x"}`} {
		resp, err := http.Post(srv.URL+"/v1/login", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("POST /v1/login %s = %d, Set-Cookie %q: want 401 and none", body, resp.StatusCode, resp.Header.Get("Set-Cookie"))
		}
	}
	out := logs.String()
	if strings.Count(out, `"level":"warn"`) != 3 || !strings.Contains(out, `"remote":"127.0.0.1:`) {
		t.Errorf("log = %s: want three warnings with the remote address", out)
	}
	if strings.Contains(out, "guess-123") || strings.Contains(out, consoleToken) {
		t.Errorf("log = %s: it holds a token", out)
	}
	for _, tt := range []struct{ body, ctype string }{{`{"token": 1}`, "application/json"}, {`token=` + consoleToken, "application/x-www-form-urlencoded"}} {
		resp, err := http.Post(srv.URL+"/v1/login", tt.ctype, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 4 || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("POST /v1/login %s (%s) = %d: want a refusal", tt.body, tt.ctype, resp.StatusCode)
		}
	}
}

// TestLoginOpen: with no token, sign-in needs nothing and sets no cookie;
// whoami says open.
func TestLoginOpen(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	status, hdr, body := h.Call("POST", "/v1/login", `{"token": "anything"}`, "Content-Type", "application/json")
	if l := httpapitest.Decode[httpapi.LoginResponse](t, body); status != 200 || !l.Open || l.Credential != "operator" || hdr.Get("Set-Cookie") != "" {
		t.Errorf("POST /v1/login, open = %d %s %q", status, body, hdr.Get("Set-Cookie"))
	}
	status, _, body = h.Call("GET", "/v1/whoami", "")
	if w := httpapitest.Decode[httpapi.WhoamiResponse](t, body); status != 200 || w.Via != "open" || w.NeedsToken {
		t.Errorf("whoami, open = %d %s", status, body)
	}
}

// TestLoginExpiry: a sign-in lasts 12 h on the server's clock.
func TestLoginExpiry(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: consoleToken})
	start := h.Clock.Now()
	c := signIn(t, h)
	h.Clock.Set(start.Add(httpapi.SignInTTL - time.Second))
	if status, _, body := h.Call("GET", "/v1/whoami", "", "Cookie", cookieHeader(c)); status != 200 {
		t.Errorf("whoami 1 s before the expiry = %d %s", status, body)
	}
	h.Clock.Set(start.Add(httpapi.SignInTTL))
	if status, _, body := h.Call("GET", "/v1/whoami", "", "Cookie", cookieHeader(c)); status != 401 {
		t.Errorf("whoami at the expiry = %d %s, want 401", status, body)
	}
}

// TestLoginOldestGoes: past MaxSignIns live sign-ins, the oldest goes.
func TestLoginOldestGoes(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC))
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Token: consoleToken, Clock: clk}))
	defer srv.Close()
	login := func() *http.Cookie {
		resp, err := http.Post(srv.URL+"/v1/login", "application/json", strings.NewReader(`{"token": "`+consoleToken+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Cookies()[0]
	}
	whoami := func(c *http.Cookie) int {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/whoami", nil)
		req.AddCookie(c)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	first := login()
	clk.Advance(time.Second)
	second := login()
	for range httpapi.MaxSignIns - 1 {
		login()
	}
	if got := whoami(first); got != 401 {
		t.Errorf("whoami with the oldest of %d sign-ins = %d, want 401", httpapi.MaxSignIns+1, got)
	}
	if got := whoami(second); got != 200 {
		t.Errorf("whoami with the second oldest = %d, want 200", got)
	}
}

// TestLogout: logout clears the cookie and the server forgets it.
func TestLogout(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: consoleToken})
	c := signIn(t, h)
	status, hdr, body := h.Call("POST", "/v1/logout", "", "Cookie", cookieHeader(c), "Content-Type", "application/json")
	if raw := hdr.Get("Set-Cookie"); status != http.StatusNoContent || !strings.Contains(raw, httpapi.CookieName+"=;") || !strings.Contains(raw, "Max-Age=0") {
		t.Errorf("POST /v1/logout = %d %s, Set-Cookie %q", status, body, raw)
	}
	if status, _, body := h.Call("GET", "/v1/whoami", "", "Cookie", cookieHeader(c)); status != 401 {
		t.Errorf("whoami after logout = %d %s, want 401", status, body)
	}
}

// TestCSRF: a mutation a browser marks cross-origin is refused 403
// whatever its credential; a cookie's mutation must be JSON (415); a
// request without browser headers (the CLI, a feed) passes.
func TestCSRF(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: consoleToken})
	c := signIn(t, h)
	bearer := []string{"Authorization", "Bearer " + consoleToken}
	cookie := []string{"Cookie", cookieHeader(c)}
	json := []string{"Content-Type", "application/json"}
	join := func(h ...[]string) []string {
		var out []string
		for _, x := range h {
			out = append(out, x...)
		}
		return out
	}
	tests := []struct {
		name   string
		path   string
		header []string
		status int
		err    string
	}{
		{"cross-site with the cookie", "/v1/desks/main/pause", join(cookie, json, []string{"Sec-Fetch-Site", "cross-site"}), 403, "cross-origin"},
		{"same-site with the cookie", "/v1/desks/main/pause", join(cookie, json, []string{"Sec-Fetch-Site", "same-site"}), 403, "cross-origin"},
		{"foreign Origin, old browser", "/v1/desks/main/pause", join(cookie, json, []string{"Origin", "http://evil.example"}), 403, "cross-origin"},
		{"cross-site with the token", "/v1/desks/main/pause", join(bearer, json, []string{"Sec-Fetch-Site", "cross-site"}), 403, "cross-origin"},
		{"cross-site sign-in", "/v1/login", join(json, []string{"Sec-Fetch-Site", "cross-site"}), 403, "cross-origin"},
		{"a form with the cookie", "/v1/desks/main/pause", join(cookie, []string{"Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "same-origin"}), 415, "application/json"},
		{"text/plain with the cookie", "/v1/desks/main/pause", join(cookie, []string{"Content-Type", "text/plain"}), 415, "application/json"},
		{"no type with the cookie", "/v1/desks/main/pause", cookie, 415, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := h.Call("POST", tt.path, `{}`, tt.header...)
			if status != tt.status {
				t.Errorf("POST %s = %d %s, want %d", tt.path, status, body, tt.status)
			}
			if e := httpapitest.Decode[map[string]string](t, body); !strings.Contains(e["error"], tt.err) {
				t.Errorf("error = %q, want %q", e["error"], tt.err)
			}
			if p := h.Desk.Paused(); p != nil {
				t.Fatalf("a refused request paused the desk: %+v", p)
			}
		})
	}
	if status, _, body := h.Call("POST", "/v1/desks/main/pause", `{"by": "cli"}`, bearer...); status != 200 || h.Desk.Paused() == nil {
		t.Errorf("POST pause with the token and no browser headers = %d %s", status, body)
	}
	if status, _, body := h.Call("POST", "/v1/desks/main/resume", `{"by": "console"}`, join(cookie, json, []string{"Sec-Fetch-Site", "same-origin", "Origin", h.URL()})...); status != 200 || h.Desk.Paused() != nil {
		t.Errorf("POST resume with the cookie, same-origin JSON = %d %s", status, body)
	}
}

// TestLoginSecureOverTLS: over TLS the cookie is Secure too.
func TestLoginSecureOverTLS(t *testing.T) {
	srv := httptest.NewTLSServer(httpapi.New(httpapi.Options{Token: consoleToken}))
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/v1/login", "application/json", strings.NewReader(`{"token": "`+consoleToken+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if raw := resp.Header.Get("Set-Cookie"); resp.StatusCode != 200 || !strings.Contains(raw, "; Secure") || !strings.Contains(raw, "HttpOnly") {
		t.Errorf("POST /v1/login over TLS = %d, Set-Cookie %q: want Secure", resp.StatusCode, raw)
	}
}
