package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// TestOnOwnerDoesNotHandTheTokenToAnyAddress: the 421's addr is the
// owner's value in the KV bucket DESKD_OWNERS, which anybody with write
// access to that bucket (or to NATS, without per-bucket permissions)
// sets. A client must not send its bearer token to an address nothing
// but that value vouches for. Here the addr names a server of "anybody":
// it must receive no request carrying the token.
func TestOnOwnerDoesNotHandTheTokenToAnyAddress(t *testing.T) {
	evil := httpapitest.StartSpy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"id":"f1"}`))
	}))
	_, _ = postThroughStandby(t, "a", httpapitest.HostPort(evil.URL), "tok", "f1")
	for _, h := range evil.Requests() {
		if h == "Bearer tok" {
			t.Fatalf("the client sent its token to %s, an address only the KV value named", evil.URL)
		}
	}
}
