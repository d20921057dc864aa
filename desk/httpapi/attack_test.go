package httpapi_test

// The API attacked as a hostile outsider and a careless operator would:
// token guessing, cross-site requests, a fixed session id, hostile sizes,
// an event-stream client that never reads, and answers a browser could
// be made to render, sniff or frame.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/memory/memorytest"
)

const loginJSON = `{"token": "` + consoleToken + `"}`

// TestAttackLoginThrottle: ten wrong tokens within a minute, at sign-in
// or as a bearer token, and the address's every token is refused 429
// with Retry-After, the right one too, until its minute is over on the
// server's clock; another address is not affected; the unix socket never.
func TestAttackLoginThrottle(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: consoleToken})
	jsonType := []string{"Content-Type", "application/json"}
	for i := range httpapi.MaxTokenFailures {
		if status, _, body := h.Call("POST", "/v1/login", fmt.Sprintf(`{"token": "guess-%d"}`, i), jsonType...); status != http.StatusUnauthorized {
			t.Fatalf("wrong sign-in %d = %d %s, want 401", i+1, status, body)
		}
	}
	status, hdr, body := h.Call("POST", "/v1/login", loginJSON, jsonType...)
	if status != http.StatusTooManyRequests || hdr.Get("Retry-After") != "60" || hdr.Get("Set-Cookie") != "" {
		t.Fatalf("the right token after %d wrong ones = %d, Retry-After %q, Set-Cookie %q, %s; want 429, 60, none",
			httpapi.MaxTokenFailures, status, hdr.Get("Retry-After"), hdr.Get("Set-Cookie"), body)
	}
	if e := errorText(t, body); !strings.Contains(e, "wrong tokens") || !strings.Contains(e, "try again in 60 s") {
		t.Errorf("the 429 says %q", e)
	}
	if status, _, body := h.Call("GET", "/v1/desks", "", "Authorization", "Bearer "+consoleToken); status != http.StatusTooManyRequests {
		t.Errorf("the right bearer token from the refused address = %d %s, want 429", status, body)
	}
	if status, _, body := h.Call("GET", "/v1/desks", "", "Authorization", "Bearer "+consoleToken, "X-Forwarded-For", "10.9.9.9"); status != http.StatusTooManyRequests {
		t.Errorf("X-Forwarded-For is believed: %d %s", status, body)
	}
	// The unix socket presents no token and is not refused.
	srv := h.ServeUnix()
	sock := strings.TrimPrefix(srv.Addrs()[0], "unix:")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	if resp, err := hc.Get("http://deskd/v1/desks"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/desks over the socket while the TCP address is refused = %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	h.Clock.Advance(httpapi.TokenFailureWindow - 20*time.Second)
	if _, hdr, _ := h.Call("POST", "/v1/login", loginJSON, jsonType...); hdr.Get("Retry-After") != "20" {
		t.Errorf("Retry-After 40 s into the window = %q, want 20", hdr.Get("Retry-After"))
	}
	h.Clock.Advance(20 * time.Second)
	if status, _, body := h.Call("POST", "/v1/login", loginJSON, jsonType...); status != http.StatusOK {
		t.Fatalf("the right token once the minute is over = %d %s", status, body)
	}

	// Bearer guesses count as sign-in guesses do.
	for i := range httpapi.MaxTokenFailures {
		if status, _, body := h.Call("GET", "/v1/desks", "", "Authorization", fmt.Sprintf("Bearer guess-%d", i)); status != http.StatusUnauthorized {
			t.Fatalf("wrong bearer %d = %d %s, want 401", i+1, status, body)
		}
	}
	if status, _, body := h.Call("POST", "/v1/login", loginJSON, jsonType...); status != http.StatusTooManyRequests {
		t.Errorf("a sign-in after %d wrong bearer tokens = %d %s, want 429", httpapi.MaxTokenFailures, status, body)
	}
}

