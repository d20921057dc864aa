package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// unknownDesk is the message of a 404 for a desk name the daemon does not
// run: to the operator, it names the desks it runs (a feed's token
// learns no desk it was not told).
func (s *Server) unknownDesk(r *http.Request, name string) string {
	if credentialOf(r) != credOperator {
		return fmt.Sprintf("unknown desk %q", name)
	}
	var names []string
	for _, d := range s.desks.List() {
		names = append(names, d.Name())
	}
	if len(names) == 0 {
		return fmt.Sprintf("unknown desk %q (this deskd runs no desks)", name)
	}
	return fmt.Sprintf("unknown desk %q (desks: %s)", name, strings.Join(names, ", "))
}

// answerError is the *Error of an answer that is not a success: the
// message of its {"error": "..."} body, or the body itself when it is not
// one.
func answerError(status int, body []byte) *Error {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		e.Error = strings.TrimSpace(string(body))
	}
	if e.Error == "" {
		e.Error = http.StatusText(status)
	}
	return &Error{Status: status, Message: e.Error}
}

// UnknownDesk reports whether err is deskd's answer that a desk it names
// is not one the daemon runs (404 "unknown desk ...").
func UnknownDesk(err error) bool {
	var ae *Error
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound && strings.HasPrefix(ae.Message, "unknown desk ")
}
