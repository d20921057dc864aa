package mcphost_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
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
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			child, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			switch how {
			case "close":
				if err := r.host.Close(); err != nil {
					t.Fatal(err)
				}
			case "crash":
				ts := r.host.Toolset("d", map[string]config.DeskMCP{srv.Name: {Server: srv.Name, Tools: []string{"*"}}})
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
