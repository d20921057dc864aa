package httpapi_test

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/triggers"
)

// TestAPIUnixSocketIsOperator: over the unix socket (mode 0660: only
// deskd's group opens it) a request carries the operator's trust without a
// token; over TCP the same request needs the token.
func TestAPIUnixSocketIsOperator(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "op-token", FeedToken: "feed-token"})
	srv := h.ServeUnix()
	got := srv.Addrs()
	if len(got) != 1 || !strings.HasPrefix(got[0], "unix:") || filepath.Base(got[0]) != "api.sock" {
		t.Fatalf("Addrs = %v, want [unix:.../api.sock]: the socket's path, not its staging path", got)
	}
	sock := strings.TrimPrefix(got[0], "unix:")
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o660 {
		t.Errorf("the socket's mode = %v, %v; want 0660", fi.Mode(), err)
	}
	c, err := httpapi.Dial("unix:" + sock)
	if err != nil {
		t.Fatal(err)
	}
	if list, err := c.Desks(t.Context()); err != nil || len(list.Desks) != 1 {
		t.Errorf("GET /v1/desks over the socket without a token: %v %+v", err, list)
	}
	if acc, err := c.PostTrigger(t.Context(), "main", triggers.Request{Text: "plan the day", Kind: triggers.Manual, ID: "sock-1"}); err != nil || acc.ID != "sock-1" {
		t.Errorf("a manual trigger over the socket without a token: %v %+v", err, acc)
	}
	c.Token = "feed-token" // the socket is the operator's whatever token comes with it
	if _, err := c.RollOver(t.Context(), "main"); err != nil {
		t.Errorf("a rollover over the socket: %v", err)
	}
	if status, _, _ := h.Call("GET", "/v1/desks", ""); status != http.StatusUnauthorized {
		t.Errorf("GET /v1/desks over TCP without a token = %d, want 401", status)
	}
}

// TestListenUnixIsNeverOpen: under a permissive umask, the API's socket
// is made where no other user can reach it and only then moved into
// place at mode 0660; nothing staged is left beside it, and closing the
// listener removes the socket.
func TestListenUnixIsNeverOpen(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := httpapitest.SocketDir(t)
	sock := filepath.Join(dir, "api.sock")
	ls, err := httpapi.Listen([]string{"unix:" + sock})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o660 {
		t.Errorf("the socket = %v, %v; want a socket of mode 0660", fi, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("the folder holds %v (%v), want only the socket: the staging folder is left", entries, err)
	}
	if err := ls[0].Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket after Close: %v, want it removed", err)
	}
}

// TestListenRefuses: a socket path held by a live listener, or by a file
// that is not a socket, is refused, and the addresses opened before it
// are closed again; a stale socket left by a crash is replaced.
func TestListenRefuses(t *testing.T) {
	dir := httpapitest.SocketDir(t)
	live := filepath.Join(dir, "live.sock")
	ls, err := httpapi.Listen([]string{"unix:" + live})
	if err != nil {
		t.Fatal(err)
	}
	defer ls[0].Close()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(dir, "first.sock")
	for _, tt := range []struct{ name, path string }{{"in use", live}, {"not a socket", plain}} {
		if got, err := httpapi.Listen([]string{"unix:" + first, "unix:" + tt.path}); err == nil {
			t.Errorf("%s: Listen = %v, want an error", tt.name, got)
		}
		if _, err := os.Lstat(first); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the first socket is left after the failure: %v", tt.name, err)
		}
	}

	// A crash leaves the socket file: Listen replaces it.
	stale := filepath.Join(dir, "stale.sock")
	ls2, err := httpapi.Listen([]string{"unix:" + stale})
	if err != nil {
		t.Fatal(err)
	}
	ul := ls2[0]
	if err := os.Link(stale, stale+".kept"); err != nil {
		t.Fatal(err)
	}
	_ = ul.Close() // removes stale; put the file back as a crash leaves it
	if err := os.Rename(stale+".kept", stale); err != nil {
		t.Fatal(err)
	}
	ls3, err := httpapi.Listen([]string{"unix:" + stale})
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	_ = ls3[0].Close()
}