// TestAttackThrottleIsBounded: the throttle remembers a bounded number of
// addresses (the oldest window goes first), and only addresses that
// presented a wrong token; an address with fewer than ten is not refused.
func TestAttackThrottleIsBounded(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: consoleToken})
	call := func(addr, token string) int {
		r := httptest.NewRequest("GET", "http://127.0.0.1/v1/whoami", nil)
		r.RemoteAddr = addr + ":4242"
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.API.ServeHTTP(w, r)
		return w.Code
	}
	for range httpapi.MaxTokenFailures {
		call("192.0.2.1", "guess")
	}
	if got := call("192.0.2.1", consoleToken); got != http.StatusTooManyRequests {
		t.Fatalf("192.0.2.1 after %d wrong tokens = %d, want 429", httpapi.MaxTokenFailures, got)
	}
	for range httpapi.MaxTokenFailures - 1 {
		call("192.0.2.2", "guess")
	}
	if got := call("192.0.2.2", consoleToken); got != http.StatusOK {
		t.Errorf("192.0.2.2 after %d wrong tokens = %d, want 200", httpapi.MaxTokenFailures-1, got)
	}
	h.Clock.Advance(time.Second)
	for i := range 10000 { // a flood from other addresses, one wrong token each
		call(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), "guess")
	}
	if got := call("192.0.2.1", consoleToken); got != http.StatusOK {
		t.Errorf("the oldest refused address after 10,000 others guessed = %d: the throttle keeps them all", got)
	}
}

// mutations are every endpoint that changes something, with a body each
// would take.
var mutations = []struct{ path, body string }{
	{"/v1/desks/main/triggers", `{"text": "<img src=x onerror=alert(1)>", "kind": "manual", "id": "csrf-1"}`},
	{"/v1/desks/main/rollover", `{}`},
	{"/v1/desks/main/fork", `{}`},
	{"/v1/desks/main/pause", `{"by": "evil", "reason": "csrf"}`},
	{"/v1/desks/main/resume", `{"by": "evil"}`},
	{"/v1/desks/main/triggers/t1/ack", `{"by": "evil"}`},
	{"/v1/desks/main/memory/restore", `{"version": "x"}`},
	{"/v1/desks/main/skills/undo", `{"change": "x"}`},
	{"/v1/logout", `{}`},
	{"/v1/login", loginJSON},
}

// TestAttackCrossSiteForms: what a hostile page can send with the
// operator's cookie (a form of text/plain or urlencoded, or a fetch
// without CORS; from another site, the same site, an opaque origin
// "null", or with no browser header at all) changes nothing at any
// mutation, and no answer carries Access-Control-Allow-Origin.
func TestAttackCrossSiteForms(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: consoleToken})
	c := signIn(t, h)
	before := h.Desk.Status()
	browsers := []struct {
		name   string
		header []string
		want   int
	}{
		{"text/plain from another site", []string{"Content-Type", "text/plain", "Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example"}, 403},
		{"urlencoded from another site", []string{"Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "cross-site"}, 403},
		{"JSON from a sibling site", []string{"Content-Type", "application/json", "Sec-Fetch-Site", "same-site"}, 403},
		{"JSON from an opaque origin", []string{"Content-Type", "application/json", "Origin", "null"}, 403},
		{"text/plain, no browser headers", []string{"Content-Type", "text/plain"}, 415},
		{"multipart, same origin", []string{"Content-Type", "multipart/form-data; boundary=x", "Sec-Fetch-Site", "same-origin"}, 415},
		{"text/plain, Sec-Fetch-Site none", []string{"Content-Type", "text/plain", "Sec-Fetch-Site", "none"}, 415},
	}
	for _, b := range browsers {
		for _, m := range mutations {
			t.Run(b.name+" "+m.path, func(t *testing.T) {
				hdr := append([]string{"Cookie", cookieHeader(c)}, b.header...)
				status, rh, body := h.Call("POST", m.path, m.body, hdr...)
				if status != b.want {
					t.Errorf("POST %s = %d %s, want %d", m.path, status, body, b.want)
				}
				if a := rh.Get("Access-Control-Allow-Origin"); a != "" {
					t.Errorf("POST %s sent Access-Control-Allow-Origin %q", m.path, a)
				}
				if rh.Get("Set-Cookie") != "" {
					t.Errorf("POST %s set a cookie: %q", m.path, rh.Get("Set-Cookie"))
				}
			})
		}
	}
	after := h.Desk.Status()
	if after.Paused != nil || after.Session != before.Session || after.Turns != before.Turns || after.QueueDepth != before.QueueDepth {
		t.Errorf("refused requests changed the desk: before %+v, after %+v", before, after)
	}
	if status, _, _ := h.Call("GET", "/v1/whoami", "", "Cookie", cookieHeader(c)); status != http.StatusOK {
		t.Errorf("a refused cross-site logout signed the console out: whoami = %d", status)
	}
	// A CORS preflight gets no permission either.
	status, rh, _ := h.Call("OPTIONS", "/v1/desks/main/pause", "", "Origin", "http://evil.example", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "content-type")
	if rh.Get("Access-Control-Allow-Origin") != "" || rh.Get("Access-Control-Allow-Methods") != "" || status < 400 {
		t.Errorf("OPTIONS preflight = %d %v: want a refusal without Access-Control-Allow-*", status, rh)
	}
	// The event stream, asked for with the cookie by another origin.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.URL()+"/v1/events?follow=0", nil)
	req.Header.Set("Cookie", cookieHeader(c))
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if a := resp.Header.Get("Access-Control-Allow-Origin"); a != "" || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("GET /v1/events from another origin allows it to read: %v", resp.Header)
	}
}

