package httpapi

// The kill switch of a desk: POST /v1/desks/{desk}/pause and .../resume. A
// paused desk runs no turn; its triggers wait in its queue, or are refused
// when its file says paused_triggers: refuse. The pause is kept in the
// desk's folder (pause.json) and survives a restart.

import (
	"net/http"
	"strings"

	"github.com/deskd/deskd/desk"
)

// readPauseRequest decodes the optional body: one JSON object of at most
// MaxPauseBody bytes (413 past it), decoded strictly (triggers.DecodeJSON:
// nothing after it, no unknown field, UTF-8, errors in words).
func readPauseRequest(w http.ResponseWriter, r *http.Request) (PauseRequest, bool) {
	var req PauseRequest
	if !readJSONBody(w, r, MaxPauseBody, &req, `{"reason": "...", "by": "..."}`, true) {
		return req, false
	}
	req.Reason, req.By = strings.TrimSpace(req.Reason), byOrAPI(req.By)
	return req, true
}

// pauseRequest returns the desk of a pause or resume and its request, or
// answers 404 or the body's refusal.
func (s *Server) pauseRequest(w http.ResponseWriter, r *http.Request) (*desk.Desk, PauseRequest, bool) {
	d, ok := s.desk(w, r)
	if !ok {
		return nil, PauseRequest{}, false
	}
	req, ok := readPauseRequest(w, r)
	return d, req, ok
}

func (s *Server) postPause(w http.ResponseWriter, r *http.Request) {
	d, req, ok := s.pauseRequest(w, r)
	if !ok {
		return
	}
	p, changed, err := d.Pause(req.By, req.Reason)
	if err != nil && s.leftHere(w, r, d.Name()) {
		return
	}
	if err != nil {
		s.o.Log.Error().Err(err).Str("desk", d.Name()).Msg("pause")
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	out := PauseResponse{Desk: d.Name(), Paused: p, Already: !changed}
	if run := d.Status().Running; run != nil {
		out.Running = run.Trigger
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) postResume(w http.ResponseWriter, r *http.Request) {
	d, req, ok := s.pauseRequest(w, r)
	if !ok {
		return
	}
	queued := d.Status().QueueDepth
	was, err := d.Resume(req.By)
	if err != nil && s.leftHere(w, r, d.Name()) {
		return
	}
	if err != nil {
		s.o.Log.Error().Err(err).Str("desk", d.Name()).Msg("resume")
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, ResumeResponse{Desk: d.Name(), Resumed: was != nil, Was: was, Queued: queued})
}
