package httpapi

import (
	"time"

	"github.com/deskd/deskd/desk/notify"
)

// NotifyStatus is the state of one notification target (the main file's
// notify), in GET /healthz and GET /v1/desks (field notify, present when
// notify is configured). A failing target does not make deskd unhealthy:
// /healthz stays 200 and says so in this detail. Its fields are
// desk/notify's TargetStats; the URL is shown by its host only (a Slack
// URL's path is Slack's secret).
type NotifyStatus struct {
	// Target is the target's name (a key of notify).
	Target string `json:"target"`
	// Host is the target URL's host.
	Host string `json:"host"`
	// Format is standard or slack.
	Format string `json:"format"`
	// Pending is how many notifications wait in the target's outbox.
	Pending int `json:"pending"`
	// Delivered counts the notifications the target took since start.
	Delivered int64 `json:"delivered"`
	// Failed counts the notifications the target will never get (given
	// up after give_up_after, or not kept: its outbox full) since start.
	Failed int64 `json:"failed"`
	// FailedAttempts counts the failed posts (each retry) since start.
	FailedAttempts int64 `json:"failed_attempts"`
	// Failing is true from a failed post until the next success; LastError
	// says how it failed, Since when the streak began.
	Failing   bool      `json:"failing"`
	LastError string    `json:"last_error,omitempty"`
	Since     time.Time `json:"since,omitzero"`
}

// notifyStatus is Options.Notify's answer, or nil without targets.
func (s *Server) notifyStatus() []NotifyStatus {
	if s.o.Notify == nil {
		return nil
	}
	return s.o.Notify()
}

// NotifyStatuses returns the function that reads n's targets for
// Options.Notify; nil without a notifier.
func NotifyStatuses(n *notify.Notifier) func() []NotifyStatus {
	if n == nil {
		return nil
	}
	return func() []NotifyStatus {
		var out []NotifyStatus
		for _, s := range n.Stats() {
			out = append(out, NotifyStatus{Target: s.Target, Host: s.Host, Format: s.Format, Pending: s.Pending,
				Delivered: s.Delivered, Failed: s.Failed, FailedAttempts: s.Attempts, Failing: s.Failing, LastError: s.LastError, Since: s.Since})
		}
		return out
	}
}
