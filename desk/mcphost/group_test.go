package mcphost_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/desk/mcphost"
	"github.com/deskd/deskd/desk/mcptest"
)

// TestServersChildrenEndWithIt: a process a stdio server left in its
// process group ends with the server, when deskd stops it (though the
// server itself exits at once at the end of its stdin) and when it
// crashes: no helper outlives its server.
func TestServersChildrenEndWithIt(t *testing.T) {
	for _, how := range []string{"close", "crash"} {
		t.Run(how, func(t *testing.T) {
			r := newRig(t)
			srv := mcptest.Stdio(t)
			pidFile := filepath.Join(t.TempDir(), "child.pid")
			srv.Env[mcptest.EnvChild] = pidFile
			r.serve(srv)
			child := pidIn(t, pidFile)
			switch how {
			case "close":
				if err := r.host.Close(); err != nil {
					t.Fatal(err)
				}
			case "crash":
				ts := r.toolset(srv.Name)
				if _, err := call(t, tool(t, ts, "mcp__stdio__crash"), map[string]any{}); err == nil {
					t.Fatal("crash answered")
				}
			}
			if err := mcptest.WaitExit(child, 30*time.Second); err != nil {
				t.Fatalf("the server's child outlived it: %v", err)
			}
		})
	}
}

// TestATimeoutChangeKeepsTheServer: a reload that changes only what deskd
// itself uses of a server (timeout, max_result) does not restart it (a
// call in flight or waiting for approval is not cut off); the next call
// takes the new timeout.
func TestATimeoutChangeKeepsTheServer(t *testing.T) {
	r, srv := serveStdio(t)
	pid := r.status("stdio").PID

	changed := *srv
	changed.Timeout, changed.MaxResult = 7*time.Second, 1000
	r.host.Configure(map[string]*config.MCPServer{"stdio": &changed})
	if st := r.status("stdio"); st.PID != pid || st.Restarts != 0 || st.State != mcphost.StateUp {
		t.Fatalf("a timeout change restarted the server: %+v (its process was %d)", st, pid)
	}
	ts := r.toolset("stdio")
	if big := tool(t, ts, "mcp__stdio__big"); big.MaxResult != 1000 {
		t.Errorf("max_result after the reload: %d, want 1000", big.MaxResult)
	}
	r.timesOut(tool(t, ts, "mcp__stdio__slow"), 7*time.Second)
}

// TestHideKeepsOrdinaryWords: every value of the headers file and a
// bearer's token are hidden in what a server echoes, but not the scheme's
// name, nor the words of a value (review: "Bearer" read [secret] in every
// result).
func TestHideKeepsOrdinaryWords(t *testing.T) {
	cfg := &config.MCPServer{Name: "x", Secrets: config.MCPSecrets{
		Headers: map[string][]string{"Authorization": {"Bearer tok-0123456789"}, "Accept": {"application/json"}, "X-Api-Key": {"k-abcdefgh"},
			"X-Desk": {"fx options-desk"}},
		Env: map[string]string{"BROKER_KEY": "env-secret-1"},
	}}
	got := mcphost.Hide(cfg, "use a Bearer token tok-0123456789 as application/json; key k-abcdefgh, env env-secret-1; the options-desk")
	want := "use a Bearer token [secret] as [secret]; key [secret], env [secret]; the options-desk"
	if got != want {
		t.Errorf("Hide = %q\nwant   %q", got, want)
	}
}
