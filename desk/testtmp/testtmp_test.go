package testtmp_test

import (
	"os"
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
