package main

import (
	"strings"
	"testing"
	"time"
)

// TestStartAfterDowntimeLogsOneMissedLinePerSchedule: a deskd that was
// down for 100 minutes of an every-minute schedule logs one
// schedule.missed line for the schedule, with the count and the first and
// last slot in its message and fields, not a line per slot.
func TestStartAfterDowntimeLogsOneMissedLinePerSchedule(t *testing.T) {
	s := newE2ESetup(t, everyMinuteSchedule)
	start := time.Date(2026, 3, 2, 4, 30, 30, 0, time.UTC) // 10:00:30 IST
	d := startInProcess(t, "first deskd", s.Config, start)
	d.waitReady(t)
	d.terminate(t)

	d = startInProcess(t, "second deskd", s.Config, start.Add(100*time.Minute))
	d.waitReady(t)
	line := d.waitFor(t, time.Now().Add(60*time.Second), "schedule.missed", isEvent("schedule.missed", "schedule", "every-minute"))
	d.waitFor(t, time.Now().Add(60*time.Second), "the latest slot's turn", isEvent("turn.completed"))
	d.terminate(t)

	if n := d.count(isEvent("schedule.missed")); n != 1 {
		t.Errorf("%d schedule.missed lines, want 1", n)
	}
	want := "schedule every-minute missed 99 slots from 2026-03-02 10:01 IST to 2026-03-02 11:39 IST: "
	if !strings.HasPrefix(line.Str("message"), want) || line.Num("count") != 99 {
		t.Errorf("schedule.missed line = %s\nwant message %q... and count 99", line.Raw, want)
	}
	if first, last := parseTimeField(t, line, "first"), parseTimeField(t, line, "last"); !first.Equal(start.Add(30*time.Second)) ||
		!last.Equal(start.Add(98*time.Minute+30*time.Second)) || !parseTimeField(t, line, "slot").Equal(first) {
		t.Errorf("schedule.missed first %v last %v, want 04:31Z and 06:09Z, slot = first", first, last)
	}
}
