package router

import (
	"time"

	"github.com/deskd/deskd/memory"
)

// Answer is the model that wrote a session's last answer (an assistant
// message of a turn).
type Answer struct {
	Model    string       `json:"model"`
	Provider ProviderName `json:"provider"`
	Scripted bool         `json:"scripted,omitempty"`
	At       time.Time    `json:"at"`
}

// answerOf returns the answer rec records, when it is a turn's answer.
func answerOf(rec memory.Record) (Answer, bool) {
	if rec.Type != memory.RecordMessage || rec.Role != RoleAssistant || rec.Silent || rec.Model == "" {
		return Answer{}, false
	}
	return Answer{Model: rec.Model, Provider: ProviderName(rec.Provider), Scripted: rec.Scripted, At: rec.At}, true
}

// LastAnswer returns the model that answered the desk's last turn, and
// whether it is a fallback (not the first model of the route); ok is false
// before any turn was answered. After a restart it is the answer the
// session's records and the state's mark hold; a rollover keeps it until
// the new session's first answer.
func (r *Router) LastAnswer() (a Answer, fallback, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.answer == nil {
		return Answer{}, false, false
	}
	return *r.answer, r.answer.Model != r.set.Route[0].Name, true
}

// fallbackOf says whether answered is a fallback of primary, and if so
// the primary's name and how its call failed (the first of failed, the
// errors of the models tried before answered).
func fallbackOf(primary, answered Model, failed []error) (fallback bool, name, reason string) {
	if answered.Name == primary.Name {
		return false, "", ""
	}
	reason = "not tried"
	if len(failed) > 0 {
		reason = failed[0].Error()
	}
	return true, primary.Name, reason
}