// TestAttackSessionFixation: a cookie the attacker chose is not a sign-in
// and signing in never adopts it: the new cookie is a fresh id.
func TestAttackSessionFixation(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: consoleToken})
	fixed := httpapi.CookieName + "=" + strings.Repeat("ab", 32)
	status, hdr, body := h.Call("POST", "/v1/login", loginJSON, "Content-Type", "application/json", "Cookie", fixed)
	if status != http.StatusOK || strings.Contains(hdr.Get("Set-Cookie"), strings.Repeat("ab", 32)) || !strings.Contains(hdr.Get("Set-Cookie"), httpapi.CookieName+"=") {
		t.Fatalf("POST /v1/login with a planted cookie = %d %s, Set-Cookie %q", status, body, hdr.Get("Set-Cookie"))
	}
	if status, _, _ := h.Call("GET", "/v1/whoami", "", "Cookie", fixed); status != http.StatusUnauthorized {
		t.Errorf("the planted cookie after a sign-in = %d, want 401", status)
	}
}

// TestAttackHostileSizes: a 100 MB sign-in body and a 1 MB token are
// 413, a 1 MB cookie header 431, and twice MaxSignIns concurrent sign-ins
// keep MaxSignIns live (the newest), without a failure (twice shows the
// bound as 10,000 did, in a fifth of the time).
func TestAttackHostileSizes(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: consoleToken})
	req, _ := http.NewRequestWithContext(t.Context(), "POST", h.URL()+"/v1/login", io.LimitReader(zeros{}, 100<<20))
	req.ContentLength = 100 << 20
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	if err == nil && resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 100 MB sign-in = %d, want 413", resp.StatusCode)
	}
	if status, _, body := h.Call("POST", "/v1/login", `{"token": "`+strings.Repeat("x", 1<<20)+`"}`, "Content-Type", "application/json"); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a 1 MB token = %d %.200s, want 413", status, body)
	}
	base := serveTCP(t, h)
	for _, size := range []int{1 << 20, 100 << 10} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", base+"/v1/whoami", nil)
		req.Header.Set("Cookie", httpapi.CookieName+"="+strings.Repeat("a", size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("a cookie of %d bytes = %d, want 431", size, resp.StatusCode)
		}
	}

	const n = 2 * httpapi.MaxSignIns
	cookies := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			resp, err := http.Post(h.URL()+"/v1/login", "application/json", strings.NewReader(loginJSON))
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 {
				errs <- fmt.Errorf("sign-in %d = %d", i, resp.StatusCode)
				return
			}
			cookies[i] = resp.Cookies()[0].Value
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	live := 0
	for _, v := range cookies {
		if status, _, _ := h.Call("GET", "/v1/whoami", "", "Cookie", httpapi.CookieName+"="+v); status == http.StatusOK {
			live++
		}
	}
	if live != httpapi.MaxSignIns {
		t.Errorf("%d of %d sign-ins are live, want MaxSignIns %d", live, n, httpapi.MaxSignIns)
	}
}

