package main

// deskd trigger on a cluster whose hosts have tokens: the owner a 421
// names proves it holds the CLI's token (GET /v1/proof) before the CLI
// sends it there, through two deskd binaries on a three-node JetStream
// cluster.

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/desk/natstest"
)

// TestTriggerProofE2E: hosts a and b share the operator's token and each
// has a feed token of its own. deskd trigger --wait with the operator's
// token through the standby b follows its 421 to a, which proves the
// token (its cluster.host is the owner the 421 names) and answers. With
// b's feed token, which a does not hold, the 421 is not followed: exit 1
// naming a's address and why, and a never saw the trigger.
func TestTriggerProofE2E(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(90 * time.Second)
	dir := t.TempDir()
	for name, tok := range map[string]string{"op": "proof-e2e-operator", "feed-a": "proof-e2e-feed-a", "feed-b": "proof-e2e-feed-b"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := natstest.StartCluster(t, 3)
	procs := map[string]*deskdProc{}
	for _, host := range []string{"a", "b"} { // a first: it wins the desk
		cfg := clusterConfig(t, c, host)
		text, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		text = append(text, "auth_token_file: "+filepath.Join(dir, "op")+"\nfeed_token_file: "+filepath.Join(dir, "feed-"+host)+"\n"...)
		if err := os.WriteFile(cfg, text, 0o644); err != nil {
			t.Fatal(err)
		}
		d := startDeskd(t, "deskd-"+host, "run", "--config", cfg)
		d.waitReady(t)
		d.waitFor(t, deadline, "host "+host+" taking its part", func(l stderrLine) bool {
			return host == "a" && deskRunsHere(l) ||
				l.Str("message") == "cluster: standing by for the desk, which another host owns" && l.Str("owner") == "a"
		})
		procs[host] = d
	}
	a, b := procs["a"], procs["b"]
	aURL := a.URL(t)

	code, out := deskdCLI(t, "trigger", "main", "Check the tape.", "--id", "p1", "--wait", "--timeout", "1m", "--addr", b.URL(t), "--token-file", filepath.Join(dir, "op"))
	if code != 0 || !strings.Contains(out, "p1: answered") || !strings.Contains(out, "its owner is host a: sent to "+aURL) {
		t.Fatalf("deskd trigger --wait with the shared token through the standby = %d\n%s\nwant followed to %s and answered", code, out, aURL)
	}

	code, out = deskdCLI(t, "trigger", "main", "BANKNIFTY 48000", "--id", "p2", "--addr", b.URL(t), "--token-file", filepath.Join(dir, "feed-b"))
	if code != 1 || !strings.Contains(out, "host a at "+aURL+", as a 421 named it, does not prove it holds this client's token: not following the 421") ||
		!strings.Contains(out, "GET /v1/proof answered 403") {
		t.Errorf("deskd trigger with b's feed token through the standby = %d\n%s\nwant exit 1: a does not prove that token", code, out)
	}
	if status, body := a.call(t, http.MethodGet, "/v1/desks/main/triggers/p2", "proof-e2e-operator", ""); status != http.StatusNotFound {
		t.Errorf("p2 on the owner = %d %s, want 404: never sent there", status, body)
	}
}
