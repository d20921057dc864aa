package testtmp_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/testtmp"
)

var rootBefore = os.Getenv("TMPDIR")

func TestMain(m *testing.M) { os.Exit(testtmp.Run(m)) }

// TestScratchIsOnTheTmpfs: with TMPDIR and DESKD_TEST_DISK unset on a
// machine with the tmpfs, t.TempDir is under a folder of its own there.
func TestScratchIsOnTheTmpfs(t *testing.T) {
	if rootBefore != "" || os.Getenv(testtmp.DiskEnv) != "" {
		t.Skipf("TMPDIR (%q) or %s set: the scratch folders stay where they are", rootBefore, testtmp.DiskEnv)
	}
	if fi, err := os.Stat(testtmp.Root); err != nil || !fi.IsDir() {
		t.Skipf("no %s here", testtmp.Root)
	}
	dir := t.TempDir()
	parent := filepath.Dir(filepath.Dir(dir)) // t.TempDir is <TMPDIR>/<test>NNN/NNN
	if filepath.Dir(parent) != testtmp.Root || !strings.HasPrefix(filepath.Base(parent), "deskd-test-") {
		t.Fatalf("t.TempDir() = %s, want it under a deskd-test- folder of %s", dir, testtmp.Root)
	}
}

// TestSweepRemovesTheFoldersOfGoneBinaries: a scratch folder whose binary
// has exited is removed; one of a live process (this one, pid 1), one
// whose name carries no pid, and other files are left.
func TestSweepRemovesTheFoldersOfGoneBinaries(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("no process to outlive: %v", err)
	}
	root := t.TempDir()
	mk := func(name string) string {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(p, "inner"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := mk(fmt.Sprintf("deskd-test-%d-123", gone.Process.Pid))
	kept := []string{
		mk(fmt.Sprintf("deskd-test-%d-456", os.Getpid())),
		mk("deskd-test-1-789"),
		mk("deskd-test-4035993188"),
		mk("other-1-2"),
	}
	testtmp.Sweep(root)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s, of an exited binary, is still there (%v)", dead, err)
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}
