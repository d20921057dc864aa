package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// BenchmarkTriggerPost is one POST /v1/desks/main/triggers of a new market
// event, served in process (no socket), to a paused desk so that no turn
// runs beside it: the API's part of a trigger plus the ledger's durable
// append. BenchmarkTriggerGet is one GET of a queued trigger's status.
func BenchmarkTriggerPost(b *testing.B) {
	h := httpapitest.Start(b, httpapitest.Options{QueueLimit: 1 << 22, Token: "tok"})
	if code, _, body := h.Call("POST", "/v1/desks/main/pause", `{}`, "Authorization", "Bearer tok"); code != http.StatusOK {
		b.Fatalf("pause: %d %s", code, body)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		req := httptest.NewRequest("POST", "/v1/desks/main/triggers",
			strings.NewReader(`{"id":"b-`+strconv.Itoa(n)+`","kind":"market","text":"NIFTY 24,310 (+0.4%) at 10:15"}`))
		req.Host = "127.0.0.1"
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.API.ServeHTTP(w, req)
		if w.Code != http.StatusAccepted {
			b.Fatalf("POST: %d %s", w.Code, w.Body)
		}
	}
}

func BenchmarkTriggerGet(b *testing.B) {
	h := httpapitest.Start(b, httpapitest.Options{Token: "tok"})
	h.Call("POST", "/v1/desks/main/pause", `{}`, "Authorization", "Bearer tok")
	if code, _, body := h.Call("POST", "/v1/desks/main/triggers", `{"id":"g","text":"NIFTY 24,310"}`, "Authorization", "Bearer tok"); code != http.StatusAccepted {
		b.Fatalf("POST: %d %s", code, body)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "/v1/desks/main/triggers/g", nil)
		req.Host = "127.0.0.1"
		req.Header.Set("Authorization", "Bearer tok")
		w := httptest.NewRecorder()
		h.API.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("GET: %d %s", w.Code, w.Body)
		}
	}
}
