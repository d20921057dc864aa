package main

import (
	"strings"
	"testing"
)

// TestMemoryCommandSaysWhenThereIsNone: `deskd memory DESK` on a desk
// without Memory.md says so on stderr (stdout stays the file's text, empty),
// instead of printing nothing at all.
func TestMemoryCommandSaysWhenThereIsNone(t *testing.T) {
	s := newOpsSetup(t)
	code, out, errOut := runOps(t, s, "memory", "main")
	if code != 0 || out != "" || !strings.Contains(errOut, "desk main has no Memory.md yet") {
		t.Fatalf("memory main without Memory.md = %d %q %q; want 0, no stdout, a note on stderr", code, out, errOut)
	}
	if _, err := s.Folder.WriteMemory("- keep stops tight\n"); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = runOps(t, s, "memory", "main"); code != 0 || out != "- keep stops tight\n" || errOut != "" {
		t.Fatalf("memory main = %d %q %q", code, out, errOut)
	}
}
