package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/httpapi"
)

// writeFile writes data to name in dir at mode 0600 and returns its path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReachDial: Reach.Dial takes what it was given before the config's
// main file, finds the rest there, and does not read the config's token
// for a unix socket.
func TestReachDial(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "operator.token", "config-token\n")
	given := writeFile(t, dir, "given.token", "given-token\n")
	tcp := writeFile(t, dir, "tcp.yaml", "listen: 127.0.0.1:7499\nauth_token_file: operator.token\n")
	unix := writeFile(t, dir, "unix.yaml", "listen: unix:"+filepath.Join(dir, "deskd.sock")+"\nauth_token_file: operator.token\n")
	missing := filepath.Join(dir, "missing.yaml")
	for _, tt := range []struct {
		name      string
		r         httpapi.Reach
		url, tok  string // the URL of a unix socket's requests is http://deskd
		wantFound bool
	}{
		{"the config's listen and token", httpapi.Reach{Config: tcp}, "http://127.0.0.1:7499", "config-token", true},
		{"the address and token given", httpapi.Reach{Addr: "127.0.0.1:7501", TokenFile: given, Config: tcp}, "http://127.0.0.1:7501", "given-token", false},
		{"the address given, the config's token", httpapi.Reach{Addr: "127.0.0.1:7501", Config: tcp}, "http://127.0.0.1:7501", "config-token", false},
		{"the address given, no config", httpapi.Reach{Addr: "127.0.0.1:7501", Config: missing}, "http://127.0.0.1:7501", "", false},
		{"a unix socket: the config's token is not read", httpapi.Reach{Config: unix}, "http://deskd", "", true},
		{"a unix socket with a token given", httpapi.Reach{Config: unix, TokenFile: given}, "http://deskd", "given-token", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var notes []string
			tt.r.Pick, tt.r.Notes = first, func(n string) { notes = append(notes, n) }
			c, err := tt.r.Dial(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if c.URL() != tt.url || c.Token != tt.tok {
				t.Errorf("Dial = %s with token %q, want %s with token %q", c.URL(), c.Token, tt.url, tt.tok)
			}
			if (c.Found != "") != tt.wantFound {
				t.Errorf("Found = %q, want it set: %v", c.Found, tt.wantFound)
			}
		})
	}
}

// TestReachDialErrors: nothing to find the daemon by, and a token file
// that cannot be read, are errors naming what failed.
func TestReachDialErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		r    httpapi.Reach
		want string
	}{
		{"no address and no config", httpapi.Reach{Config: filepath.Join(dir, "missing.yaml"), Pick: first}, "find the daemon (give --addr, or a readable --config): "},
		{"an unreadable token file", httpapi.Reach{Addr: "127.0.0.1:7501", TokenFile: filepath.Join(dir, "none.token")}, "read auth token from " + filepath.Join(dir, "none.token")},
		{"an address it cannot dial", httpapi.Reach{Addr: "deskd-host", TokenFile: filepath.Join(dir, "none.token")}, `daemon address "deskd-host"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.r.Dial(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Dial = %v, %v; want an error with %q", c, err, tt.want)
			}
		})
	}
}
