package httpapi

// The proof a host gives that it holds a client's token, without the
// client sending it (GET /v1/proof): before the client sends its token
// to a host it reached only through a 421 (whose address is a value of
// the KV bucket DESKD_OWNERS, which anybody with write access to it
// sets), it asks that host for the HMAC of a fresh nonce under the token
// (client_owner.go), and goes on only when the answer matches.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
)

// The proof's route and its inputs.
const (
	// PathProof is the path of the proof (GET, no credential).
	PathProof = "/v1/proof"
	// patternProof is its mux pattern.
	patternProof = "GET " + PathProof
	// HeaderTokenID names the token whose proof is asked for: its
	// TokenID.
	HeaderTokenID = "Deskd-Token-Id"
	// ProofNonceLen is the length of ?nonce=: 64 hex digits (32 random
	// bytes), no more and no less.
	ProofNonceLen = 64
	// tokenIDLen is the bytes of SHA-256 a TokenID keeps.
	tokenIDLen = 16
)

// ProofResponse is the answer of GET /v1/proof: the host that proves
// and its proof.
type ProofResponse struct {
	// Host is this host's name in its cluster (cluster.host); empty
	// without a cluster.
	Host string `json:"host"`
	// Proof is ProofOf(the token, the nonce, Host), in hex.
	Proof string `json:"proof"`
}

// TokenID names a token without giving it away: the hex of the first 16
// bytes of its SHA-256, sent in the header Deskd-Token-Id.
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:tokenIDLen])
}

// ProofOf is the proof that host holds token, for nonce: the hex of
// HMAC-SHA256(token, "deskd-proof\x00" + nonce + "\x00" + host).
func ProofOf(token, nonce, host string) string {
	return hex.EncodeToString(proofMAC(token, nonce, host))
}

// proofMAC is ProofOf's bytes.
func proofMAC(token, nonce, host string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("deskd-proof\x00" + nonce + "\x00" + host))
	return m.Sum(nil)
}

// getProof answers GET /v1/proof: with a nonce of ProofNonceLen hex
// digits and the TokenID of one of this deskd's tokens, that token's
// proof for the nonce and this host; 403 when no token has that id (a
// wrong id counts as a wrong token for the throttle); 400 for a bad
// nonce or id.
func (s *Server) getProof(w http.ResponseWriter, r *http.Request) {
	nonce := r.URL.Query().Get("nonce")
	if _, err := hex.DecodeString(nonce); err != nil || len(nonce) != ProofNonceLen {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("nonce: want %d hex digits (32 random bytes), got %d characters", ProofNonceLen, len(nonce)))
		return
	}
	id, err := hex.DecodeString(r.Header.Get(HeaderTokenID))
	if err != nil || len(id) != tokenIDLen {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("header %s: want %d hex digits, the first %d bytes of the token's SHA-256", HeaderTokenID, 2*tokenIDLen, tokenIDLen))
		return
	}
	tok, ok := s.tokenWithID(id)
	if !ok {
		s.failedToken(r, "proof refused: a token id that is none of deskd's")
		writeError(w, http.StatusForbidden, fmt.Sprintf("no token of this deskd has the id of %s: it cannot prove it holds that token", HeaderTokenID))
		return
	}
	writeJSON(w, http.StatusOK, ProofResponse{Host: s.o.Host, Proof: ProofOf(tok, nonce, s.o.Host)})
}

// tokenWithID returns the token of this deskd whose TokenID is id,
// compared in constant time with every token's (digestCredential).
func (s *Server) tokenWithID(id []byte) (string, bool) {
	var tok string
	switch s.digestCredential(id) {
	case credOperator:
		tok = s.o.Token
	case credFeed:
		tok = s.o.FeedToken
	case credMetrics:
		tok = s.o.MetricsToken
	}
	return tok, tok != ""
}
