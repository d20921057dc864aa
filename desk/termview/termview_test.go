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
	var b strings.Builder
	since := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	termview.Status(&b, []desk.Status{{Name: "main", State: "idle", Storage: &desk.StorageStatus{Error: "write x: no space left on device", Since: since, DiskFull: true},
		Unreadable: []router.Unreadable{{Path: "/s/desks/main/Memory.md", Error: "permission denied", Since: since}}}})
	for _, want := range []string{"desk main cannot write: the disk is full since 2026-03-02T10:00:00Z", "no space left on device",
		"desk main cannot read /s/desks/main/Memory.md, so its prompts go without it: permission denied"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("deskd status output lacks %q:\n%s", want, b.String())
		}
	}
}