// serveTCP serves h's API on a loopback port as deskd does
// (httpapi.Listen, httpapi.Serve) until the test ends, and returns its
// URL.
func serveTCP(t *testing.T, h *httpapitest.Harness) string {
	t.Helper()
	ls, err := httpapi.Listen([]string{"127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.Serve(t.Context(), h.API, ls)
	t.Cleanup(func() { _ = srv.Shutdown(5 * time.Second) })
	return "http://" + srv.Addrs()[0]
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestAttackSlowEventReader: an event-stream client that stops reading
// while deskd has megabytes to send it is dropped once a round of writes
// has waited 30 s on the server's clock; it holds nothing for longer.
func TestAttackSlowEventReader(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	big := strings.Repeat("x", 8<<10)
	for range httpapi.RingSize {
		event.Publish(h.Bus, event.DeskPaused{Header: event.Header{At: h.Clock.Now(), Desk: "main"}, By: "flood", Reason: big})
	}
	readAll(t, h, fmt.Sprintf("-%d", httpapi.RingSize)) // the ring holds the flood
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /v1/events?backlog=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The ring takes the flood from its mailbox while the stream starts:
	// a round of writes may end, and the next block, after the clock has
	// moved; each blocked round is waited for and timed out in turn.
	r := bufio.NewReader(conn)
	var n int64
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		at := h.Clock.Now().Add(30 * time.Second)
		err := h.Clock.WaitTimerAt(ctx, at)
		cancel()
		if err != nil {
			t.Fatalf("no write watchdog waits for the client that does not read (%d bytes read): %v", n, err)
		}
		h.Clock.Set(at)
		_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second)) // the test's own deadline, not deskd's
		got, err := io.Copy(io.Discard, r)
		n += got
		if err == nil {
			break
		}
		if attempt == 4 {
			t.Fatalf("the stream of a client that stopped reading is still open after %d write timeouts (%d bytes read): %v", attempt+1, n, err)
		}
	}
	if n >= int64(httpapi.RingSize)*int64(len(big)) {
		t.Errorf("the dropped client still got the whole ring (%d bytes)", n)
	}
}

// readAll reads the event stream's backlog (follow=0, to its end, so
// that the stream's handler is gone) until it holds the event whose id
// ends with suffix: the ring takes events from its mailbox, in time.
func readAll(t *testing.T, h *httpapitest.Harness, suffix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", h.URL()+"/v1/events?backlog=1&follow=0", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("the ring never held the event %s: %v", suffix, err)
		}
		found := false
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "id: ") && strings.HasSuffix(line, suffix) {
				found = true
			}
		}
		resp.Body.Close()
		if found {
			return
		}
	}
}

// TestAttackAnswersCannotBeRendered: every answer of the API, a JSON
// body, an error that echoes a hostile path, a 401, the event stream, a
// session's HTML export and the audit bundle, forbids sniffing and
// framing and runs nothing (a sandboxing policy); the export and the
// audit are attachments; no answer allows another origin to read it.
func TestAttackAnswersCannotBeRendered(t *testing.T) {
	h, _ := populated(t)
	export := "/v1/desks/main/sessions/" + memorytest.S1 + "/export"
	paths := []string{
		"/v1/desks", "/v1/desks/main", "/healthz", "/v1/whoami",
		"/v1/%3Csvg%20onload=alert(1)%3E", "/v1/desks/%3Cimg%20src=x%20onerror=alert(1)%3E",
		"/v1/events?follow=0", export, "/v1/desks/main/audit?date=2026-03-02",
		"/v1/desks/main/memory", "/v1/desks/main/notes?date=%3Cscript%3E",
	}
	for _, p := range paths {
		status, hdr, _ := h.Call("GET", p, "", "Origin", "http://evil.example")
		csp := hdr.Get("Content-Security-Policy")
		if hdr.Get("X-Content-Type-Options") != "nosniff" || hdr.Get("X-Frame-Options") != "DENY" ||
			!strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("GET %s = %d: X-Content-Type-Options %q, X-Frame-Options %q, Content-Security-Policy %q; want nosniff, DENY, a sandbox that frames nowhere",
				p, status, hdr.Get("X-Content-Type-Options"), hdr.Get("X-Frame-Options"), csp)
		}
		if strings.Contains(csp, "script-src") {
			t.Errorf("GET %s allows scripts: %q", p, csp)
		}
		if a := hdr.Get("Access-Control-Allow-Origin"); a != "" {
			t.Errorf("GET %s sends Access-Control-Allow-Origin %q", p, a)
		}
	}
	for _, p := range []string{export, "/v1/desks/main/audit?date=2026-03-02"} {
		status, hdr, _ := h.Call("GET", p, "")
		if cd := hdr.Get("Content-Disposition"); status != http.StatusOK || !strings.HasPrefix(cd, "attachment;") {
			t.Errorf("GET %s = %d, Content-Disposition %q: want an attachment", p, status, cd)
		}
	}
	status, hdr, body := h.Call("GET", "/v1/%3Csvg%20onload=alert(1)%3E", "")
	if ct := hdr.Get("Content-Type"); status != http.StatusNotFound || ct != "application/json" {
		t.Errorf("a hostile path = %d %s %s: want a JSON 404", status, ct, body)
	}
	if n, err := strconv.Atoi(hdr.Get("Content-Length")); err == nil && n == 0 {
		t.Errorf("a hostile path's 404 is empty")
	}
}

