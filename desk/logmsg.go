package desk

import (
	"fmt"
	"strings"
	"time"

	"github.com/deskd/deskd/desk/event"
	"github.com/deskd/deskd/desk/termsafe"
)

// Describe returns the human sentence of an event's log line ("turn 3 of
// session s-1 answered by gpt-4o in 1.2s"): what happened, from the
// payload; the topic stays in the line's "event" field. Instants are
// shown in loc, the trading time zone. An event it has no sentence for is
// described by its topic.
func Describe(e event.Event, loc *time.Location) string {
	var s string
	switch e := e.(type) {
	case event.DeskStarted:
		s = fmt.Sprintf("desk started on model %s (%s)", e.Model, e.Provider)
	case event.RolloverProgress:
		s = describeProgress(e)
	case event.DeskStopped:
		s = "desk stopped: " + e.Reason
	case event.SessionStarted:
		s = fmt.Sprintf("session %s started (%s)", e.Session, e.Reason)
		if e.Previous != "" {
			s += " after " + e.Previous
		}
	case event.SessionSummarized:
		s = fmt.Sprintf("session %s summarised for %s", e.Session, e.Date)
		if e.Degraded {
			s += fmt.Sprintf(" (degraded after %s: %s)", termsafe.Plural(e.Attempts, "attempt"), e.Error)
		}
	case event.SessionTorn:
		s = fmt.Sprintf("session %s had a torn tail of %s at offset %d, saved to %s", e.Session, termsafe.Plural(e.Bytes, "byte"), e.Offset, e.SavedTo)
	case event.MemoryFolded:
		s = describeFold(e)
	case event.SkillsReviewed:
		s = fmt.Sprintf("skills reviewed for %s: %s", e.Date, termsafe.Plural(len(e.Changes), "change"))
		if e.Skipped != "" {
			s = fmt.Sprintf("skills review for %s skipped: %s", e.Date, e.Skipped)
		}
	case event.RolloverFailed:
		s = fmt.Sprintf("rollover of session %s failed at %s: %s", e.Session, e.Step, e.Error)
	case event.TriggerQueued:
		s = fmt.Sprintf("%s trigger %s from %s queued (%s waiting)", e.Kind, e.Trigger, e.Source, termsafe.Plural(e.Depth, "trigger"))
	case event.TriggerDropped:
		s = fmt.Sprintf("%s trigger %s dropped: %s", e.Kind, e.Trigger, e.Reason)
	case event.InboxRejected:
		s = fmt.Sprintf("inbox file %s rejected: %s", e.File, e.Reason)
	case event.TurnStarted:
		s = fmt.Sprintf("turn %d of session %s started for %s trigger %s", e.Turn, e.Session, e.Kind, e.Trigger)
	case event.TurnCompleted:
		if e.Fallback {
			s = describeFallback(e)
			break
		}
		s = fmt.Sprintf("turn %d of session %s answered by %s in %s (%s in, %s out)", e.Turn, e.Session, modelName(e.Model, e.Scripted),
			(time.Duration(e.DurationMS) * time.Millisecond).Round(100*time.Millisecond),
			termsafe.Plural(e.InputTokens, "token"), termsafe.Plural(e.OutputTokens, "token"))
	case event.ModelFailed:
		s = describeModelFailed(e)
	case event.TurnFailed:
		s = fmt.Sprintf("turn %d of session %s failed for trigger %s: %s", e.Turn, e.Session, e.Trigger, e.Error)
	case event.TurnInterrupted:
		s = fmt.Sprintf("turn of session %s for trigger %s interrupted: %s", e.Session, e.Trigger, e.Reason)
	case event.ScheduleMissed:
		s = describeMissed(e, loc)
	case event.CalendarEnding:
		s = describeCalendarEnding(e)
	case event.BudgetExceeded:
		s = fmt.Sprintf("budget %s spent: %d used of %d", e.Budget, e.Used, e.Limit)
	case event.DeskPaused:
		s = "desk paused by " + e.By
		if e.Reason != "" {
			s += ": " + e.Reason
		}
	case event.DeskResumed:
		s = "desk resumed by " + e.By
	case event.ConfigReloaded:
		s = "config reloaded: " + termsafe.Plural(len(e.Changes), "change")
		if len(e.Changes) > 0 {
			s += ": " + strings.Join(e.Changes, "; ")
		}
	case event.ConfigRejected:
		s = fmt.Sprintf("config %s rejected: %s", e.Path, e.Reason)
		if e.Field != "" {
			s = fmt.Sprintf("config %s rejected: %s: %s", e.Path, e.Field, e.Reason)
		}
	case event.StorageFailed:
		s = "storage failed: " + e.Error
	case event.StorageRecovered:
		s = fmt.Sprintf("storage works again (failing since %s); %s requeued", e.Since.In(loc).Format(time.DateTime), termsafe.Plural(e.Requeued, "trigger"))
	case event.StorageLow:
		s = fmt.Sprintf("low space: %s free on %s, below %s", mib(e.FreeBytes), e.Dir, mib(e.MinFreeBytes))
	case event.StorageSpaceOK:
		s = fmt.Sprintf("space is back: %s free on %s (low since %s)", mib(e.FreeBytes), e.Dir, e.Since.In(loc).Format(time.DateTime))
	case event.FileTorn:
		s = fmt.Sprintf("file %s was torn; its damaged part saved to %s", e.Path, e.SavedTo)
	case event.DeskFailed:
		s = "desk failed to start; the other desks run: " + e.Reason
	case event.DeskAcquired:
		s = fmt.Sprintf("desk acquired by host %s at epoch %d", e.Host, e.Epoch)
		if e.Previous != "" {
			s += ", taken over from host " + e.Previous
		}
	case event.DeskLost:
		s = fmt.Sprintf("desk lost by host %s at epoch %d: stopped at once, standing by: %s", e.Host, e.Epoch, e.Reason)
	case event.DeskReleased:
		s = fmt.Sprintf("desk released by host %s at epoch %d: a standby takes it at once", e.Host, e.Epoch)
	case event.FileRebuilt:
		s = fmt.Sprintf("file %s was damaged (%s): set aside as %s and rebuilt", e.Path, e.Reason, e.SetAside)
	case event.MemoryUnreadable:
		s = fmt.Sprintf("memory file %s is unreadable: %s", e.Path, e.Error)
	case event.NATSOutboxFull:
		s = describeOutboxFull(e)
	case event.NATSOutboxDrained:
		s = fmt.Sprintf("the NATS event outbox has drained (full since %s); %s dropped", e.Since.In(loc).Format(time.DateTime), termsafe.Plural(int(e.Dropped), "event"))
	case event.NATSDuplicate:
		s = fmt.Sprintf("NATS dropped event %s (Nats-Msg-Id %s) as a duplicate of stream message %d, which is not deskd's copy: the event is not on the stream (a message published with deskd's id?)", e.Subject, e.MsgID, e.StreamSeq)
	case event.NATSRejected:
		s = fmt.Sprintf("nats message %q on %s refused (terminated): %s", e.MsgID, e.Subject, e.Reason)
	case event.NATSBackpressure:
		s = fmt.Sprintf("nats trigger %s handed back, to come again in %s (%s): %s", e.Trigger, time.Duration(e.DelayMS)*time.Millisecond, e.Reason, e.Error)
	case event.ToolCalled:
		s = describeToolCalled(e)
	case event.ApprovalRequested:
		s = fmt.Sprintf("tool call %s (%s) waits for an operator's approval until %s: deskd approve %s %s, or deny", e.ID, e.Tool, e.ExpiresAt.In(loc).Format(time.DateTime), e.Desk, e.ID)
	case event.ApprovalDecided:
		s = describeDecided(e)
	case event.MCPServerUp:
		s = fmt.Sprintf("MCP server %s is up with %s", e.Server, termsafe.Plural(e.Tools, "tool"))
	case event.MCPServerDown:
		s = fmt.Sprintf("MCP server %s is down: %s", e.Server, e.Error)
		if !e.RetryAt.IsZero() {
			s += "; next try at " + e.RetryAt.In(loc).Format(time.DateTime)
		}
	default:
		return e.Topic()
	}
	return s
}

