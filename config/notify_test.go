package config_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
)

// notifySecret is a valid Standard Webhooks secret (32 bytes).
const notifySecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo="

// TestNotifyDefaults: a target takes format standard, the default events
// and give_up_after 24h; its secret file resolves beside the main file and
// its key reads; console_url loses its trailing /; a desk's answers name
// targets.
func TestNotifyDefaults(t *testing.T) {
	c := mustLoad(t, setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk}))
	if c.Notify != nil || c.ConsoleURL != "" {
		t.Fatalf("no notify section: Notify = %v, ConsoleURL %q", c.Notify, c.ConsoleURL)
	}
	main := baseMain + "console_url: https://deskd.example/\nnotify:\n  ops:\n    url: https://hooks.example/deskd\n    secret_file: ops.secret\n" +
		"  chat:\n    url: https://hooks.slack.com/services/T/B/X\n    format: slack\n    events: [turn.failed, notify.failed]\n    give_up_after: 1h\n"
	path := setup(t, main, map[string]string{"desks.d/main.yaml": baseDesk + "notify: {answers: [ops, chat]}\n", "ops.secret": notifySecret + "\n"})
	c = mustLoad(t, path)
	ops, chat := c.Notify["ops"], c.Notify["chat"]
	if ops == nil || chat == nil || len(c.Notify) != 2 {
		t.Fatalf("Notify = %v, want ops and chat", c.Notify)
	}
	want := config.NotifyTarget{Name: "ops", URL: "https://hooks.example/deskd", SecretFile: filepath.Join(filepath.Dir(path), "ops.secret"),
		Format: config.NotifyStandard, Events: config.DefaultNotifyEvents(), GiveUpAfter: 24 * time.Hour}
	if ops.Name != want.Name || ops.URL != want.URL || ops.SecretFile != want.SecretFile || ops.Format != want.Format ||
		!slices.Equal(ops.Events, want.Events) || ops.GiveUpAfter != want.GiveUpAfter {
		t.Errorf("ops = %+v\nwant %+v", *ops, want)
	}
	if len(ops.Events) != 12 || !slices.Contains(ops.Events, "turn.fallback") {
		t.Errorf("default events %v: want the issue's twelve, turn.fallback among them", ops.Events)
	}
	if chat.Format != config.NotifySlack || chat.SecretFile != "" || chat.GiveUpAfter != time.Hour || !slices.Equal(chat.Events, []string{"turn.failed", "notify.failed"}) {
		t.Errorf("chat = %+v", *chat)
	}
	if key, err := config.ReadNotifyKey(ops.SecretFile); err != nil || len(key) != 32 {
		t.Errorf("ReadNotifyKey = %d bytes, %v; want 32", len(key), err)
	}
	if c.ConsoleURL != "https://deskd.example" {
		t.Errorf("ConsoleURL = %q", c.ConsoleURL)
	}
	if a := c.Desks["main"].NotifyAnswers; !slices.Equal(a, []string{"ops", "chat"}) {
		t.Errorf("answers = %v", a)
	}
}

