package httpapi_test

// Tests of the proof a host reached through a 421 gives that it holds the
// client's token (GET /v1/proof), before the client sends it there; the
// reviewer's test of the same finding is client_owner_review_test.go.

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/triggers"
)

// proofNonce is a nonce of ProofNonceLen hex digits.
var proofNonce = strings.Repeat("0a", httpapi.ProofNonceLen/2)

// postThroughStandby posts trigger id through a standby that names host
// owner at addr, with token, and returns the client OnOwner ended at and
// its error.
func postThroughStandby(t *testing.T, owner, addr, token, id string) (*httpapi.Client, error) {
	t.Helper()
	c, _ := dialStandby(t, owner, addr, token)
	return postOnOwner(t, c, triggers.Request{Text: "plan?", ID: id, Source: "cli"})
}

// checkOnlyTheProofAsked fails the test unless spy, the host named, got
// one request, without the client's token: the proof's.
func checkOnlyTheProofAsked(t *testing.T, spy *httpapitest.Spy, named string) {
	t.Helper()
	if tokens := spy.Requests(); len(tokens) != 1 || tokens[0] != "" {
		t.Errorf("%s got Authorization %q; want one request (the proof's), without the token", named, tokens)
	}
}

// TestProofAnswersForTheTokensOfThisDeskd: GET /v1/proof, without a
// credential, answers the HMAC of the nonce under the token whose id is
// asked (the operator's or a feed's) and this host's cluster name; an id
// of no token is 403, a bad nonce or id 400, a rebound Host 421; wrong ids
// count for the throttle like wrong tokens.
func TestProofAnswersForTheTokensOfThisDeskd(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "op-tok", FeedToken: "feed-tok", Host: "a"})
	for _, tok := range []string{"op-tok", "feed-tok"} {
		code, _, body := h.Call(http.MethodGet, httpapi.PathProof+"?nonce="+proofNonce, "", httpapi.HeaderTokenID, httpapi.TokenID(tok))
		got := httpapitest.Decode[httpapi.ProofResponse](t, body)
		if code != http.StatusOK || got != (httpapi.ProofResponse{Host: "a", Proof: httpapi.ProofOf(tok, proofNonce, "a")}) || strings.Contains(body, tok) {
			t.Errorf("proof of %s = %d %s, want 200 host a and ProofOf(token, nonce, a), without the token", tok, code, body)
		}
	}
	for _, tt := range []struct {
		name, nonce, id string
		status          int
	}{
		{"a token of none", proofNonce, httpapi.TokenID("other"), http.StatusForbidden},
		{"a short nonce", proofNonce[1:], httpapi.TokenID("op-tok"), http.StatusBadRequest},
		{"a long nonce", proofNonce + "00", httpapi.TokenID("op-tok"), http.StatusBadRequest},
		{"a nonce not hex", strings.Repeat("zz", httpapi.ProofNonceLen/2), httpapi.TokenID("op-tok"), http.StatusBadRequest},
		{"no token id", proofNonce, "", http.StatusBadRequest},
		{"the whole digest as id", proofNonce, httpapi.TokenID("op-tok") + "00", http.StatusBadRequest},
	} {
		if code, _, body := h.Call(http.MethodGet, httpapi.PathProof+"?nonce="+tt.nonce, "", httpapi.HeaderTokenID, tt.id); code != tt.status || strings.Contains(body, "proof\"") {
			t.Errorf("%s: %d %s, want %d and no proof", tt.name, code, body, tt.status)
		}
	}
	if code, _, body := h.Call(http.MethodGet, httpapi.PathProof+"?nonce="+proofNonce, "", "Host", "rebind.evil.example", httpapi.HeaderTokenID, httpapi.TokenID("op-tok")); code != http.StatusMisdirectedRequest {
		t.Errorf("a rebound Host = %d %s, want 421 (the Host rule)", code, body)
	}
	for range httpapi.MaxTokenFailures {
		h.Call(http.MethodGet, httpapi.PathProof+"?nonce="+proofNonce, "", httpapi.HeaderTokenID, httpapi.TokenID("guess"))
	}
	if code, hdr, body := h.Call(http.MethodGet, httpapi.PathProof+"?nonce="+proofNonce, "", httpapi.HeaderTokenID, httpapi.TokenID("op-tok")); code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Errorf("after %d wrong ids the right one = %d %s, want 429 with Retry-After", httpapi.MaxTokenFailures+1, code, body)
	}
}

