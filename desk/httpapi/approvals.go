package httpapi

// The tool calls that wait for an operator's decision (package approval):
// GET /v1/approvals, GET /v1/desks/{desk}/approvals, and
// POST /v1/desks/{desk}/approvals/{id}/approve and .../deny. The operator's
// credential alone reaches them (a feed's token gets 403).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/router"
)

// Approvals is what the server needs of the calls that wait for a
// decision. *approval.Queue is one.
type Approvals interface {
	// Pending returns the calls that wait on a desk ("": every desk's),
	// oldest first.
	Pending(desk string) []approval.Pending
	// Decide approves or denies a waiting call; approval.ErrUnknown (wrapped)
	// when no call of that id waits on that desk.
	Decide(desk, id string, approve bool, by, reason string) (router.Decision, error)
}

// MaxApprovalReason bounds the reason of an approval or a denial, in bytes.
const MaxApprovalReason = 500

// MaxApprovalBy bounds the name of who decides, in bytes.
const MaxApprovalBy = 128

// ApprovalsResponse is the body of GET /v1/approvals and
// GET /v1/desks/{desk}/approvals.
type ApprovalsResponse struct {
	// Approvals are the calls that wait, oldest first; never null.
	Approvals []approval.Pending `json:"approvals"`
	// AsOf is when the list was taken, on deskd's clock: the time left
	// of a call is its ExpiresAt less AsOf.
	AsOf time.Time `json:"as_of"`
}

// DecisionRequest is the body of POST /v1/desks/{desk}/approvals/{id}/approve
// and .../deny; it may be empty.
type DecisionRequest struct {
	// Reason says why (one line, at most MaxApprovalReason bytes): the
	// model hears it with a denial.
	Reason string `json:"reason,omitempty"`
	// By names who decides: the CLI sends the user's login name.
	// Default: "api".
	By string `json:"by,omitempty"`
}

// routeApprovals adds the approval endpoints.
func (s *Server) routeApprovals() {
	s.mux.HandleFunc("GET /v1/approvals", s.listApprovals)
	s.mux.HandleFunc("GET /v1/desks/{desk}/approvals", s.listDeskApprovals)
	s.mux.HandleFunc("POST /v1/desks/{desk}/approvals/{id}/approve", s.postApprove)
	s.mux.HandleFunc("POST /v1/desks/{desk}/approvals/{id}/deny", s.postDeny)
}

// approvals returns the server's Approvals, or answers 404 when it has none.
func (s *Server) approvals(w http.ResponseWriter) (Approvals, bool) {
	if s.o.Approvals == nil {
		writeError(w, http.StatusNotFound, "approvals are not configured")
		return nil, false
	}
	return s.o.Approvals, true
}

func (s *Server) listApprovals(w http.ResponseWriter, _ *http.Request) {
	if a, ok := s.approvals(w); ok {
		writeJSON(w, http.StatusOK, ApprovalsResponse{Approvals: nonNil(a.Pending("")), AsOf: s.o.Clock.Now()})
	}
}

func (s *Server) listDeskApprovals(w http.ResponseWriter, r *http.Request) {
	a, ok := s.approvals(w)
	if !ok {
		return
	}
	if d, ok := s.desk(w, r); ok {
		writeJSON(w, http.StatusOK, ApprovalsResponse{Approvals: nonNil(a.Pending(d.Name())), AsOf: s.o.Clock.Now()})
	}
}

// nonNil returns ps, or an empty list for nil (JSON [] rather than null).
func nonNil(ps []approval.Pending) []approval.Pending {
	if ps == nil {
		return []approval.Pending{}
	}
	return ps
}

func (s *Server) postApprove(w http.ResponseWriter, r *http.Request) { s.decide(w, r, true) }

func (s *Server) postDeny(w http.ResponseWriter, r *http.Request) { s.decide(w, r, false) }

// decide answers an approval or a denial: 200 with the decision, 404 for
// an unknown desk or a call that does not wait (any more), 400 for a bad
// body.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, approve bool) {
	a, ok := s.approvals(w)
	if !ok {
		return
	}
	d, ok := s.desk(w, r)
	if !ok {
		return
	}
	req, ok := readDecisionRequest(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	dec, err := a.Decide(d.Name(), id, approve, req.By, req.Reason)
	switch {
	case errors.Is(err, approval.ErrUnknown):
		writeError(w, http.StatusNotFound, fmt.Sprintf("desk %s has no tool call %q waiting for a decision (it was decided, expired, or never asked for)", d.Name(), id))
	case err != nil:
		s.o.Log.Error().Err(err).Str("desk", d.Name()).Str("approval", id).Msg("decide")
		writeError(w, http.StatusInternalServerError, err.Error())
	default:
		writeJSON(w, http.StatusOK, dec)
	}
}

// readDecisionRequest decodes the optional body as readPauseRequest does,
// and refuses a reason of more than one line or MaxApprovalReason bytes.
func readDecisionRequest(w http.ResponseWriter, r *http.Request) (DecisionRequest, bool) {
	var req DecisionRequest
	if !readJSONBody(w, r, MaxPauseBody, &req, `{"reason": "...", "by": "..."}`, true) {
		return req, false
	}
	req.Reason, req.By = strings.TrimSpace(req.Reason), strings.TrimSpace(req.By)
	switch {
	case len(req.Reason) > MaxApprovalReason:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("reason: %d bytes, at most %d", len(req.Reason), MaxApprovalReason))
		return req, false
	case strings.ContainsAny(req.Reason, "\r\n"):
		writeError(w, http.StatusBadRequest, "reason: one line, without line breaks")
		return req, false
	case strings.ContainsAny(req.By, "\r\n"):
		writeError(w, http.StatusBadRequest, "by: one line, without line breaks")
		return req, false
	case len(req.By) > MaxApprovalBy:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("by: %d bytes, at most %d", len(req.By), MaxApprovalBy))
		return req, false
	case strings.IndexFunc(req.Reason+req.By, unicode.IsControl) >= 0:
		writeError(w, http.StatusBadRequest, "reason and by: no control characters (they are kept in the session and the audit bundle)")
		return req, false
	}
	req.By = byOrAPI(req.By)
	return req, true
}

// Approvals returns the tool calls that wait for a decision on a desk
// (GET /v1/desks/{desk}/approvals), or on every desk when deskName is
// empty (GET /v1/approvals).
func (c *Client) Approvals(ctx context.Context, deskName string) (ApprovalsResponse, error) {
	path := "/v1/approvals"
	if deskName != "" {
		path = deskPath(deskName, "approvals")
	}
	var out ApprovalsResponse
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

// Decide approves or denies a waiting tool call
// (POST /v1/desks/{desk}/approvals/{id}/approve or .../deny) and returns
// the decision.
func (c *Client) Decide(ctx context.Context, deskName, id string, approve bool, req DecisionRequest) (router.Decision, error) {
	verb := "deny"
	if approve {
		verb = "approve"
	}
	var out router.Decision
	err := c.do(ctx, http.MethodPost, deskPath(deskName, "approvals")+"/"+url.PathEscape(id)+"/"+verb, req, &out)
	return out, err
}
