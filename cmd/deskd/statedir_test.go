package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDeskFolderCommandsFollowDESKD_STATE_DIR: after a rehearsal run with
// --state-dir (whose default is $DESKD_STATE_DIR), the desk-folder
// commands read that folder, not the config's state_dir.
func TestDeskFolderCommandsFollowDESKD_STATE_DIR(t *testing.T) {
	s := newOpsSetup(t)
	if _, err := s.Folder.WriteMemory("- from the config's state_dir\n"); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runOps(t, s, "memory", "main"); code != 0 || out != "- from the config's state_dir\n" {
		t.Fatalf("memory main without DESKD_STATE_DIR = %d %q", code, out)
	}
	rehearsal := t.TempDir()
	t.Setenv("DESKD_STATE_DIR", rehearsal)
	code, out, errOut := runOps(t, s, "memory", "main")
	if code == 0 || out != "" || !strings.Contains(errOut, filepath.Join(rehearsal, "desks", "main")) {
		t.Errorf("memory main with DESKD_STATE_DIR=%s = %d %q %q; want the rehearsal's folder looked in (it has no desk main)", rehearsal, code, out, errOut)
	}
}