func describeFold(e event.MemoryFolded) string {
	if !e.Folded {
		return fmt.Sprintf("session %s's notes for %s not folded into Memory.md: %s", e.Session, e.Date, e.Reason)
	}
	return fmt.Sprintf("session %s's notes for %s folded into Memory.md (+%d -%d lines)", e.Session, e.Date, e.LinesAdded, e.LinesRemoved)
}

// describeMissed says how many slots of a schedule were missed, and when.
func describeMissed(e event.ScheduleMissed, loc *time.Location) string {
	first, last, n := e.First, e.Last, e.Count
	if first.IsZero() {
		first = e.Slot
	}
	if last.IsZero() {
		last = first
	}
	if n <= 1 {
		return fmt.Sprintf("schedule %s missed the slot of %s: %s", e.Schedule, slotTime(first, loc), e.Reason)
	}
	return fmt.Sprintf("schedule %s missed %d slots from %s to %s: %s", e.Schedule, n, slotTime(first, loc), slotTime(last, loc), e.Reason)
}

// describeCalendarEnding says when a calendar ends, and what to do.
func describeCalendarEnding(e event.CalendarEnding) string {
	const fix = "add the next dates from the exchange's published list in calendars.d/%s.yaml (extends: %s, a later through)"
	switch {
	case e.DaysLeft < 0:
		return fmt.Sprintf("calendar %s ended %s (%s ago): beyond_calendar decides its desks' trading_days and market_hours slots; "+fix,
			e.Calendar, e.Through, termsafe.Plural(-e.DaysLeft, "day"), e.Calendar, e.Calendar)
	case e.DaysLeft == 0:
		return fmt.Sprintf("calendar %s ends today, %s: "+fix, e.Calendar, e.Through, e.Calendar, e.Calendar)
	}
	return fmt.Sprintf("calendar %s ends %s, in %s: "+fix, e.Calendar, e.Through, termsafe.Plural(e.DaysLeft, "day"), e.Calendar, e.Calendar)
}

