package termview_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termview"
	"github.com/deskd/deskd/router"
)

// TestPrintStatusShowsStorage: deskd status says when a desk cannot write,
// or cannot read its Memory.md or a skill.
func TestPrintStatusShowsStorage(t *testing.T) {
	since := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	out := status(desk.Status{Name: "main", State: "idle", Storage: &desk.StorageStatus{Error: "write x: no space left on device", Since: since, DiskFull: true},
		Unreadable: []router.Unreadable{{Path: "/s/desks/main/Memory.md", Error: "permission denied", Since: since}}})
	has(t, "deskd status output", out, []string{"desk main cannot write: the disk is full since 2026-03-02T10:00:00Z", "no space left on device",
		"desk main cannot read /s/desks/main/Memory.md, so its prompts go without it: permission denied"})
}

// TestPrintConfigRejections: deskd status says which file was refused,
// since when, why, and what the desk runs on.
func TestPrintConfigRejections(t *testing.T) {
	since := time.Date(2026, 3, 2, 10, 2, 0, 0, time.UTC)
	rej := func(d, file, field, reason string) desk.ConfigRejection {
		return desk.ConfigRejection{ConfigRejected: desk.ConfigRejected{Since: since, File: file, Field: field, Reason: reason}, Desk: d}
	}
	var b strings.Builder
	termview.ConfigRejections(&b, []desk.Status{{Name: "fx"}}, []desk.ConfigRejection{
		rej("", "deskd.yaml", "timezone", "unknown time zone \"Asia/Kolkatta\""),
		rej("fx", "desks.d/fx.yaml", "schedules[0].cron", "bad cron \x1b[31m"),
		rej("fx", "desks.d/fx.yaml", "model", "unknown model"),
		rej("eq", "desks.d/eq.yaml", "model", "unknown model"),
	})
	out := b.String()
	has(t, "output", out, []string{
		`config: its file deskd.yaml was refused since 2026-03-02T10:02:00Z: timezone: unknown time zone "Asia/Kolkatta"; nothing of the reload was applied`,
		"desk fx: its file desks.d/fx.yaml was refused since 2026-03-02T10:02:00Z: schedules[0].cron: bad cron ",
		"(and 1 more); it runs on its last good config",
		"desk eq: its file desks.d/eq.yaml was refused since 2026-03-02T10:02:00Z: model: unknown model; it has no good config yet, so it is not started",
	})
	if strings.Contains(out, "\x1b") {
		t.Errorf("output holds an escape character:\n%q", out)
	}
}
