package httpapi

// The JSON bodies of the API, which the server writes and the client
// reads.

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/triggers"
)

// HealthResponse is the body of GET /healthz.
type HealthResponse struct {
	// Status is "ok", or "degraded" while a desk cannot write to its disk
	// or the state folder's free space is below the threshold
	// (desk.SpaceProbe).
	Status string `json:"status"`
	// Storage lists the desks whose writes fail, with the failure, or
	// whose state folder is low on space (low_space).
	Storage map[string]*desk.StorageStatus `json:"storage,omitempty"`
	// ConfigRejected lists the config files refused and still refused
	// (desk.Set.ConfigRejections). A refused edit is not a failure to
	// serve: it leaves the status "ok" and the answer 200.
	ConfigRejected []desk.ConfigRejection `json:"config_rejected,omitempty"`
	// NATS is the NATS connection's state, when NATS is configured: a
	// lost connection leaves the status "ok" and the answer 200.
	NATS *NATSStatus `json:"nats,omitempty"`
	// Notify is each notification target's state, when notify is
	// configured: a failing target leaves the status "ok" and the answer
	// 200.
	Notify []NotifyStatus `json:"notify,omitempty"`
	// Failed lists the desks that failed to start (a damaged file of their
	// folder, say), by name, with the file and the reason: the other desks
	// serve, so this leaves the status "ok" and the answer 200.
	Failed map[string]desk.Failure `json:"failed,omitempty"`
}

// DesksResponse is the body of GET /v1/desks.
type DesksResponse struct {
	// Desks are the status of every desk, sorted by name.
	Desks []desk.Status `json:"desks"`
	// ConfigRejected is every current rejection of a config file, by desk
	// ("" for the main file, or a file that is not one desk's); a desk
	// whose first file was refused is here, and not in Desks.
	ConfigRejected []desk.ConfigRejection `json:"config_rejected"`
	// TimeZone is the trading time zone (an IANA name, Asia/Kolkata): the
	// console shows deskd's times in it.
	TimeZone string `json:"time_zone,omitempty"`
	// NATS is the NATS connection's state, when NATS is configured.
	NATS *NATSStatus `json:"nats,omitempty"`
	// Notify is each notification target's state, when notify is configured.
	Notify []NotifyStatus `json:"notify,omitempty"`
}

// TriggerResponse is the body of a POST /v1/desks/{desk}/triggers answer.
type TriggerResponse struct {
	// ID is the trigger's id: the one posted, or the one deskd gave it.
	ID string `json:"id"`
	// State is the trigger's state once queued, or, for a duplicate, now.
	State triggers.State `json:"state,omitempty"`
	// Duplicate is true when the id was known: nothing new was queued.
	Duplicate bool `json:"duplicate,omitempty"`
	// Replaced is the queued trigger of the same key this one replaced.
	Replaced string `json:"replaced,omitempty"`
	// Error says why the trigger was not queued (429, 423, 503).
	Error string `json:"error,omitempty"`
}

// SessionResponse is the body of a POST /v1/desks/{desk}/rollover or
// .../fork answer.
type SessionResponse struct {
	// Desk is the desk's name.
	Desk string `json:"desk"`
	// Previous is the session that ended.
	Previous string `json:"previous"`
	// Session is the new one.
	Session string `json:"session"`
}

// MaxPauseBody bounds the body of a pause or resume request.
const MaxPauseBody = 64 << 10

// PauseRequest is the body of POST /v1/desks/{desk}/pause and .../resume;
// it may be empty.
type PauseRequest struct {
	// Reason says why (a pause only): shown in the status and the
	// desk.paused event.
	Reason string `json:"reason,omitempty"`
	// By names who pauses or resumes: the CLI sends the user's login name.
	// Default: "api".
	By string `json:"by,omitempty"`
}

// PauseResponse is the answer of POST /v1/desks/{desk}/pause.
type PauseResponse struct {
	// Desk is the desk's name.
	Desk string `json:"desk"`
	// Paused is the desk's pause: this one, or the one before it.
	Paused desk.Pause `json:"paused"`
	// Already is true when the desk was paused before: nothing changed.
	Already bool `json:"already,omitempty"`
	// Running is the trigger of the turn that was running: it finishes.
	Running string `json:"running,omitempty"`
}

// ResumeResponse is the answer of POST /v1/desks/{desk}/resume.
type ResumeResponse struct {
	// Desk is the desk's name.
	Desk string `json:"desk"`
	// Resumed is false when the desk was not paused.
	Resumed bool `json:"resumed"`
	// Was is the pause that ended.
	Was *desk.Pause `json:"was,omitempty"`
	// Queued is how many triggers were waiting.
	Queued int `json:"queued"`
}

// readJSONBody reads r's body, at most limit bytes (413 past it), and
// decodes it strictly into v (triggers.DecodeJSON: one JSON value, no
// unknown field, UTF-8, errors in words), or answers 400 saying the
// shape wanted. An empty body is refused unless optional, when v keeps
// what it holds. It reports whether v may be used.
func readJSONBody(w http.ResponseWriter, r *http.Request, limit int64, v any, shape string, optional bool) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", limit))
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, "read the body: "+err.Error())
		return false
	case optional && strings.TrimSpace(string(body)) == "":
		return true
	}
	if err := triggers.DecodeJSON(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "want a JSON body "+shape+": "+err.Error())
		return false
	}
	return true
}
