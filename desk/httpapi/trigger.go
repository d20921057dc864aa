package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/triggers"
)

func (s *Server) postTrigger(w http.ResponseWriter, r *http.Request) {
	d, ok := s.desk(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, triggers.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", triggers.MaxBody))
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "read the body: "+err.Error())
		return
	}
	wait, ok := waitParam(w, r)
	if !ok {
		return
	}
	req, err := triggers.DecodeRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	source := "api"
	feed := credentialOf(r) == credFeed
	if feed {
		if err := req.CheckFeed(); err != nil {
			writeError(w, http.StatusForbidden, err.Error())
			return
		}
		source = feedSource(req.Source)
		req.Source = ""
	}
	acc, err := d.Submit(req.Trigger(d.Name(), source))
	if err != nil && s.leftHere(w, r, d.Name()) {
		return
	}
	switch {
	case errors.Is(err, triggers.ErrQueueFull):
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterFull))
		writeJSON(w, http.StatusTooManyRequests, TriggerResponse{ID: acc.ID, Error: err.Error()})
		return
	case errors.Is(err, desk.ErrPaused):
		writeJSON(w, http.StatusLocked, TriggerResponse{ID: acc.ID, Error: err.Error()})
		return
	case errors.Is(err, desk.ErrStopped):
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterFull))
		writeError(w, http.StatusServiceUnavailable, err.Error()+" (it may be restarting to take a config change: try again)")
		return
	case errors.Is(err, desk.ErrStorage):
		s.o.Log.Error().Err(err).Str("desk", d.Name()).Msg("queue trigger")
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterFull))
		msg := "the trigger was not queued: the desk cannot write to its disk (" + err.Error() + "); try again with the same id"
		if durable.IsDiskFull(err) {
			msg = "the trigger was not queued: the disk is full (" + err.Error() + "); try again with the same id once space is freed"
		}
		writeJSON(w, http.StatusServiceUnavailable, TriggerResponse{ID: acc.ID, Error: msg})
		return
	case err != nil:
		s.o.Log.Error().Err(err).Str("desk", d.Name()).Msg("queue trigger")
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	w.Header().Set("Location", "/v1/desks/"+url.PathEscape(d.Name())+"/triggers/"+url.PathEscape(acc.ID))
	if wait > 0 {
		s.answerWhenFinal(w, r, d, acc, feed, wait)
		return
	}
	if acc.Duplicate {
		writeJSON(w, http.StatusOK, TriggerResponse{ID: acc.ID, State: publicState(acc.State), Duplicate: true})
		return
	}
	writeJSON(w, http.StatusAccepted, TriggerResponse{ID: acc.ID, State: acc.State, Replaced: acc.Replaced})
}

// feedSource is the source of a trigger posted with a feed's token:
// "feed", or "feed:<source>" when the feed names one. It marks the
// trigger as the feed's own, which the feed may read back (fedBy).
func feedSource(source string) string {
	if source == "" {
		return "feed"
	}
	return "feed:" + source
}

// fedBy reports whether a trigger's source says a feed's token posted it.
func fedBy(source string) bool { return source == "feed" || strings.HasPrefix(source, "feed:") }

// publicState names a ledger state as the API does: "sent" is running.
func publicState(s triggers.State) triggers.State {
	if s == triggers.StateSent {
		return triggers.StateRunning
	}
	return s
}

// answerWhenFinal answers a POST with ?wait= once its trigger, queued (or
// known: a duplicate) durably, is final: 200 with its status, as GET
// answers it (a feed's token reads no reply, and only the triggers it
// posted: 403 otherwise); or, once the wait has passed on deskd's clock or
// the client has gone, 202 with the trigger's id and state now (Duplicate
// set for a known id). The client going away does not touch the trigger.
func (s *Server) answerWhenFinal(w http.ResponseWriter, r *http.Request, d *desk.Desk, acc desk.Accepted, feed bool, wait time.Duration) {
	if feed && !s.fedOrUnknown(w, d, acc.ID) {
		return
	}
	st, found := d.WaitTrigger(r.Context(), acc.ID, wait)
	if !s.hosts.check(w, r) { // asked again: a reload may have taken the name away meanwhile
		return
	}
	if found && st.Final() {
		if feed && !fedBy(st.Source) {
			writeError(w, http.StatusForbidden, notFedBy(d.Name(), acc.ID))
			return
		}
		if feed {
			st.Reply = "" // the desk's answer (positions, orders) is the operator's to read
		}
		writeJSON(w, http.StatusOK, st)
		return
	}
	state := acc.State
	if found {
		state = st.State
	}
	writeJSON(w, http.StatusAccepted, TriggerResponse{ID: acc.ID, State: publicState(state), Duplicate: acc.Duplicate, Replaced: acc.Replaced})
}

// fedOrUnknown reports whether a feed's token may wait on trigger id of
// d: a trigger it posted, or none yet; otherwise it answers 403. Only a
// feed's request pays for this look-up (a copy of the trigger's status).
func (s *Server) fedOrUnknown(w http.ResponseWriter, d *desk.Desk, id string) bool {
	if st, found := d.Trigger(id); found && !fedBy(st.Source) {
		writeError(w, http.StatusForbidden, notFedBy(d.Name(), id))
		return false
	}
	return true
}

// notFedBy is the 403 of a feed's token asking for a trigger it did not
// post.
func notFedBy(deskName, id string) string {
	return fmt.Sprintf("desk %s: trigger %q was not posted with a feed's token: a feed reads only the triggers it posted", deskName, id)
}

// waitParam reads ?wait=, a duration capped at maxWait (0 when absent);
// a bad one is answered 400 and ok is false.
func waitParam(w http.ResponseWriter, r *http.Request) (wait time.Duration, ok bool) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, true
	}
	wait, err := time.ParseDuration(v)
	if err != nil || wait < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("wait=%q: want a duration such as 30s", v))
		return 0, false
	}
	return min(wait, maxWait), true
}

func (s *Server) getTrigger(w http.ResponseWriter, r *http.Request) {
	d, ok := s.desk(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	wait, ok := waitParam(w, r)
	if !ok {
		return
	}
	feed := credentialOf(r) == credFeed
	if feed && !s.fedOrUnknown(w, d, id) {
		return
	}
	var (
		st    desk.TriggerStatus
		found bool
	)
	if wait > 0 {
		st, found = d.WaitTrigger(r.Context(), id, wait)
		if !s.hosts.check(w, r) { // asked again: a reload may have taken the name away meanwhile
			return
		}
	} else {
		st, found = d.Trigger(id)
	}
	if !found {
		writeError(w, http.StatusNotFound, fmt.Sprintf("desk %s has no trigger %q", d.Name(), id))
		return
	}
	if feed && !fedBy(st.Source) { // checked again on what is answered: it may have come meanwhile
		writeError(w, http.StatusForbidden, notFedBy(d.Name(), id))
		return
	}
	if feed {
		st.Reply = "" // the desk's answer (positions, orders) is the operator's to read
	}
	writeJSON(w, http.StatusOK, st)
}
