package httpapi_test

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/triggers"
)

// TestAPIPauseResume: POST .../pause and .../resume; a paused desk queues
// its triggers and the status says who paused it and why; resuming runs
// them.
func TestAPIPauseResume(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	code, _, body := h.Call("POST", "/v1/desks/main/pause", `{"reason": "risk check", "by": "asha"}`)
	p := httpapitest.Decode[httpapi.PauseResponse](t, body)
	if code != 200 || p.Desk != "main" || p.Paused.By != "asha" || p.Paused.Reason != "risk check" || p.Already ||
		!p.Paused.At.Equal(h.Clock.Now()) {
		t.Fatalf("POST pause = %d %s", code, body)
	}
	code, _, body = h.Call("GET", "/v1/desks/main", "")
	st := httpapitest.Decode[desk.Status](t, body)
	if code != 200 || st.State != "paused" || st.Paused == nil || st.Paused.By != "asha" || st.Paused.Reason != "risk check" {
		t.Errorf("GET desk while paused = %d %s", code, body)
	}
	if code, _, body := h.Call("POST", "/v1/desks/main/triggers", `{"text": "x", "id": "a"}`); code != 202 {
		t.Fatalf("POST trigger to a paused desk that queues = %d %s", code, body)
	}
	if s, _ := h.Desk.Trigger("a"); s.State != triggers.StateQueued {
		t.Errorf("Trigger(a) while paused = %+v", s)
	}
	code, _, body = h.Call("POST", "/v1/desks/main/pause", "")
	if again := httpapitest.Decode[httpapi.PauseResponse](t, body); code != 200 || !again.Already || again.Paused.By != "asha" {
		t.Errorf("POST pause again = %d %s", code, body)
	}
	code, _, body = h.Call("POST", "/v1/desks/main/resume", `{"by": "ravi"}`)
	r := httpapitest.Decode[httpapi.ResumeResponse](t, body)
	if code != 200 || !r.Resumed || r.Was == nil || r.Was.By != "asha" || r.Queued != 1 {
		t.Fatalf("POST resume = %d %s", code, body)
	}
	code, _, body = h.Call("GET", "/v1/desks/main/triggers/a?wait=10s", "")
	if s := httpapitest.Decode[desk.TriggerStatus](t, body); code != 200 || s.State != triggers.StateAnswered {
		t.Errorf("a after resume = %d %s", code, body)
	}
	code, _, body = h.Call("POST", "/v1/desks/main/resume", "")
	if r := httpapitest.Decode[httpapi.ResumeResponse](t, body); code != 200 || r.Resumed {
		t.Errorf("POST resume of a desk not paused = %d %s", code, body)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/desks/main/pause", `{"reason": 3}`},
		{"/v1/desks/main/pause", `{"why": "x"}`},
	} {
		if code, _, body := h.Call("POST", c.path, c.body); code != 400 {
			t.Errorf("POST %s %s = %d %s, want 400", c.path, c.body, code, body)
		}
	}
	if code, _, _ := h.Call("POST", "/v1/desks/nope/pause", ""); code != 404 {
		t.Errorf("POST pause of an unknown desk = %d, want 404", code)
	}
}

// TestAPIPauseBodies: a pause or resume body is one JSON object of at
// most 64 KiB, refused in words: trailing data (400), an oversized body
// (413, as POST triggers answers), a field of the wrong type or not UTF-8
// (400, naming the field); nothing is paused.
func TestAPIPauseBodies(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
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
			code, _, body := h.Call("POST", tt.path, tt.body)
			if code != tt.code || !strings.Contains(body, tt.want) || strings.Contains(body, "PauseRequest") {
				t.Errorf("POST %s = %d %s, want %d saying %q", tt.path, code, body, tt.code, tt.want)
			}
			if h.Desk.Paused() != nil {
				t.Errorf("the desk was paused by a refused body: %+v", h.Desk.Paused())
			}
		})
	}
}

// TestAPIPauseNeedsToken: pause and resume are mutations.
func TestAPIPauseNeedsToken(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "tok"})
	if code, _, _ := h.Call("POST", "/v1/desks/main/pause", ""); code != 401 {
		t.Errorf("POST pause without the token = %d, want 401", code)
	}
	if code, _, _ := h.Call("POST", "/v1/desks/main/pause", "", "Authorization", "Bearer tok"); code != 200 {
		t.Errorf("POST pause with the token = %d, want 200", code)
	}
	if code, _, _ := h.Call("POST", "/v1/desks/main/resume", ""); code != 401 {
		t.Errorf("POST resume without the token = %d, want 401", code)
	}
}

// TestAPIPausedRefuses: a paused desk with paused_triggers: refuse
// answers 423 with who paused it and why, and queues nothing.
func TestAPIPausedRefuses(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{RefusePaused: true})
	if code, _, body := h.Call("POST", "/v1/desks/main/pause", `{"reason": "broker outage"}`); code != 200 {
		t.Fatalf("POST pause = %d %s", code, body)
	}
	code, _, body := h.Call("POST", "/v1/desks/main/triggers", `{"text": "x", "id": "r"}`)
	if code != 423 || !strings.Contains(body, "broker outage") || !strings.Contains(body, "by api") {
		t.Errorf("POST trigger to a paused desk that refuses = %d %s, want 423 naming the pause", code, body)
	}
	if _, ok := h.Desk.Trigger("r"); ok {
		t.Error("the refused trigger is in the ledger")
	}
	if code, _, body := h.Call("GET", "/v1/desks/main", ""); !strings.Contains(body, `"paused_triggers": "refuse"`) {
		t.Errorf("GET desk = %d %s, want paused_triggers refuse", code, body)
	}
}