// slotTime shows an instant in loc, with its zone's abbreviation.
func slotTime(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("2006-01-02 15:04 MST")
}

// modelName is a model's name in a sentence: "offline (scripted)" for
// the scripted model, so its canned answers never read as a model's.
func modelName(model string, scripted bool) string {
	if scripted {
		return model + " (scripted)"
	}
	return model
}

// describeModelFailed is model.failed's sentence: "model gpt failed
// (status 429, retryable): ...", "(no answer, retryable)", "(status 401,
// not retryable)".
func describeModelFailed(e event.ModelFailed) string {
	status := "no answer"
	if e.Status > 0 {
		status = fmt.Sprintf("status %d", e.Status)
	}
	retry := "not retryable"
	if e.Retryable {
		retry = "retryable"
	}
	// The error names the model and its status already: say each once.
	msg := strings.TrimPrefix(e.Error, "model "+e.Model+": ")
	msg = strings.TrimPrefix(msg, status+": ")
	return fmt.Sprintf("model %s failed (%s, %s): %s", e.Model, status, retry, msg)
}

// describeFallback is the sentence of a turn a fallback model answered:
// which, and why the primary did not.
func describeFallback(e event.TurnCompleted) string {
	name := modelName(e.Model, e.Scripted)
	return fmt.Sprintf("desk %s: turn %d of session %s answered by fallback %s because primary %s failed: %s",
		e.Desk, e.Turn, e.Session, name, e.Primary, e.PrimaryError)
}

func describeOutboxFull(e event.NATSOutboxFull) string {
	if e.Error != "" {
		return fmt.Sprintf("the NATS event outbox cannot keep events (%s); new events are dropped until it drains (%s waiting)", e.Error, termsafe.Plural(e.Waiting, "event"))
	}
	return fmt.Sprintf("the NATS event outbox is full (%d bytes); new events are dropped until it drains (%s waiting)", e.MaxBytes, termsafe.Plural(e.Waiting, "event"))
}

// describeToolCalled says what became of one tool call.
func describeToolCalled(e event.ToolCalled) string {
	s := fmt.Sprintf("tool %s %s in %s", e.Tool, e.Outcome, time.Duration(e.DurationMS)*time.Millisecond)
	if e.Error != "" {
		s += ": " + e.Error
	}
	return s
}

// describeDecided says what became of a call that waited for an operator.
func describeDecided(e event.ApprovalDecided) string {
	switch e.Outcome {
	case "expired":
		return fmt.Sprintf("tool call %s (%s) expired: no operator decided on it in time; it did not run", e.ID, e.Tool)
	case "refused":
		return fmt.Sprintf("tool call %s (%s) no longer waits: %s; it did not run", e.ID, e.Tool, e.Reason)
	}
	s := fmt.Sprintf("tool call %s (%s) %s by %s", e.ID, e.Tool, e.Outcome, e.By)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}
