package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/triggers"
)

// TestAPIPauseResume: POST .../pause and .../resume; a paused desk queues
// its triggers and the status says who paused it and why; resuming runs
// them.
func TestAPIPauseResume(t *testing.T) {
	h := newAPIHarness(t, apiHarnessOptions{})
	code, _, body := h.call("POST", "/v1/desks/main/pause", `{"reason": "risk check", "by": "asha"}`)
	p := decode[pauseResponse](t, body)
	if code != 200 || p.Desk != "main" || p.Paused.By != "asha" || p.Paused.Reason != "risk check" || p.Already ||
		!p.Paused.At.Equal(h.clk.Now()) {
		t.Fatalf("POST pause = %d %s", code, body)
	}
	code, _, body = h.call("GET", "/v1/desks/main", "")
	st := decode[desk.Status](t, body)
	if code != 200 || st.State != "paused" || st.Paused == nil || st.Paused.By != "asha" || st.Paused.Reason != "risk check" {
		t.Errorf("GET desk while paused = %d %s", code, body)
	}
	if code, _, body := h.call("POST", "/v1/desks/main/triggers", `{"text": "x", "id": "a"}`); code != 202 {
		t.Fatalf("POST trigger to a paused desk that queues = %d %s", code, body)
	}
	if s, _ := h.desk.Trigger("a"); s.State != triggers.StateQueued {
		t.Errorf("Trigger(a) while paused = %+v", s)
	}
	code, _, body = h.call("POST", "/v1/desks/main/pause", "")
	if again := decode[pauseResponse](t, body); code != 200 || !again.Already || again.Paused.By != "asha" {
		t.Errorf("POST pause again = %d %s", code, body)
	}
	code, _, body = h.call("POST", "/v1/desks/main/resume", `{"by": "ravi"}`)
	r := decode[resumeResponse](t, body)
	if code != 200 || !r.Resumed || r.Was == nil || r.Was.By != "asha" || r.Queued != 1 {
		t.Fatalf("POST resume = %d %s", code, body)
	}
	code, _, body = h.call("GET", "/v1/desks/main/triggers/a?wait=10s", "")
	if s := decode[desk.TriggerStatus](t, body); code != 200 || s.State != triggers.StateAnswered {
		t.Errorf("a after resume = %d %s", code, body)
	}
	code, _, body = h.call("POST", "/v1/desks/main/resume", "")
	if r := decode[resumeResponse](t, body); code != 200 || r.Resumed {
		t.Errorf("POST resume of a desk not paused = %d %s", code, body)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/desks/main/pause", `{"reason": 3}`},
		{"/v1/desks/main/pause", `{"why": "x"}`},
	} {
		if code, _, body := h.call("POST", c.path, c.body); code != 400 {
			t.Errorf("POST %s %s = %d %s, want 400", c.path, c.body, code, body)
		}
	}
	if code, _, _ := h.call("POST", "/v1/desks/nope/pause", ""); code != 404 {
		t.Errorf("POST pause of an unknown desk = %d, want 404", code)
	}
}

// TestAPIPauseBodies: a pause or resume body is one JSON object of at
// most 64 KiB, refused in words: trailing data (400), an oversized body
// (413, as POST triggers answers), a field of the wrong type or not UTF-8
// (400, naming the field); nothing is paused.
func TestAPIPauseBodies(t *testing.T) {
	h := newAPIHarness(t, apiHarnessOptions{})
	tests := []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"trailing data", "/v1/desks/main/pause", `{"reason": "x"} {"by": "mallory"}`, 400, "more than one value"},
		{"trailing garbage", "/v1/desks/main/resume", `{"by": "asha"}garbage`, 400, "more than one value"},
		{"too large", "/v1/desks/main/pause", `{"reason": "` + strings.Repeat("x", 70<<10) + `"}`, 413, "larger than 65536 bytes"},
		{"a number", "/v1/desks/main/pause", `{"reason": 3}`, 400, "field reason: want a string, got a number"},
		{"not an object", "/v1/desks/main/pause", `["x"]`, 400, "want a JSON object, got an array"},
		{"not UTF-8", "/v1/desks/main/pause", "{\"by\": \"asha\xff\"}", 400, "field by: not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, body := h.call("POST", tt.path, tt.body)
			if code != tt.code || !strings.Contains(body, tt.want) || strings.Contains(body, "main.pauseRequest") {
				t.Errorf("POST %s = %d %s, want %d saying %q", tt.path, code, body, tt.code, tt.want)
			}
			if h.desk.Paused() != nil {
				t.Errorf("the desk was paused by a refused body: %+v", h.desk.Paused())
			}
		})
	}
}

