package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/deskd/deskd/triggers"
)

// AckRequest is the body of POST /v1/desks/{desk}/triggers/{id}/ack; it
// may be empty.
type AckRequest struct {
	// By names who acknowledges: the CLI sends the user's login name.
	// Default: "api".
	By string `json:"by,omitempty"`
	// Note says what they found or did.
	Note string `json:"note,omitempty"`
}

// postAck acknowledges an interrupted trigger: 200 with its status (and
// its first acknowledgement, when it had one already), 404 for an unknown
// desk or trigger, 409 for a trigger that is not interrupted.
func (s *Server) postAck(w http.ResponseWriter, r *http.Request) {
	d, ok := s.desk(w, r)
	if !ok {
		return
	}
	req, ok := readAckRequest(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	st, _, err := d.Acknowledge(id, req.By, req.Note)
	if err != nil && !errors.Is(err, triggers.ErrUnknownTrigger) && !errors.Is(err, triggers.ErrNotInterrupted) && s.leftHere(w, r, d.Name()) {
		return
	}
	switch {
	case errors.Is(err, triggers.ErrUnknownTrigger):
		writeError(w, http.StatusNotFound, fmt.Sprintf("desk %s has no trigger %q", d.Name(), id))
	case errors.Is(err, triggers.ErrNotInterrupted):
		writeError(w, http.StatusConflict, err.Error())
	case err != nil:
		s.o.Log.Error().Err(err).Str("desk", d.Name()).Str("trigger", id).Msg("acknowledge")
		writeError(w, http.StatusServiceUnavailable, "the acknowledgement was not recorded: "+err.Error())
	default:
		writeJSON(w, http.StatusOK, st)
	}
}

// readAckRequest decodes the optional body as readPauseRequest does.
func readAckRequest(w http.ResponseWriter, r *http.Request) (AckRequest, bool) {
	var req AckRequest
	if !readJSONBody(w, r, MaxPauseBody, &req, `{"by": "...", "note": "..."}`, true) {
		return req, false
	}
	req.By = byOrAPI(req.By)
	return req, true
}
