package main

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

const debugLine = "debug listener: serving the profiles, on loopback only"

// get fetches url and returns the status and the body (httpDo).
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	return httpDo(t, http.MethodGet, url, "")
}

// TestDebugListenerServesPprof: with debug_listen, deskd run serves
// net/http/pprof's index and profiles on that (loopback) address, and the
// API's listener serves none of them.
func TestDebugListenerServesPprof(t *testing.T) {
	t.Parallel()
	s := newE2ESetup(t, "")
	f, err := os.OpenFile(s.Config, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("debug_listen: 127.0.0.1:0\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	d := startInProcess(t, "deskd", s.Config, apiStart)
	api := d.waitReady(t)
	l := d.waitFor(t, time.Now().Add(30*time.Second), "the debug listener's line", logMessage(debugLine))
	base := "http://" + l.Str("debug_listen")
	if !strings.HasPrefix(l.Str("debug_listen"), "127.0.0.1:") || l.Str("pprof") != base+"/debug/pprof/" {
		t.Fatalf("debug listener line: %s", l.Raw)
	}

	for _, tt := range []struct{ path, want string }{
		{"/debug/pprof/", "goroutine"},
		{"/debug/pprof/heap?debug=1", "heap profile"},
		{"/debug/pprof/goroutine?debug=1", "goroutine profile"},
		{"/debug/pprof/cmdline", ""},
	} {
		code, body := get(t, base+tt.path)
		if code != http.StatusOK || !strings.Contains(body, tt.want) {
			t.Errorf("debug listener: GET %s = %d, want 200 with %q:\n%.300s", tt.path, code, tt.want, body)
		}
		code, body = get(t, api+tt.path)
		if code == http.StatusOK || strings.Contains(body, "profile") {
			t.Errorf("API listener: GET %s = %d, want no profile there:\n%.300s", tt.path, code, body)
		}
	}
	if code, _ := get(t, base+"/v1/desks"); code != http.StatusNotFound {
		t.Errorf("debug listener: GET /v1/desks = %d, want 404 (it serves the profiles alone)", code)
	}
	d.terminate(t)
}

// TestNoDebugListenerByDefault: without debug_listen there is no debug
// listener, and the API still serves no profile.
func TestNoDebugListenerByDefault(t *testing.T) {
	t.Parallel()
	s := newE2ESetup(t, "")
	d := startInProcess(t, "deskd", s.Config, apiStart)
	api := d.waitReady(t)
	if n := d.count(logMessage(debugLine)); n != 0 {
		t.Errorf("%d debug listener lines without debug_listen, want none", n)
	}
	if code, _ := get(t, api+"/debug/pprof/"); code == http.StatusOK {
		t.Errorf("API listener: GET /debug/pprof/ = %d, want no profiles", code)
	}
	d.terminate(t)
}
