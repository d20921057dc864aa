package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/deskd/deskd/desk"
)

func (s *Server) postRollover(w http.ResponseWriter, r *http.Request) {
	s.newSession(w, r, (*desk.Desk).RollOver)
}

// postFork starts a new session carrying the current context (deskd fork).
func (s *Server) postFork(w http.ResponseWriter, r *http.Request) {
	s.newSession(w, r, (*desk.Desk).Fork)
}

// newSession answers a rollover or a fork with the previous and new session.
func (s *Server) newSession(w http.ResponseWriter, r *http.Request, start func(*desk.Desk, context.Context) (string, string, error)) {
	d, ok := s.desk(w, r)
	if !ok {
		return
	}
	prev, id, err := start(d, r.Context())
	if err != nil && s.leftHere(w, r, d.Name()) {
		return
	}
	switch {
	case errors.Is(err, desk.ErrStopped):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
	default:
		writeJSON(w, http.StatusOK, SessionResponse{Desk: d.Name(), Previous: prev, Session: id})
	}
}
