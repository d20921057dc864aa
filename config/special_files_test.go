package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/memory/durable/faultfs"
)

// within runs f and fails the test if it has not returned within 10s.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s has not returned after 10s: it blocks", what)
		return nil
	}
}

// loadWithin is config.Load, failing the test if it blocks.
func loadWithin(t *testing.T, path string) error {
	t.Helper()
	return within(t, "Load", func() error { _, err := config.Load(path); return err })
}

// hasProblem reports whether ps has a problem of file (and field, when
// not "") whose reason holds reason.
func hasProblem(ps config.Problems, file, field, reason string) bool {
	for _, p := range ps {
		if p.File == file && (field == "" || p.Field == field) && strings.Contains(p.Reason, reason) {
			return true
		}
	}
	return false
}

// TestSpecialFiles: a config file, or a file it names, that is not a
// regular file (a FIFO, a link to one) is a problem that names the file
// and says what it is; Load and ReadClient never wait on it. A config
// file over the size limit is refused too.
func TestSpecialFiles(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir string) // dir holds deskd.yaml and desks.d/main.yaml
		file  string                         // the file the problem names, relative to dir
		field string
		want  string
	}{
		{"FIFO desk file", func(t *testing.T, dir string) {
			faultfs.Mkfifo(t, filepath.Join(dir, "desks.d", "pipe.yaml"))
		}, "desks.d/pipe.yaml", "", "cannot read: it is a named pipe (FIFO), not a regular file"},
		{"desk file linked to a FIFO", func(t *testing.T, dir string) {
			faultfs.Mkfifo(t, filepath.Join(dir, "elsewhere", "fifo"))
			if err := os.Symlink(filepath.Join(dir, "elsewhere", "fifo"), filepath.Join(dir, "desks.d", "linked.yaml")); err != nil {
				t.Fatal(err)
			}
		}, "desks.d/linked.yaml", "", "a named pipe (FIFO), not a regular file"},
		{"FIFO main file", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "deskd.yaml")); err != nil {
				t.Fatal(err)
			}
			faultfs.Mkfifo(t, filepath.Join(dir, "deskd.yaml"))
		}, "deskd.yaml", "", "cannot read: it is a named pipe (FIFO), not a regular file"},
		{"FIFO calendar file", func(t *testing.T, dir string) {
			faultfs.Mkfifo(t, filepath.Join(dir, "calendars.d", "BSE.yaml"))
		}, "calendars.d/BSE.yaml", "", "cannot read: it is a named pipe (FIFO), not a regular file"},
		{"FIFO instructions_file", func(t *testing.T, dir string) {
			faultfs.Mkfifo(t, filepath.Join(dir, "desks.d", "brief.md"))
			writeFiles(t, dir, map[string]string{"desks.d/main.yaml": "model: offline\ninstructions_file: brief.md\n"})
		}, "desks.d/main.yaml", "instructions_file", "brief.md is a named pipe (FIFO), not a regular file"},
		{"desk file over 4 MiB", func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{"desks.d/big.yaml": baseDesk + "# " + strings.Repeat("x", 4<<20) + "\n"})
		}, "desks.d/big.yaml", "", "cannot read: it is larger than 4194304 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk})
			dir := filepath.Dir(path)
			tt.setup(t, dir)
			ps := problemsOf(t, loadWithin(t, path))
			file := filepath.Join(dir, filepath.FromSlash(tt.file))
			if !hasProblem(ps, file, tt.field, tt.want) {
				t.Errorf("Load: problems\n%v\nwant one of %s (field %q) saying %q", ps, file, tt.field, tt.want)
			}
		})
	}
}

// TestSpecialMainFileClient: ReadClient (what deskd's CLI reads) does not
// wait on a FIFO main file either.
func TestSpecialMainFileClient(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "deskd.yaml")
	faultfs.Mkfifo(t, path)
	err := within(t, "ReadClient", func() error { _, err := config.ReadClient(path); return err })
	ps := problemsOf(t, err)
	if !hasProblem(ps, path, "", "named pipe (FIFO)") {
		t.Errorf("ReadClient: %v, want a problem of %s saying it is a named pipe", ps, path)
	}
}
