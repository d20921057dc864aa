package httpapi_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestAPIHealthzLowSpace: while the state folder's free space is below
// the threshold, before any write fails, GET /healthz answers 503
// degraded with the desk's low_space and what is left, and the desk's
// status carries it; once the space is back, 200 ok.
func TestAPIHealthzLowSpace(t *testing.T) {
	const mib = 1 << 20
	var free atomic.Uint64
	free.Store(100 * mib)
	p := &desk.SpaceProbe{Dir: "/var/lib/deskd", Min: 256 * mib,
		Statfs: func(string) (uint64, uint64, error) { return free.Load(), 1 << 40, nil }}
	h := httpapitest.Start(t, httpapitest.Options{Space: p})
	p.Clock, p.Bus = h.Clock, h.Bus
	p.Probe()
	const want = "low space: 100 MiB free on /var/lib/deskd, below 256 MiB"
	code, _, body := h.Call("GET", "/healthz", "")
	hr := httpapitest.Decode[httpapi.HealthResponse](t, body)
	if st := hr.Storage["main"]; code != http.StatusServiceUnavailable || hr.Status != "degraded" || st == nil || !st.LowSpace ||
		st.FreeBytes != 100*mib || st.Error != want {
		t.Errorf("GET /healthz with 100 MiB free: %d %s, want 503 degraded, main's low_space %q", code, body, want)
	}
	code, _, body = h.Call("GET", "/v1/desks/main", "")
	if st := httpapitest.Decode[desk.Status](t, body); code != http.StatusOK || st.Storage == nil || !st.Storage.LowSpace {
		t.Errorf("GET /v1/desks/main with 100 MiB free: %d %s, want low_space in its storage", code, body)
	}
	free.Store(1024 * mib)
	p.Probe()
	if code, _, body := h.Call("GET", "/healthz", ""); code != http.StatusOK {
		t.Errorf("GET /healthz once the space is back: %d %s, want 200", code, body)
	}
}