// TestAPIPauseNeedsToken: pause and resume are mutations.
func TestAPIPauseNeedsToken(t *testing.T) {
	h := newAPIHarness(t, apiHarnessOptions{token: "tok"})
	if code, _, _ := h.call("POST", "/v1/desks/main/pause", ""); code != 401 {
		t.Errorf("POST pause without the token = %d, want 401", code)
	}
	if code, _, _ := h.call("POST", "/v1/desks/main/pause", "", "Authorization", "Bearer tok"); code != 200 {
		t.Errorf("POST pause with the token = %d, want 200", code)
	}
	if code, _, _ := h.call("POST", "/v1/desks/main/resume", ""); code != 401 {
		t.Errorf("POST resume without the token = %d, want 401", code)
	}
}

// TestAPIPausedRefuses: a paused desk with paused_triggers: refuse
// answers 423 with who paused it and why, and queues nothing.
func TestAPIPausedRefuses(t *testing.T) {
	h := newAPIHarness(t, apiHarnessOptions{refuse: true})
	if code, _, body := h.call("POST", "/v1/desks/main/pause", `{"reason": "broker outage"}`); code != 200 {
		t.Fatalf("POST pause = %d %s", code, body)
	}
	code, _, body := h.call("POST", "/v1/desks/main/triggers", `{"text": "x", "id": "r"}`)
	if code != 423 || !strings.Contains(body, "broker outage") || !strings.Contains(body, "by api") {
		t.Errorf("POST trigger to a paused desk that refuses = %d %s, want 423 naming the pause", code, body)
	}
	if _, ok := h.desk.Trigger("r"); ok {
		t.Error("the refused trigger is in the ledger")
	}
	if code, _, body := h.call("GET", "/v1/desks/main", ""); !strings.Contains(body, `"paused_triggers": "refuse"`) {
		t.Errorf("GET desk = %d %s, want paused_triggers refuse", code, body)
	}
}

// TestAPIShuttingDown: once shutdown begins, mutations and /healthz are
// answered 503; reads still work.
func TestAPIShuttingDown(t *testing.T) {
	h := newAPIHarness(t, apiHarnessOptions{})
	if code, _, _ := h.call("GET", "/healthz", ""); code != 200 {
		t.Fatalf("GET /healthz = %d", code)
	}
	h.srv.Config.Handler.(*api).Refuse()
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/healthz", ""},
		{"POST", "/v1/desks/main/triggers", `{"text": "x"}`},
		{"POST", "/v1/desks/main/pause", ""},
		{"POST", "/v1/desks/main/rollover", ""},
	} {
		code, _, body := h.call(c.method, c.path, c.body)
		if code != 503 || strings.TrimSpace(body) != "{\n  \"error\": \"deskd is shutting down\"\n}" {
			t.Errorf("%s %s while shutting down = %d %s, want 503 {\"error\": \"deskd is shutting down\"}", c.method, c.path, code, body)
		}
	}
	if code, _, _ := h.call("GET", "/v1/desks", ""); code != 200 {
		t.Errorf("GET /v1/desks while shutting down = %d, want 200", code)
	}
	if h.desk.Status().QueueDepth != 0 {
		t.Error("a trigger was queued while shutting down")
	}
}

