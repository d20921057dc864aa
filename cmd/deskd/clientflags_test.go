package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/triggers"
)

// cliWithToken returns a function that runs a deskd command against the
// API at url with the token in a token file, and returns its exit code,
// output and error output.
func cliWithToken(t *testing.T, url, token string) func(args ...string) (int, string, string) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cliWith(t, "--addr", url, "--token-file", tokenFile)
}

// cliWith returns a function that runs a deskd command in process with
// flags after its own arguments (the API's --addr, a token file) and
// returns its exit code, output and error output.
func cliWith(t *testing.T, flags ...string) func(args ...string) (int, string, string) {
	return func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(t.Context(), append(args, flags...), &out, &errb)
		return code, out.String(), errb.String()
	}
}

// TestClientCommands: status, trigger --wait, rollover and events against
// the API, as the CLI runs them.
func TestClientCommands(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "tok"})
	cli := cliWithToken(t, h.URL(), "tok")
	code, out, errs := cli("trigger", "main", "What is the plan?", "--id", "q1", "--wait", "--timeout", "10s")
	if code != 0 || !strings.Contains(out, "q1: answered, session ") || !strings.Contains(out, "[scripted]") {
		t.Errorf("trigger --wait = %d\n%s%s", code, out, errs)
	}
	if s, _ := h.Desk.Trigger("q1"); s.Kind != triggers.Market || s.Source != "cli" {
		t.Errorf("the CLI's trigger = %+v, want market (the default) from cli", s)
	}
	code, out, _ = cli("trigger", "main", "What is the plan?", "--id", "q1")
	if code != 0 || !strings.Contains(out, "q1: already known, answered") {
		t.Errorf("trigger again = %d %s", code, out)
	}
	code, out, errs = cli("status")
	if code != 0 || !strings.Contains(out, "DESK") || !strings.Contains(out, "main") || !strings.Contains(out, "idle") {
		t.Errorf("status = %d\n%s%s", code, out, errs)
	}
	code, out, _ = cli("status", "--json")
	if st := httpapitest.Decode[httpapi.DesksResponse](t, out); code != 0 || len(st.Desks) != 1 || st.Desks[0].Exchanges != 1 {
		t.Errorf("status --json = %d %s", code, out)
	}
	code, out, errs = cli("rollover", "main")
	if code != 0 || !strings.Contains(out, "desk main: session ") {
		t.Errorf("rollover = %d %s%s", code, out, errs)
	}
	code, out, errs = cli("events")
	if code != 0 || !strings.Contains(out, `"topic":"turn.completed"`) || !strings.Contains(out, `"topic":"session.started"`) {
		t.Errorf("events = %d\n%s%s", code, out, errs)
	}
	code, _, errs = cli("trigger", "main", "Plan the day.", "--kind", "manual", "--id", "q2", "--wait", "--timeout", "10s")
	if s, _ := h.Desk.Trigger("q2"); code != 0 || s.Kind != triggers.Manual {
		t.Errorf("trigger --kind manual with the operator's token = %d %s, %+v", code, errs, s)
	}
	code, _, errs = cli("trigger", "nope", "x")
	if code != 2 || !strings.Contains(errs, `unknown desk \"nope\"`) && !strings.Contains(errs, `unknown desk "nope"`) {
		t.Errorf("trigger to an unknown desk = %d %s", code, errs)
	}
	var out2, errb bytes.Buffer
	if code := run(t.Context(), []string{"trigger", "main", "x", "--addr", h.URL()}, &out2, &errb); code != 1 || !strings.Contains(errb.String(), "401") {
		t.Errorf("trigger without the token = %d %s", code, errb.String())
	}
}

// TestClientFeedToken: a feed script that uses the CLI with a feed's
// token sends market triggers; --kind manual is refused with the reason.
func TestClientFeedToken(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "op-token", FeedToken: "feed-token"})
	cli := cliWithToken(t, h.URL(), "feed-token")
	code, out, errs := cli("trigger", "main", "NIFTY 22000", "--id", "f1", "--wait", "--timeout", "10s")
	if s, _ := h.Desk.Trigger("f1"); code != 0 || !strings.Contains(out, "f1: answered") || s.Kind != triggers.Market || s.Source != "feed:cli" {
		t.Errorf("trigger with a feed's token = %d %s%s, %+v; want a market trigger from feed:cli", code, out, errs, s)
	}
	code, _, errs = cli("trigger", "main", "Sell everything", "--kind", "manual", "--id", "f2")
	if _, known := h.Desk.Trigger("f2"); code != 1 || !strings.Contains(errs, "403") || !strings.Contains(errs, "operator's credential") || known {
		t.Errorf("trigger --kind manual with a feed's token = %d %s (queued: %v), want refused with 403", code, errs, known)
	}
	if code, _, errs = cli("status"); code != 1 || !strings.Contains(errs, "403") {
		t.Errorf("status with a feed's token = %d %s, want refused with 403", code, errs)
	}
}

// TestClientUnixSocketNeedsNoToken: the CLI finds the unix socket in the
// config and needs no token over it: a member of deskd's group who cannot
// read auth_token_file gets in.
func TestClientUnixSocketNeedsNoToken(t *testing.T) {
	h := httpapitest.Start(t, httpapitest.Options{Token: "op-token"})
	sock := h.ServeUnix().Addrs()[0]
	dir := t.TempDir()
	cfg := filepath.Join(dir, "deskd.yaml")
	if err := os.WriteFile(cfg, []byte("listen: [\"127.0.0.1:7317\", \""+sock+"\"]\nauth_token_file: "+filepath.Join(dir, "unreadable")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"status", "--config", cfg}, &out, &errb); code != 0 || !strings.Contains(out.String(), "main") {
		t.Errorf("deskd status over the socket, the token file unreadable = %d\n%s%s", code, out.String(), errb.String())
	}
}

// TestPickAddr: the CLI prefers the config's unix socket, then its first
// TCP address, then the default.
func TestPickAddr(t *testing.T) {
	for _, tt := range []struct {
		listens []string
		want    string
	}{
		{[]string{"127.0.0.1:7317", "unix:/run/deskd/api.sock"}, "unix:/run/deskd/api.sock"},
		{[]string{"127.0.0.1:7000", "127.0.0.1:7001"}, "127.0.0.1:7000"},
		{nil, "127.0.0.1:7317"},
	} {
		if got := pickAddr(tt.listens); got != tt.want {
			t.Errorf("pickAddr(%q) = %q, want %q", tt.listens, got, tt.want)
		}
	}
}