// TestNotifyProblems: each bad target is one problem naming the file,
// the field and the reason, and never the secret.
func TestNotifyProblems(t *testing.T) {
	const ok = "    url: https://hooks.example/x\n    secret_file: ok.secret\n"
	tests := []struct {
		name, notify, field, reason string
	}{
		{"bad url", "    url: hooks.example/x\n    secret_file: ok.secret\n", "notify.ops.url", "not a URL"},
		{"bad scheme", "    url: ftp://hooks.example/x\n    secret_file: ok.secret\n", "notify.ops.url", "want http or https"},
		{"credentials in the url", "    url: https://u:pw@hooks.example/x\n    secret_file: ok.secret\n", "notify.ops.url", "credentials"},
		{"no url", "    secret_file: ok.secret\n", "notify.ops.url", "required"},
		{"unknown format", ok + "    format: teams\n", "notify.ops.format", "unknown format \"teams\""},
		{"missing secret for standard", "    url: https://hooks.example/x\n", "notify.ops.secret_file", "required for format standard"},
		{"unreadable secret", "    url: https://hooks.example/x\n    secret_file: nope.secret\n", "notify.ops.secret_file", "cannot read"},
		{"not whsec", "    url: https://hooks.example/x\n    secret_file: plain.secret\n", "notify.ops.secret_file", "whsec_"},
		{"short key", "    url: https://hooks.example/x\n    secret_file: short.secret\n", "notify.ops.secret_file", "want 24 to 64"},
		{"slack with a secret", "    url: https://hooks.example/x\n    format: slack\n    secret_file: ok.secret\n", "notify.ops.secret_file", "not signed"},
		{"unknown event topic", ok + "    events: [turn.failed, turn.exploded]\n", "notify.ops.events[1]", "unknown event topic \"turn.exploded\""},
		{"event twice", ok + "    events: [turn.failed, turn.failed]\n", "notify.ops.events[1]", "listed twice"},
		{"no events", ok + "    events: []\n", "notify.ops.events", "empty"},
		{"give up too soon", ok + "    give_up_after: 10ms\n", "notify.ops.give_up_after", "too short"},
		{"unknown key", ok + "    retries: 3\n", "notify.ops.retries", "unknown key"},
	}
	files := map[string]string{"desks.d/main.yaml": baseDesk, "ok.secret": notifySecret + "\n",
		"plain.secret": "not-a-webhook-secret-at-all\n", "short.secret": "whsec_c2hvcnQ=\n"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load(setup(t, baseMain+"notify:\n  ops:\n"+tt.notify, files))
			p := oneProblem(t, err, want{"deskd.yaml", tt.field, tt.reason})
			for _, secret := range []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "not-a-webhook-secret", "c2hvcnQ"} {
				if strings.Contains(p.String(), secret) {
					t.Errorf("the problem echoes the secret: %q", p.String())
				}
			}
		})
	}

	t.Run("desk names an unknown target", func(t *testing.T) {
		_, err := config.Load(setup(t, baseMain+"notify:\n  ops:\n"+ok, map[string]string{"ok.secret": notifySecret + "\n",
			"desks.d/main.yaml": baseDesk + "notify: {answers: [opz]}\n"}))
		ps := problemsOf(t, err)
		if len(ps) != 1 || ps[0].Field != "notify.answers[0]" || filepath.Base(ps[0].File) != "main.yaml" || !strings.Contains(ps[0].Reason, `unknown notify target "opz"; notify has ops`) {
			t.Fatalf("problems:\n%v\nwant one of main.yaml: notify.answers[0]: unknown notify target", ps)
		}
	})
	t.Run("bad console_url", func(t *testing.T) {
		_, err := config.Load(setup(t, baseMain+"console_url: deskd.example\n", map[string]string{"desks.d/main.yaml": baseDesk}))
		ps := problemsOf(t, err)
		if len(ps) != 1 || ps[0].Field != "console_url" || !strings.Contains(ps[0].Reason, "not an http or https URL") {
			t.Fatalf("problems:\n%v", ps)
		}
	})
}

// TestNotifyReloadNeedsRestart: a change of notify or console_url is a
// change that takes effect after a restart.
func TestNotifyReloadNeedsRestart(t *testing.T) {
	files := map[string]string{"desks.d/main.yaml": baseDesk, "ok.secret": notifySecret + "\n"}
	a := mustLoad(t, setup(t, baseMain+"notify:\n  ops:\n    url: https://hooks.example/x\n    secret_file: ok.secret\n", files))
	b := mustLoad(t, setup(t, baseMain+"console_url: https://d.example\nnotify:\n  ops:\n    url: https://hooks.example/y\n    secret_file: ok.secret\n", files))
	cs := config.Diff(a, b)
	fields := map[string]bool{}
	for _, c := range cs {
		if c.Field != "notify" && c.Field != "console_url" {
			continue // the two files' folders differ: calendars_dir, ...
		}
		if !c.Restart {
			t.Errorf("change %+v: want Restart", c)
		}
		fields[c.Field] = true
	}
	if !fields["notify"] || !fields["console_url"] {
		t.Errorf("changes %+v: want notify and console_url", cs)
	}
}
