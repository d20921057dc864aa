package main

import (
	"os"
	"os/user"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/router/routertest"
)

// TestAckE2E: a turn cut off by a second SIGTERM leaves its trigger
// interrupted; after a restart `deskd status` lists it, `deskd ack`
// acknowledges it (by the operator, with the note), and after another
// restart status no longer lists it and its GET keeps the acknowledgement.
// In process; it sets the fake model's key in the environment, so it is
// not parallel.
func TestAckE2E(t *testing.T) {
	t.Setenv("DESKD_E2E_KEY", "test-key")
	deadline := time.Now().Add(90 * time.Second)
	llm, _ := newFakeLLM(t, "HOLD")
	cfg := apiConfig(t, t.TempDir(), openAIModel(llm), "", "")

	d := startInProcess(t, "first deskd", cfg, apiStart)
	if s, a := d.post(t, `{"text": "HOLD the book", "id": "cut", "kind": "manual"}`); s != 202 || a.ID != "cut" {
		t.Fatalf("POST cut = %d %+v", s, a)
	}
	llm.Await(t, routertest.UserContains("HOLD the book"))
	d.cutStopShort(t, deadline)
	d.waitFor(t, deadline, "turn.interrupted of cut", isEvent("turn.interrupted", "trigger", "cut"))
	if code := d.wait(t, 60*time.Second); code != 0 {
		d.fail(t, "exit status %d, want 0", code)
	}

	d = startInProcess(t, "second deskd", cfg, apiStart.Add(time.Minute))
	addr := strings.TrimPrefix(d.URL(t), "http://")
	if code, out := deskdCLI(t, "status", "--addr", addr); code != 0 || !strings.Contains(out, "1 interrupted trigger") || !strings.Contains(out, "  cut  manual") {
		t.Fatalf("status before the ack = %d\n%s", code, out)
	}
	if code, out := deskdCLI(t, "ack", "main", "nope", "--addr", addr); code != 1 || !strings.Contains(out, `no trigger "nope"`) {
		t.Errorf("ack of an unknown trigger = %d %s", code, out)
	}
	code, out := deskdCLI(t, "ack", "main", "cut", "--note", "no order reached the broker", "--addr", addr)
	me := operator()
	if code != 0 || !strings.Contains(out, "trigger cut of desk main acknowledged by "+me+" at ") || !strings.Contains(out, ": no order reached the broker") {
		t.Fatalf("ack = %d %s", code, out)
	}
	d.waitFor(t, deadline, "trigger.acknowledged", isEvent("trigger.acknowledged", "trigger", "cut", "by", me, "note", "no order reached the broker"))
	if code, out := deskdCLI(t, "ack", "main", "cut", "--by", "ravi", "--addr", addr); code != 0 || !strings.Contains(out, "was already acknowledged by "+me) {
		t.Errorf("ack again = %d %s", code, out)
	}
	d.terminate(t)

	d = startInProcess(t, "third deskd", cfg, apiStart.Add(2*time.Minute))
	addr = strings.TrimPrefix(d.URL(t), "http://")
	if code, out := deskdCLI(t, "status", "--addr", addr); code != 0 || strings.Contains(out, "interrupted") || strings.Contains(out, "cut") {
		t.Errorf("status after the ack and a restart = %d\n%s", code, out)
	}
	tr := d.trigger(t, "cut")
	ack, _ := tr["acknowledged"].(map[string]any)
	if tr["state"] != "interrupted" || ack["by"] != me || ack["note"] != "no order reached the broker" || ack["at"] == "" {
		t.Errorf("cut after the restart = %v", tr)
	}
	if n := userCount(llm, "HOLD the book"); n != 1 {
		t.Errorf("cut's text reached the model %d times, want 1", n)
	}
}

// TestOperatorUnderSudo: under sudo as root, the operator is the user who
// ran sudo, marked so; otherwise the login name.
func TestOperatorUnderSudo(t *testing.T) {
	root := func() (*user.User, error) { return &user.User{Uid: "0", Username: "root"}, nil }
	alice := func() (*user.User, error) { return &user.User{Uid: "1000", Username: "alice"}, nil }
	none := func() (*user.User, error) { return nil, os.ErrNotExist }
	tests := []struct {
		name         string
		current      func() (*user.User, error)
		sudo, envUsr string
		want         string
	}{
		{"root under sudo", root, "alice", "", "alice (via sudo)"},
		{"root, no sudo", root, "", "", "root"},
		{"root sudo to root", root, "root", "", "root"},
		{"a user with SUDO_USER set", alice, "bob", "", "alice"},
		{"no user: $USER", none, "", "carol", "carol"},
		{"nothing known", none, "", "", "cli"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SUDO_USER", tt.sudo)
			t.Setenv("USER", tt.envUsr)
			if got := operatorOf(tt.current, os.Getenv); got != tt.want {
				t.Errorf("operatorOf = %q, want %q", got, tt.want)
			}
		})
	}
}
