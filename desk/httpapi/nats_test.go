package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestNATSStatusInHealthAndDesks: with NATS configured and away,
// GET /healthz stays 200 and "ok" and says so in its nats detail, as does
// GET /v1/desks; without NATS neither has a nats field.
func TestNATSStatusInHealthAndDesks(t *testing.T) {
	since := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)
	down := &httpapi.NATSStatus{State: "reconnecting", Since: since, Error: "connection refused"}
	h := httpapitest.Start(t, httpapitest.Options{NATS: func() *httpapi.NATSStatus { return down }})
	code, _, body := h.Call("GET", "/healthz", "")
	if code != http.StatusOK {
		t.Fatalf("GET /healthz with NATS away: %d %s, want 200", code, body)
	}
	hr := httpapitest.Decode[httpapi.HealthResponse](t, body)
	if hr.Status != "ok" || hr.NATS == nil || hr.NATS.Connected || hr.NATS.State != "reconnecting" || !hr.NATS.Since.Equal(since) || hr.NATS.Error != "connection refused" {
		t.Errorf("healthz = %s, want status ok and nats reconnecting since %v with the error", body, since)
	}
	code, _, body = h.Call("GET", "/v1/desks", "")
	dr := httpapitest.Decode[httpapi.DesksResponse](t, body)
	if code != http.StatusOK || dr.NATS == nil || dr.NATS.State != "reconnecting" {
		t.Errorf("GET /v1/desks = %d %s, want the nats state", code, body)
	}

	plain := httpapitest.Start(t, httpapitest.Options{})
	for _, path := range []string{"/healthz", "/v1/desks"} {
		if _, _, body := plain.Call("GET", path, ""); strings.Contains(body, `"nats"`) {
			t.Errorf("GET %s without NATS: %s, want no nats field", path, body)
		}
	}
}
