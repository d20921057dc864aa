package router

import "github.com/deskd/deskd/memory"

// appendLocked writes rec to the session file, and says so at debug level.
func (r *Router) appendLocked(rec memory.Record) error {
	return r.appendAllLocked(rec)
}

// appendAllLocked is appendLocked of several records in one write and one
// fsync.
func (r *Router) appendAllLocked(recs ...memory.Record) error {
	err := r.log.AppendAll(recs...)
	if err == nil {
		for _, rec := range recs {
			r.logger.Debug().Str("desk", r.desk).Str("session", r.cur.Session).Str("type", string(rec.Type)).
				Str("role", string(rec.Role)).Str("trigger", rec.Trigger).Msg("session record written")
		}
	}
	return err
}

// debugRequest says, at debug level, that a request goes to model m: its
// size in bytes (the text it carries) and the estimate of its tokens.
func (r *Router) debugRequest(m Model, req Request) {
	e := r.logger.Debug()
	if !e.Enabled() {
		return // the sizes below walk every message
	}
	e.Str("desk", r.desk).Str("model", m.Name).Str("provider", string(m.Provider)).Str("task", string(req.Task)).
		Int("messages", len(req.Messages)).Int("bytes", requestBytes(req)).Int64("estimated_tokens", requestTokens(req)).
		Msg("model request")
}

// requestBytes is the size of the text a request carries: the system
// prompt, the messages and their tool calls, and the tools' definitions.
func requestBytes(req Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Text)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return n
}
