package desk

import (
	"time"

	"github.com/deskd/deskd/router"
)

// LastAnswer is the model that answered a desk's last turn. Fallback is
// true when it is not the desk's primary (the first model of its route).
// After a restart it is restored from the session's records: the last
// assistant record, which the state file's mark keeps, or one after it.
type LastAnswer struct {
	Model    string              `json:"model"`
	Provider router.ProviderName `json:"provider"`
	Scripted bool                `json:"scripted"`
	Fallback bool                `json:"fallback"`
	At       time.Time           `json:"at"`
}

// answerer is a Router that tells its last answer, as *router.Router
// does (a Router without it shows none).
type answerer interface {
	LastAnswer() (a router.Answer, fallback, ok bool)
}

// lastAnswer asks the router for its last answer; nil before any.
func lastAnswer(r Router) *LastAnswer {
	ar, ok := r.(answerer)
	if !ok {
		return nil
	}
	a, fallback, ok := ar.LastAnswer()
	if !ok {
		return nil
	}
	return &LastAnswer{Model: a.Model, Provider: a.Provider, Scripted: a.Scripted, Fallback: fallback, At: a.At}
}
