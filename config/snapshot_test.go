package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteSnapshot: a snapshot is written when the config in force
// changes and only then, named for its instant, listed oldest first, and
// it holds no base URL password.
func TestWriteSnapshot(t *testing.T) {
	cfg := diffBase()
	cfg.StateDir = t.TempDir()
	m := cfg.Models["fast"]
	m.BaseURL = "https://user:hunter2@llm.example/v1"
	cfg.Models["fast"] = m
	at := time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)

	first, err := WriteSnapshot(cfg, at, "start")
	if err != nil || first != filepath.Join(cfg.StateDir, HistoryDir, "20260302T043000.000000000Z.json") {
		t.Fatalf("WriteSnapshot = %q, %v", first, err)
	}
	if again, err := WriteSnapshot(cfg, at.Add(time.Hour), "reload"); err != nil || again != "" {
		t.Errorf("WriteSnapshot of the same config = %q, %v; want none written", again, err)
	}
	next := cloneConfig(cfg)
	next.Desks["fx"].Instructions = "Trade FX carefully."
	second, err := WriteSnapshot(next, at.Add(2*time.Hour), "reload")
	if err != nil || second == "" {
		t.Fatalf("WriteSnapshot of a changed config = %q, %v", second, err)
	}
	if err := os.WriteFile(filepath.Join(cfg.StateDir, HistoryDir, "notes.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}

	snaps, err := Snapshots(filepath.Join(cfg.StateDir, HistoryDir))
	if err != nil || len(snaps) != 2 || snaps[0].Path != first || snaps[1].Path != second ||
		!snaps[0].Taken.Equal(at) || snaps[1].Name != filepath.Base(second) {
		t.Fatalf("Snapshots = %+v, %v; want the two snapshots, oldest first", snaps, err)
	}
	for _, p := range []string{first, second} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if s := string(b); strings.Contains(s, "hunter2") || !strings.Contains(s, "https://llm.example/v1") {
			t.Errorf("%s holds the base URL's password, or lost the URL:\n%s", p, s)
		}
	}
	if none, err := Snapshots(filepath.Join(t.TempDir(), HistoryDir)); err != nil || none != nil {
		t.Errorf("Snapshots of a missing folder = %v, %v", none, err)
	}
}
