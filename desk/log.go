package desk

import (
	"encoding/json"

	"github.com/rs/zerolog"

	"github.com/deskd/deskd/desk/event"
)

// LogEvents logs every event on b as one line whose field "event" is the
// topic, with the payload's fields beside it. Failures log at warn or error
// level, everything else at info. It returns the cancel of its subscription.
func LogEvents(b *event.Bus, log zerolog.Logger) (cancel func()) {
	return event.SubscribeAll(b, func(e event.Event) {
		var fields map[string]any
		raw, err := json.Marshal(e)
		if err == nil {
			err = json.Unmarshal(raw, &fields)
		}
		entry := log.WithLevel(levelOf(e)).Str("event", e.Topic())
		if err != nil {
			entry = entry.AnErr("encode_error", err)
		}
		entry.Fields(fields).Msg(e.Topic())
	})
}

func levelOf(e event.Event) zerolog.Level {
	switch e := e.(type) {
	case event.ConfigRejected, event.RolloverFailed, event.StorageFailed, event.MemoryUnreadable:
		return zerolog.ErrorLevel
	case event.TurnFailed, event.TurnInterrupted, event.TriggerDropped, event.ScheduleMissed, event.InboxRejected,
		event.BudgetExceeded, event.SessionTorn, event.FileTorn:
		return zerolog.WarnLevel
	case event.SessionSummarized:
		if e.Degraded {
			return zerolog.WarnLevel
		}
	}
	return zerolog.InfoLevel
}
