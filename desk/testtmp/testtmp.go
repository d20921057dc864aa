// Package testtmp keeps a test binary's scratch folders (t.TempDir,
// os.MkdirTemp) on a tmpfs when the machine has one, so that the suite's
// many fsyncs cost what a test needs, not a disk's cache flush: deskd
// fsyncs every record it keeps, and on this project's 2-core machine the
// quick loop spent more time in fsync than in its own code. What the tests
// check of crash safety does not depend on the disk: the crash and fault
// tests inject their faults (memory/durable/faultfs) or copy a folder as a
// kill would leave it.
package testtmp

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// DiskEnv names the variable that, set to any value, keeps the scratch
// folders where TMPDIR (or the system's default) puts them: for a run of
// the suite on the disk itself.
const DiskEnv = "DESKD_TEST_DISK"

// Root is where the scratch folder is made: the tmpfs Linux mounts for
// POSIX shared memory.
const Root = "/dev/shm"

// Run runs m's tests with TMPDIR set to a new folder under Root, and
// removes the folder afterwards; it returns m.Run's code. It leaves
// TMPDIR alone, and only runs m, when TMPDIR is set already (the caller
// chose), when DiskEnv is set, or when Root is no tmpfs it can write to.
// A child process the tests start (deskd itself) inherits the TMPDIR.
func Run(m *testing.M) int {
	dir, err := scratch()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testtmp: scratch folders stay in %s: %v\n", os.TempDir(), err)
	}
	if dir != "" {
		defer func() { _ = os.RemoveAll(dir) }()
	}
	return m.Run()
}

// scratch makes the folder under Root and points TMPDIR at it; "" when
// the scratch folders stay where they are (err says why when that was
// not the caller's choice).
func scratch() (string, error) {
	if os.Getenv("TMPDIR") != "" || os.Getenv(DiskEnv) != "" {
		return "", nil
	}
	if ok, err := isTmpfs(Root); err != nil || !ok {
		return "", nil // no tmpfs here: nothing to say
	}
	Sweep(Root)
	dir, err := os.MkdirTemp(Root, prefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("make a folder in %s: %w", Root, err)
	}
	if err := os.Setenv("TMPDIR", dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("set TMPDIR to %s: %w", dir, err)
	}
	return dir, nil
}

// prefix starts the name of a scratch folder, deskd-test-<pid>-<random>:
// the pid of the test binary that made it.
const prefix = "deskd-test-"

// Sweep removes the scratch folders under root whose test binaries are
// gone: a binary that panicked or was killed never removed its own. A
// folder of a live process, or whose name carries no pid, is left. Run
// sweeps Root before it makes its own folder.
func Sweep(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(root, e.Name()))
	}
}