// TestAttackGetsChangeNothing: no GET changes anything: after every GET
// endpoint of the API (and a GET of every mutation's path, which is
// 405), the state folder holds the same files with the same bytes, and
// no event was announced.
func TestAttackGetsChangeNothing(t *testing.T) {
	h, _ := populated(t)
	state := filepath.Dir(h.Dir)
	_, _, mem := h.Call("GET", "/v1/desks/main/memory", "")
	version := ""
	if vs := httpapitest.Decode[httpapi.MemoryResponse](t, mem).Versions; len(vs) > 0 {
		version = vs[0].ID
	}
	drain(h)
	before := snapshot(t, state)
	if version == "" || !strings.Contains(before, "Memory.md") {
		t.Fatalf("the fixture has no kept version of Memory.md (%q), or its folder no Memory.md:\n%s", version, before)
	}
	s1 := "/v1/desks/main/sessions/" + memorytest.S1
	gets := []string{
		"/v1/desks", "/v1/desks/main", "/healthz", "/v1/whoami", "/v1/config/diff", "/v1/events?backlog=1&follow=0", "/metrics",
		"/v1/desks/main/sessions", s1 + "/transcript", s1 + "/export", "/v1/desks/main/memory", "/v1/desks/main/memory/versions/" + version,
		"/v1/desks/main/notes", "/v1/desks/main/notes?date=2026-03-02", "/v1/desks/main/summaries", "/v1/desks/main/skills",
		"/v1/desks/main/audit?date=2026-03-02", "/v1/desks/main/triggers/nothing?wait=0s",
		// The mutations' paths, asked for with GET and a query that says
		// what a careless link might want.
		"/v1/desks/main/pause?reason=x&by=link", "/v1/desks/main/resume", "/v1/desks/main/rollover", "/v1/desks/main/fork",
		"/v1/desks/main/triggers?text=hi&kind=manual", "/v1/desks/main/memory/restore?version=" + version,
		"/v1/desks/main/skills/undo?change=c-retire", "/v1/login?token=x", "/v1/logout", "/v1/desks/main/triggers/nothing/ack",
	}
	for _, p := range gets {
		status, _, body := h.Call("GET", p, "")
		if status >= 500 && status != http.StatusNotImplemented {
			t.Errorf("GET %s = %d %.200s", p, status, body)
		}
	}
	if after := snapshot(t, state); after != before {
		t.Errorf("GETs changed the state folder:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// A sentinel published after the GETs comes after anything they
	// announced: every event before it is a GET's.
	event.Publish(h.Bus, event.DeskStopped{Header: event.Header{At: h.Clock.Now(), Desk: "sentinel"}, Reason: "sentinel"})
	for done := false; !done; {
		select {
		case e := <-h.Events:
			if s, ok := e.(event.DeskStopped); ok && s.Desk == "sentinel" {
				done = true
			} else {
				t.Errorf("a GET announced %s: %+v", e.Topic(), e)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the sentinel event did not arrive within 10s")
		}
	}
	if h.Desk.Paused() != nil {
		t.Errorf("a GET paused the desk")
	}
}

// drain empties the harness's event channel.
func drain(h *httpapitest.Harness) {
	for {
		select {
		case <-h.Events:
		default:
			return
		}
	}
}

// snapshot lists every file under dir with its size, mode and digest.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		sum := ""
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum = fmt.Sprintf("%x", sha256.Sum256(data))
		}
		fmt.Fprintf(&b, "%s %v %d %s\n", strings.TrimPrefix(p, dir), info.Mode(), info.Size(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
