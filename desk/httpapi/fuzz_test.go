package httpapi_test

// Fuzz targets of the HTTP API's body decoders, through the handler (the
// decoders are not exported): POST /v1/desks/{desk}/triggers and
// POST /v1/desks/{desk}/pause (then .../resume) with fuzzed bodies, served
// by the API over a real desk on a fake clock (httpapitest), answered into
// an httptest.ResponseRecorder. The seed corpora are in
// testdata/fuzz/<FuzzName>/; `go test` runs them.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/triggers"
)

// fzAPI builds the API over one running desk "main" (the scripted model,
// a fake clock, its pause kept in its folder) for a fuzz target, and stops
// it when the target ends.
func fzAPI(f *testing.F, queueLimit int) (*httpapi.Server, *desk.Desk) {
	f.Helper()
	h := httpapitest.Start(f, httpapitest.Options{QueueLimit: queueLimit, PauseFile: true})
	return h.API, h.Desk
}

// fzServe serves one request and checks what every answer must be: not a
// 5xx, and a JSON object (an error one with a non-empty message).
func fzServe(t *testing.T, h http.Handler, method, path string, body []byte) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, "http://127.0.0.1"+path, bytes.NewReader(body)))
	if rec.Code >= 500 {
		t.Fatalf("%s %s with body %q = %d %s", method, path, body, rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s = %d with Content-Type %q", method, path, rec.Code, ct)
	}
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s = %d, not a JSON object: %q", method, path, rec.Code, rec.Body)
	}
	if rec.Code >= 400 {
		if msg, _ := out["error"].(string); strings.TrimSpace(msg) == "" || !utf8.ValidString(msg) {
			t.Fatalf("%s %s = %d without an error message: %s", method, path, rec.Code, rec.Body)
		}
	}
	return rec.Code, out
}

// FuzzAPIPostTrigger: POST /v1/desks/main/triggers with any body never
// panics and is never answered 5xx. A body DecodeRequest refuses is
// answered 400 with its message, one that is too large 413; a good one is
// queued (202), known already (200) or finds the queue full (429), under
// the id it names, and a queued one can be read back with its text.
func FuzzAPIPostTrigger(f *testing.F) {
	a, d := fzAPI(f, 1000)
	if _, _, err := d.Pause("fuzz", "no turn runs: the triggers stay queued"); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		code, out := fzServe(t, a, http.MethodPost, "/v1/desks/main/triggers", body)
		if len(body) > triggers.MaxBody {
			if code != http.StatusRequestEntityTooLarge {
				t.Fatalf("a body of %d bytes = %d, want 413", len(body), code)
			}
			return
		}
		want, err := triggers.DecodeRequest(body)
		if err != nil {
			if code != http.StatusBadRequest || out["error"] != err.Error() {
				t.Fatalf("refused body %q = %d %v, want 400 %q", body, code, out, err)
			}
			return
		}
		id, _ := out["id"].(string)
		switch {
		case code != http.StatusAccepted && code != http.StatusOK && code != http.StatusTooManyRequests:
			t.Fatalf("good body %q = %d %v, want 202, 200 or 429", body, code, out)
		case triggers.CheckID(id) != nil || want.ID != "" && id != want.ID:
			t.Fatalf("good body %q = %d with id %q", body, code, id)
		case code != http.StatusAccepted:
			return
		}
		code, got := fzServe(t, a, http.MethodGet, "/v1/desks/main/triggers/"+url.PathEscape(id), nil)
		if code != http.StatusOK || got["id"] != id || got["text"] != want.Text || got["state"] != string(triggers.StateQueued) ||
			got["kind"] != string(want.Kind) {
			t.Fatalf("trigger %q queued from %q reads back as %d %v", id, body, code, got)
		}
	})
}

// FuzzAPIPause: POST /v1/desks/main/pause, then .../resume, with any
// bodies never panics and is never answered 5xx: a body that is not the
// optional JSON object {"reason", "by"} is answered 400 and changes
// nothing; a good one pauses the desk with its reason and by (trimmed; by
// defaults to "api"), and the resume ends that pause.
func FuzzAPIPause(f *testing.F) {
	a, d := fzAPI(f, 10)
	f.Fuzz(func(t *testing.T, pause, resume []byte) {
		if d.Paused() != nil {
			t.Fatal("the desk is paused before the pause")
		}
		code, out := fzServe(t, a, http.MethodPost, "/v1/desks/main/pause", pause)
		want, ok := fzPauseBody(pause)
		if !ok {
			if code != fzRefusal(pause) || d.Paused() != nil {
				t.Fatalf("bad pause body %q = %d %v, paused %+v; want %d and no pause", pause, code, out, d.Paused(), fzRefusal(pause))
			}
			return
		}
		p := d.Paused()
		if code != http.StatusOK || p == nil || p.By != want.By || p.Reason != want.Reason {
			t.Fatalf("pause body %q = %d %v, paused %+v; want 200 and a pause by %q for %q", pause, code, out, p, want.By, want.Reason)
		}
		code, out = fzServe(t, a, http.MethodPost, "/v1/desks/main/resume", resume)
		if _, ok := fzPauseBody(resume); !ok {
			if code != fzRefusal(resume) || d.Paused() == nil {
				t.Fatalf("bad resume body %q = %d %v, paused %+v; want %d and still paused", resume, code, out, d.Paused(), fzRefusal(resume))
			}
			if _, err := d.Resume("fuzz"); err != nil {
				t.Fatal(err)
			}
			return
		}
		if code != http.StatusOK || out["resumed"] != true || d.Paused() != nil {
			t.Fatalf("resume body %q = %d %v, paused %+v; want 200 and resumed", resume, code, out, d.Paused())
		}
	})
}

// fzRefusal is the status a refused pause or resume body gets: 413 past
// httpapi.MaxPauseBody, else 400.
func fzRefusal(body []byte) int {
	if len(body) > httpapi.MaxPauseBody {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// fzPauseBody is what a pause or resume body asks for, decoded as the API
// documents it: empty, or one JSON object with only reason and by
// (strings, valid UTF-8) and nothing after it, the by defaulting to "api".
func fzPauseBody(body []byte) (httpapi.PauseRequest, bool) {
	var req httpapi.PauseRequest
	if len(body) > httpapi.MaxPauseBody {
		return req, false
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if !utf8.Valid(body) {
			return req, false
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return req, false
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return req, false
		}
	}
	req.Reason, req.By = strings.TrimSpace(req.Reason), strings.TrimSpace(req.By)
	if req.By == "" {
		req.By = "api"
	}
	return req, true
}