// TestAPIConfigDiff: GET /v1/config/diff answers what Check says.
func TestAPIConfigDiff(t *testing.T) {
	want := desk.ConfigCheck{Config: "/etc/deskd/deskd.yaml", Changes: []desk.ConfigChange{{Desk: "main", Field: "model", What: "desk main: model changed from a to b"}}, Problems: []string{}}
	a := newAPI(apiOptions{Check: func() desk.ConfigCheck { return want }})
	rec := httpGet(t, a, "/v1/config/diff")
	if rec.code != 200 {
		t.Fatalf("GET /v1/config/diff = %d %s", rec.code, rec.body)
	}
	got := decode[desk.ConfigCheck](t, rec.body)
	if got.Config != want.Config || len(got.Changes) != 1 || got.Changes[0] != want.Changes[0] {
		t.Errorf("GET /v1/config/diff = %s", rec.body)
	}
	if rec := httpGet(t, newAPI(apiOptions{}), "/v1/config/diff"); rec.code != 501 {
		t.Errorf("GET /v1/config/diff without Check = %d, want 501", rec.code)
	}
}

// TestClientPauseResume: deskd pause and deskd resume, as the CLI runs
// them; by is the user's login name; status shows the pause.
func TestClientPauseResume(t *testing.T) {
	h := newAPIHarness(t, apiHarnessOptions{token: "tok"})
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(t.Context(), append(args, "--addr", h.srv.URL, "--token-file", tokenFile), &out, &errb)
		return code, out.String(), errb.String()
	}
	me := operator()
	code, out, errs := cli("pause", "main", "--reason", "risk check")
	if code != 0 || !strings.Contains(out, "desk main paused by "+me+" since ") || !strings.HasSuffix(out, ": risk check\n") {
		t.Fatalf("pause = %d\n%s%s", code, out, errs)
	}
	if p := h.desk.Paused(); p == nil || p.By != me || p.Reason != "risk check" {
		t.Errorf("the desk's pause = %+v, want by %s", p, me)
	}
	code, out, errs = cli("status")
	if code != 0 || !strings.Contains(out, "paused") || !strings.Contains(out, "desk main is paused by "+me) ||
		!strings.Contains(out, "risk check") || !strings.Contains(out, "queued until deskd resume main") {
		t.Errorf("status while paused = %d\n%s%s", code, out, errs)
	}
	code, out, _ = cli("pause", "main", "--by", "ravi")
	if code != 0 || !strings.Contains(out, "desk main was already paused by "+me) {
		t.Errorf("pause again = %d %s", code, out)
	}
	code, out, errs = cli("resume", "main")
	if code != 0 || !strings.Contains(out, "desk main resumed (it was paused by "+me) {
		t.Errorf("resume = %d\n%s%s", code, out, errs)
	}
	if h.desk.Paused() != nil {
		t.Error("the desk is still paused after deskd resume")
	}
	code, out, _ = cli("resume", "main")
	if code != 0 || !strings.Contains(out, "desk main was not paused") {
		t.Errorf("resume again = %d %s", code, out)
	}
	code, _, errs = cli("pause", "nope")
	if code != 1 || !strings.Contains(errs, "unknown desk") {
		t.Errorf("pause of an unknown desk = %d %s", code, errs)
	}
}

// TestCheckConfigDiffWithoutDaemon: check-config --diff says clearly that
// no deskd runs, and fails.
func TestCheckConfigDiffWithoutDaemon(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"check-config", "--diff", "--addr", "127.0.0.1:" + freePortString(t)}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "no running deskd answered at http://127.0.0.1:") ||
		!strings.Contains(errb.String(), "without --diff checks the files alone") {
		t.Errorf("check-config --diff without a daemon = %d\n%s%s", code, out.String(), errb.String())
	}
}

type recorded struct {
	code int
	body string
}

// httpGet serves GET path with h.
func httpGet(t *testing.T, h http.Handler, path string) recorded {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return recorded{rec.Code, rec.Body.String()}
}

// freePortString returns a TCP port on 127.0.0.1 that nothing listens on.
func freePortString(t *testing.T) string { return strconv.Itoa(pickFreePort(t)) }
