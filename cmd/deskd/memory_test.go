package main

import (
	"strings"
	"testing"
)

func TestMemoryCommandHistoryDiffRestore(t *testing.T) {
	s := newOpsSetup(t)
	s.writeMemoryAt(t, "2026-03-01T10:00:00Z", "- keep stops tight\n")
	s.writeMemoryAt(t, "2026-03-02T10:00:00Z", "- keep stops tight\n- fade the first gap\n")
	code, out, errOut := runOps(t, s, "memory", "main")
	if code != 0 || out != "- keep stops tight\n- fade the first gap\n" {
		t.Fatalf("memory main = %d %q %q", code, out, errOut)
	}
	code, out, _ = runOps(t, s, "memory", "main", "--history")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "20260302T100000") {
		t.Fatalf("--history = %d %q", code, out)
	}
	version := strings.Fields(lines[0])[0]
	code, out, _ = runOps(t, s, "memory", "main", "--diff", version)
	if code != 0 || !strings.Contains(out, "+- fade the first gap") || strings.Contains(out, "-- keep stops tight") {
		t.Fatalf("--diff = %d\n%s", code, out)
	}
	code, out, _ = runOps(t, s, "memory", "main", "--restore", version)
	if code != 0 || !strings.Contains(out, "restored Memory.md from "+version) {
		t.Fatalf("--restore = %d %q", code, out)
	}
	if text, _ := s.Folder.ReadMemory(); text != "- keep stops tight\n" {
		t.Fatalf("Memory.md after restore = %q", text)
	}
	if versions, _ := s.Folder.MemoryHistory(); len(versions) != 2 {
		t.Fatalf("the restore did not keep the replaced file: %d versions", len(versions))
	}
	if code, _, errOut := runOps(t, s, "memory", "main", "--restore", "nope"); code == 0 || !strings.Contains(errOut, "nope") {
		t.Fatalf("restore of an unknown version = %d %q", code, errOut)
	}
}
