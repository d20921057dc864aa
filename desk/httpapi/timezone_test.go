package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestAPIDesksSayTheirClockAndZone: GET /v1/desks names the trading time
// zone, and every status says when it was taken on deskd's clock, so a
// console or a terminal measures elapsed times on deskd's clock and shows
// instants in the trading zone, whatever its own.
func TestAPIDesksSayTheirClockAndZone(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	code, _, body := h.Call(http.MethodGet, "/v1/desks", "")
	if code != http.StatusOK {
		t.Fatalf("GET /v1/desks = %d %s", code, body)
	}
	out := httpapitest.Decode[httpapi.DesksResponse](t, body)
	if out.TimeZone != "Asia/Kolkata" {
		t.Errorf("time_zone = %q, want Asia/Kolkata", out.TimeZone)
	}
	if len(out.Desks) != 1 || !out.Desks[0].AsOf.Equal(h.Clock.Now()) {
		t.Errorf("desks = %+v, want one whose as_of is deskd's clock, %s", out.Desks, h.Clock.Now())
	}
}
