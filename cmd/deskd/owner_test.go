package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/memory"
)

// TestCLIWritesKeepTheDeskOwner: an operator's `sudo deskd ...` that
// writes the desk folder (memory --restore, rename, skills --undo) leaves
// every file and folder it writes with the owner of the desk folder, so
// that the daemon, which runs as its own user, can still read them.
func TestCLIWritesKeepTheDeskOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("run as root: the test is what a root CLI does to a folder another user owns")
	}
	const uid, gid = 4321, 4322
	s := newOpsSetup(t)
	s.writeMemoryAt(t, "2026-03-01T10:00:00Z", "- keep stops tight\n")
	s.writeMemoryAt(t, "2026-03-02T10:00:00Z", "- keep stops tight\n- fade the first gap\n")
	if _, err := s.Folder.WriteSkill("vwap", "---\nname: vwap\ndescription: VWAP entries\n---\n\nv1\n"); err != nil {
		t.Fatal(err)
	}
	model := fixedAnswer(`{"operations":[{"op":"patch","skill":"vwap","content":"---\nname: vwap\ndescription: VWAP v2\n---\n\nv2\n","reason":"sharper"}]}`)
	if _, err := (&curator.Reviewer{Folder: s.Folder, Model: model, Now: s.Folder.Now}).Review(t.Context(), memory.Date{Year: 2026, Month: 3, Day: 2}, "s1"); err != nil {
		t.Fatal(err)
	}
	s.session(t, memory.Record{Session: "20260302T043000Z-aaaaaaaa", Date: "2026-03-02", At: utcTime(t, "2026-03-02T04:30:00Z")},
		memory.Record{Type: memory.RecordMessage, Role: "user", Text: "Check the tape.", Trigger: "t1"})
	// The daemon's user owns the state dir; the operator then runs deskd as root.
	stateDir := filepath.Dir(filepath.Dir(s.DeskDir))
	if err := filepath.WalkDir(stateDir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		t.Fatal(err)
	}

	code, out, _ := runOps(t, s, "memory", "main", "--history")
	version := strings.Fields(strings.TrimSpace(out))[0]
	for _, args := range [][]string{
		{"memory", "main", "--restore", version},
		{"rename", "main", "20260302T043000Z", "Opening", "gap"},
		{"skills", "main", "--undo", "c1"},
	} {
		if code, out, errOut := runOps(t, s, args...); code != 0 {
			t.Fatalf("deskd %s = %d %q %q", strings.Join(args, " "), code, out, errOut)
		}
	}
	_ = code
	if err := filepath.WalkDir(s.DeskDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s is owned by %d:%d after the root CLI, want the desk's %d:%d", p, st.Uid, st.Gid, uid, gid)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
