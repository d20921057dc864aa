package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFirstStartKilledHalfwayE2E: deskd is SIGKILLed during the first
// start of many idle desks (issue 24 item 4: their folders are made at
// once, then each desk makes its first session and state file): as it
// begins, and once some desks have started. The next start runs every
// desk, none failed; the start after that resumes each desk's session as
// the second start left it.
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
			states, _ := filepath.Glob(filepath.Join(dir, "state", "desks", "*", "state.json"))
			t.Logf("killed %s: %d desk folders, %d state files", tt.name, len(folders), len(states))

			second := startDeskd(t, "second start", "run", "--config", cfg)
			second.waitReady(t)
			if n := second.count(isEvent("desk.failed")); n != 0 {
				second.fail(t, "%d desks failed to start after a first start killed %s", n, tt.name)
			}
			if n := second.count(isEvent("desk.started")); n != desks {
				second.fail(t, "%d desks started, want %d", n, desks)
			}
			second.stopCleanly(t, syscall.SIGTERM)
			sessions := currentSessions(t, filepath.Join(dir, "state", "desks"), desks)

			third := startDeskd(t, "third start", "run", "--config", cfg)
			third.waitReady(t)
			third.stopCleanly(t, syscall.SIGTERM)
			for name, id := range currentSessions(t, filepath.Join(dir, "state", "desks"), desks) {
				if id != sessions[name] {
					t.Errorf("desk %s: the third start began session %s, want %s resumed", name, id, sessions[name])
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

// currentSessions reads the current session of each of n desk folders in
// dir from its state.json, each naming a session file that exists.
func currentSessions(t *testing.T, dir string, n int) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "state.json"))
		if err != nil {
			t.Fatalf("desk %s: %v", e.Name(), err)
		}
		var st struct {
			Session string `json:"session"`
		}
		if err := json.Unmarshal(data, &st); err != nil || st.Session == "" {
			t.Fatalf("desk %s: state.json %q: %v", e.Name(), data, err)
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "sessions", st.Session+".jsonl")); err != nil {
			t.Fatalf("desk %s: its current session's file: %v", e.Name(), err)
		}
		out[e.Name()] = st.Session
	}
	if len(out) != n {
		t.Fatalf("%d desk folders, want %d", len(out), n)
	}
	return out
}
