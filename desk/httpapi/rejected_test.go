package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/httpapi"
)

// rejectingDesks is a set of no desks with config rejections.
type rejectingDesks struct {
	*desk.Set
	rs []desk.ConfigRejection
}

func (r rejectingDesks) ConfigRejections() []desk.ConfigRejection { return r.rs }

func getJSON(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAPIConfigRejected: GET /v1/desks lists every current rejection
// (config_rejected, [] with none), and /healthz lists them but stays 200 "ok".
func TestAPIConfigRejected(t *testing.T) {
	since := time.Date(2026, 3, 2, 4, 32, 0, 0, time.UTC)
	rs := []desk.ConfigRejection{
		{ConfigRejected: desk.ConfigRejected{Since: since, File: "/etc/deskd/deskd.yaml", Field: "timezone", Reason: "unknown time zone"}},
		{ConfigRejected: desk.ConfigRejected{Since: since, File: "/etc/deskd/desks.d/fx.yaml", Field: "schedules[0].cron", Reason: "bad cron"}, Desk: "fx"},
	}
	for _, tt := range []struct {
		name string
		rs   []desk.ConfigRejection
	}{{"none", nil}, {"main file and fx", rs}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(httpapi.New(httpapi.Options{Desks: rejectingDesks{desk.NewSet(), tt.rs}}))
			defer srv.Close()

			code, body := getJSON(t, srv, "/v1/desks")
			var list httpapi.DesksResponse
			if err := json.Unmarshal([]byte(body), &list); err != nil || code != 200 {
				t.Fatalf("GET /v1/desks = %d %s (%v)", code, body, err)
			}
			if !strings.Contains(body, `"config_rejected": [`) || len(list.ConfigRejected) != len(tt.rs) {
				t.Fatalf("GET /v1/desks = %s: want config_rejected with %d entries", body, len(tt.rs))
			}
			for i, r := range tt.rs {
				if list.ConfigRejected[i] != r {
					t.Errorf("config_rejected[%d] = %+v, want %+v", i, list.ConfigRejected[i], r)
				}
			}
			if len(tt.rs) > 0 && !strings.Contains(body, `"desk": ""`) {
				t.Errorf("GET /v1/desks = %s: the main file's rejection must say desk \"\"", body)
			}

			code, body = getJSON(t, srv, "/healthz")
			var h httpapi.HealthResponse
			if err := json.Unmarshal([]byte(body), &h); err != nil || code != 200 || h.Status != "ok" || len(h.ConfigRejected) != len(tt.rs) {
				t.Errorf("GET /healthz = %d %s (%v): want 200 ok with %d config_rejected", code, body, err, len(tt.rs))
			}
		})
	}
}
