package httpapi_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
)

// first picks the first address, as a stand-in for the CLI's choice.
func first(addrs []string) string { return addrs[0] }

// TestRuntimeFile: WriteRuntime writes the runtime file at mode 0640 for
// ReadRuntime, and its remover removes it.
func TestRuntimeFile(t *testing.T) {
	dir := t.TempDir()
	want := httpapi.Runtime{PID: os.Getpid(), Listen: []string{"127.0.0.1:7400", "unix:/run/deskd.sock"}, Config: "/etc/deskd/deskd.yaml",
		StartedAt: time.Date(2026, 3, 2, 0, 5, 0, 0, time.UTC), Version: "v1"}
	remove, err := httpapi.WriteRuntime(dir, want)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, httpapi.RuntimeFile))
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("the runtime file: %v, %v; want mode 0640", fi, err)
	}
	got, err := httpapi.ReadRuntime(dir)
	if err != nil || got.PID != want.PID || strings.Join(got.Listen, " ") != strings.Join(want.Listen, " ") || got.Config != want.Config ||
		!got.StartedAt.Equal(want.StartedAt) || got.Version != want.Version || !got.Alive() {
		t.Fatalf("ReadRuntime = %+v, %v; want %+v, alive", got, err, want)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.ReadRuntime(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadRuntime after the remover = %v, want fs.ErrNotExist", err)
	}
	if err := remove(); err != nil {
		t.Errorf("a second remove = %v, want nil", err)
	}
	if err := os.WriteFile(httpapi.RuntimePath(dir), []byte("{not json"), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.ReadRuntime(dir); err == nil || !strings.Contains(err.Error(), httpapi.RuntimePath(dir)) {
		t.Errorf("ReadRuntime of a damaged file = %v, want an error naming it", err)
	}
}

// TestLocate: the CLI dials what the runtime file of a live deskd names,
// with a note when the config's listen differs or names another config; a
// stale runtime file (dead pid) or one whose address does not answer is
// ignored with a note; with none, the config's listen, saying where it
// looked.
func TestLocate(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{})
	served := strings.TrimPrefix(h.URL(), "http://")
	dir := t.TempDir()
	cc := config.Client{Listens: []string{"127.0.0.1:7400"}, StateDir: dir, Path: "/etc/deskd/deskd.yaml"}

	loc := httpapi.Locate(t.Context(), cc, "127.0.0.1:7400", first)
	if loc.Addr != "127.0.0.1:7400" || len(loc.Notes) != 0 || !strings.Contains(loc.Looked, httpapi.RuntimePath(dir)) {
		t.Errorf("no runtime file: %+v, want the config's listen, no notes, and where it looked", loc)
	}
	// Something answers at the config's listen, but no runtime file says
	// it is this config's deskd: the CLI says so.
	loc = httpapi.Locate(t.Context(), cc, served, first)
	if loc.Addr != served || len(loc.Notes) != 1 || !strings.Contains(loc.Notes[0], "a deskd answers at "+served+", the config's listen, but no runtime file at "+httpapi.RuntimePath(dir)+" vouches") {
		t.Errorf("no runtime file, a deskd at the config's listen: %+v, want its address and a note that nothing vouches for it", loc)
	}

	if _, err := httpapi.WriteRuntime(dir, httpapi.Runtime{PID: os.Getpid(), Listen: []string{served}, Config: "/srv/other.yaml"}); err != nil {
		t.Fatal(err)
	}
	loc = httpapi.Locate(t.Context(), cc, "127.0.0.1:7400", first)
	if loc.Addr != served || loc.Runtime == nil || len(loc.Notes) != 2 ||
		loc.Notes[0] != "note: the running deskd (pid "+itoa(os.Getpid())+") serves "+served+"; the config's listen 127.0.0.1:7400 takes effect at its next restart" ||
		!strings.Contains(loc.Notes[1], "runs the config /srv/other.yaml, not /etc/deskd/deskd.yaml") {
		t.Errorf("a live deskd on another address: %+v", loc)
	}
	same := cc
	same.Listens, same.Path = []string{served}, "/srv/other.yaml"
	if loc := httpapi.Locate(t.Context(), same, served, first); loc.Addr != served || len(loc.Notes) != 0 {
		t.Errorf("a live deskd on the config's listen: %+v, want no notes", loc)
	}

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("no process to outlive: %v", err)
	}
	if _, err := httpapi.WriteRuntime(dir, httpapi.Runtime{PID: dead.Process.Pid, Listen: []string{served}}); err != nil {
		t.Fatal(err)
	}
	loc = httpapi.Locate(t.Context(), cc, "127.0.0.1:7400", first)
	if loc.Addr != "127.0.0.1:7400" || len(loc.Notes) != 1 || !strings.Contains(loc.Notes[0], "which is not running") {
		t.Errorf("a stale runtime file: %+v, want the config's listen and a note", loc)
	}

	h.Server.Close()
	if _, err := httpapi.WriteRuntime(dir, httpapi.Runtime{PID: os.Getpid(), Listen: []string{served}}); err != nil {
		t.Fatal(err)
	}
	loc = httpapi.Locate(t.Context(), cc, "127.0.0.1:7400", first)
	if loc.Addr != "127.0.0.1:7400" || len(loc.Notes) != 1 || !strings.Contains(loc.Notes[0], "does not answer") || !strings.Contains(loc.Looked, served) {
		t.Errorf("a runtime file whose address does not answer: %+v", loc)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
