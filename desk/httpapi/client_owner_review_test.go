package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/triggers"
)

// TestOnOwnerDoesNotHandTheTokenToAnyAddress: the 421's addr is the
// owner's value in the KV bucket DESKD_OWNERS, which anybody with write
// access to that bucket (or to NATS, without per-bucket permissions)
// sets. A client must not send its bearer token to an address nothing
// but that value vouches for. Here the addr names a server of "anybody":
// it must receive no request carrying the token.
func TestOnOwnerDoesNotHandTheTokenToAnyAddress(t *testing.T) {
	var got []string
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"id":"f1"}`))
	}))
	defer evil.Close()
	addr := httpapitest.HostPort(evil.URL)
	sb := httpapitest.StartStandby(t, "a", &addr)
	c, err := httpapi.Dial(sb.URL)
	if err != nil {
		t.Fatal(err)
	}
	c.Token = "tok"
	_, _ = c.OnOwner(func(at *httpapi.Client) error {
		_, err := at.PostTrigger(t.Context(), "main", triggers.Request{Text: "plan?", ID: "f1", Source: "cli"})
		return err
	})
	for _, h := range got {
		if h == "Bearer tok" {
			t.Fatalf("the client sent its token to %s, an address only the KV value named", evil.URL)
		}
	}
}
