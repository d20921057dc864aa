package main

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFirstStartKilledHalfwayE2E: deskd is SIGKILLed during the first
// start of many idle desks (issue 24 item 4: an idle desk's first start
// names its first session and writes nothing of it): as it begins, and
// once some desks have started. The next start runs every desk, none
// failed, and leaves no desk folder; the start after that shows each desk
// in the session the second start showed.
func TestFirstStartKilledHalfwayE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("starts deskd on 300 desks, nine times")
	}
	const desks = 300
	tests := []struct {
		name string
		at   func(stderrLine) bool // the line after which deskd is killed
	}{
		{"as it begins", logMessage("deskd starting")},
		{"after 40 desks started", nth(40, isEvent("desk.started"))},
		{"after 150 desks started", nth(150, isEvent("desk.started"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeE2EMain(t, dir, "")
			for i := range desks {
				writeTestFile(t, dir, filepath.Join("desks.d", fmt.Sprintf("d%03d.yaml", i)), "model: offline\ninstructions: You run an idle desk.\n")
			}
			first := startDeskd(t, "first start", "run", "--config", cfg)
			first.waitFor(t, time.Now().Add(2*time.Minute), tt.name, tt.at)
			first.kill()
			<-first.exited
			folders, _ := filepath.Glob(filepath.Join(dir, "state", "desks", "*"))
			t.Logf("killed %s: %d desk folders", tt.name, len(folders))

			second := startDeskd(t, "second start", "run", "--config", cfg)
			second.waitReady(t)
			if n := second.count(isEvent("desk.failed")); n != 0 {
				second.fail(t, "%d desks failed to start after a first start killed %s", n, tt.name)
			}
			if n := second.count(isEvent("desk.started")); n != desks {
				second.fail(t, "%d desks started, want %d", n, desks)
			}
			second.stopCleanly(t, syscall.SIGTERM)
			if folders, _ := filepath.Glob(filepath.Join(dir, "state", "desks", "*")); len(folders) != 0 {
				t.Errorf("idle desks left %d desk folders, want none (made by a desk's first write)", len(folders))
			}
			sessions := startedSessions(t, second, desks)

			third := startDeskd(t, "third start", "run", "--config", cfg)
			third.waitReady(t)
			third.stopCleanly(t, syscall.SIGTERM)
			for name, id := range startedSessions(t, third, desks) {
				if id != sessions[name] {
					t.Errorf("desk %s: the third start showed session %s, want %s, the second's", name, id, sessions[name])
				}
			}
		})
	}
}

// nth matches the n-th line that match matches.
func nth(n int, match func(stderrLine) bool) func(stderrLine) bool {
	seen := 0
	return func(l stderrLine) bool {
		if match(l) {
			seen++
		}
		return seen == n
	}
}

// startedSessions returns the session each desk's session.started of d
// named, failing unless n desks have one each.
func startedSessions(t *testing.T, d *deskdProc, n int) map[string]string {
	t.Helper()
	lines, _ := d.stderr.snapshot()
	out := map[string]string{}
	for _, l := range lines {
		if l.Event() != "session.started" {
			continue
		}
		if _, twice := out[l.Str("desk")]; twice || l.Str("session") == "" {
			d.fail(t, "a second or empty session.started of desk %s: %s", l.Str("desk"), l.Raw)
		}
		out[l.Str("desk")] = l.Str("session")
	}
	if len(out) != n {
		d.fail(t, "%d desks announced their session, want %d", len(out), n)
	}
	return out
}