// TestOnOwnerFollowsAnOwnerThatProvesTheToken: the real server as the
// owner, with the client's token and the cluster name the 421 names,
// proves it and then takes the trigger (with the token), and answers a
// read followed through the standby.
func TestOnOwnerFollowsAnOwnerThatProvesTheToken(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "tok", Host: "a"})
	at, err := postThroughStandby(t, "a", httpapitest.HostPort(h.URL()), "tok", "p1")
	if err != nil || at.URL() != h.URL() {
		t.Fatalf("OnOwner to an owner that proves the token = at %s, %v; want queued at %s", at.URL(), err, h.URL())
	}
	if code, _, body := h.Call(http.MethodGet, "/v1/desks/main/triggers/p1", "", "Authorization", "Bearer tok"); code != http.StatusOK {
		t.Errorf("p1 on the owner = %d %s, want it queued there", code, body)
	}
	c, _ := dialStandby(t, "a", httpapitest.HostPort(h.URL()), "tok")
	if st, err := c.WaitTrigger(t.Context(), "main", "p1", 0); err != nil || st.ID != "p1" {
		t.Errorf("a read through the standby = %+v, %v; want the owner's p1", st, err)
	}
}

// TestOnOwnerRefusesAnOwnerThatDoesNotProve: an owner whose token is
// another, or that proves for another host than the 421 named, is not
// sent the request: the error names its address and why, and it never
// sees the client's token.
func TestOnOwnerRefusesAnOwnerThatDoesNotProve(t *testing.T) {
	for _, tt := range []struct {
		name, token, host, why string
	}{
		{"another token", "other", "a", "GET /v1/proof answered 403"},
		{"another host", "tok", "b", `it proves for host "b", not for host "a"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := httpapitest.Start(t, httpapitest.Options{Token: tt.token, Host: tt.host})
			spy := httpapitest.StartSpy(t, h.API)
			_, err := postThroughStandby(t, "a", httpapitest.HostPort(spy.URL), "tok", "r1")
			if err == nil || !strings.Contains(err.Error(), "host a at "+spy.URL+", as a 421 named it, does not prove it holds this client's token: not following the 421") ||
				!strings.Contains(err.Error(), tt.why) {
				t.Fatalf("OnOwner to an owner of %s = %v; want it not followed, naming %s and %q", tt.name, err, spy.URL, tt.why)
			}
			checkOnlyTheProofAsked(t, spy, "the owner")
			if h.Desk.Status().Exchanges != 0 {
				t.Errorf("the owner ran a turn")
			}
		})
	}
}

// TestOnOwnerNeverFollowsHTTPSToHTTP: a 421 of an https host naming an
// http:// address is not followed (the token would go in cleartext), with
// or without a token; a host:port from it is reached over https.
func TestOnOwnerNeverFollowsHTTPSToHTTP(t *testing.T) {
	if _, err := httpapi.OwnerURL("https://a.internal:443", "http://b.internal:7317"); err == nil || !strings.Contains(err.Error(), "cleartext") {
		t.Errorf("OwnerURL(https host, http address) = %v, want refused: cleartext", err)
	}
	if got, err := httpapi.OwnerURL("https://a.internal:443", "b.internal:7317"); err != nil || got != "https://b.internal:7317" {
		t.Errorf("OwnerURL(https host, host:port) = %q, %v; want https://b.internal:7317", got, err)
	}
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the downgrade was followed: %s %s (Authorization %q)", r.Method, r.URL, r.Header.Get("Authorization"))
	}))
	defer evil.Close()
	for _, token := range []string{"tok", ""} {
		c := httpapitest.Dial(t, "https://a.internal:8443", token)
		calls := 0
		_, err := c.OnOwner(func(at *httpapi.Client) error {
			calls++
			if calls > 1 {
				_, err := at.PostTrigger(t.Context(), "main", triggers.Request{Text: "x", ID: "d1"})
				return err
			}
			return &httpapi.Error{Status: http.StatusMisdirectedRequest, Message: "desk \"main\" runs on host a", Owner: "a", Addr: evil.URL}
		})
		if err == nil || !strings.Contains(err.Error(), "not followed") || !strings.Contains(err.Error(), "cleartext") || calls != 1 {
			t.Errorf("token %q: a 421 of an https host naming %s = %v after %d calls; want it not followed, saying cleartext", token, evil.URL, err, calls)
		}
	}
}

// TestOnOwnerRefusesAReplayedProof: a host that answers with a proof of
// the token made for another nonce (one seen before) and the owner's name
// does not prove it holds the token now: it is not sent the request.
func TestOnOwnerRefusesAReplayedProof(t *testing.T) {
	replayer := httpapitest.StartSpy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"host": "a", "proof": "` + httpapi.ProofOf("tok", proofNonce, "a") + `"}`))
	}))
	_, err := postThroughStandby(t, "a", httpapitest.HostPort(replayer.URL), "tok", "r2")
	if err == nil || !strings.Contains(err.Error(), "not following the 421: its proof is not this token's for the nonce sent") {
		t.Errorf("OnOwner to a host replaying a proof = %v, want it not followed: the proof is not for the nonce sent", err)
	}
	checkOnlyTheProofAsked(t, replayer, "the replayer")
}
