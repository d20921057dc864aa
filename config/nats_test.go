package config_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deskd/deskd/config"
)

// TestNATSDefaults: without a nats section NATS is off; with one, the
// subjects, the consumer and the outbox bound take their defaults, and
// file settings resolve beside the main file.
func TestNATSDefaults(t *testing.T) {
	c := mustLoad(t, setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk}))
	if c.NATS != nil {
		t.Fatalf("no nats section: NATS = %+v, want nil", c.NATS)
	}
	main := baseMain + "nats:\n  url: nats://127.0.0.1:4222\n  token_file: nats.tok\n" +
		"  triggers: {stream: MARKET}\n  events: {stream: DESKD_EVENTS}\n"
	path := setup(t, main, map[string]string{"desks.d/main.yaml": baseDesk, "nats.tok": "nats-secret-token\n"})
	n := mustLoad(t, path).NATS
	if n == nil || n.Triggers == nil || n.Events == nil {
		t.Fatalf("NATS = %+v, want the section with triggers and events", n)
	}
	if !slices.Equal(n.URLs, []string{"nats://127.0.0.1:4222"}) || n.TokenFile != filepath.Join(filepath.Dir(path), "nats.tok") {
		t.Errorf("urls %v, token_file %q", n.URLs, n.TokenFile)
	}
	want := config.NATSTriggers{Stream: "MARKET", Subject: "deskd.triggers.>", Consumer: "deskd"}
	if *n.Triggers != want || n.Triggers.Prefix() != "deskd.triggers" {
		t.Errorf("triggers = %+v (prefix %q), want %+v", *n.Triggers, n.Triggers.Prefix(), want)
	}
	wantEv := config.NATSEvents{Stream: "DESKD_EVENTS", Subject: "deskd.events", OutboxMaxBytes: 64 << 20}
	if *n.Events != wantEv {
		t.Errorf("events = %+v, want %+v", *n.Events, wantEv)
	}
	list := baseMain + "nats:\n  url: [nats://a:4222, tls://b:4222]\n"
	if n := mustLoad(t, setup(t, list, map[string]string{"desks.d/main.yaml": baseDesk})).NATS; len(n.URLs) != 2 || n.Triggers != nil {
		t.Errorf("a list of urls and no triggers: %+v", n)
	}
}

// TestNATSProblems: each bad setting is one problem of the main file
// naming the field and the reason, and never the token.
func TestNATSProblems(t *testing.T) {
	const tok = "nats-secret-token"
	tests := []struct {
		name, nats, field, reason string
	}{
		{"no url", "  triggers: {stream: M}\n", "nats.url", "required"},
		{"bad scheme", "  url: http://x:1\n", "nats.url", "scheme"},
		{"not a url", "  url: 127.0.0.1:4222\n", "nats.url", "not a URL"},
		{"credentials in the url", "  url: nats://u:" + tok + "@x:1\n", "nats.url", "holds credentials"},
		{"twice", "  url: [nats://x:1, nats://x:1]\n", "nats.url[1]", "listed twice"},
		{"empty list", "  url: []\n", "nats.url", "the list is empty: give at least one server"},
		{"not a string or a list", "  url: {a: 1}\n", "nats.url", "want a URL, got a mapping, or a list of them"},
		{"list item not a string", "  url: [nats://x:1, 4222]\n", "nats.url[1]", "want a string, got"},
		{"two auths", "  url: nats://x:1\n  token_file: tok\n  nkey_file: tok\n", "nats.creds_file", "only one"},
		{"missing token file", "  url: nats://x:1\n  token_file: nope\n", "nats.token_file", "cannot read"},
		{"unknown key", "  url: nats://x:1\n  password: x\n", "nats.password", "unknown key"},
		{"stream required", "  url: nats://x:1\n  triggers: {subject: \"a.>\"}\n", "nats.triggers.stream", "required"},
		{"bad stream name", "  url: nats://x:1\n  triggers: {stream: \"a.b\"}\n", "nats.triggers.stream", "letters"},
		{"subject without >", "  url: nats://x:1\n  triggers: {stream: M, subject: deskd.triggers}\n", "nats.triggers.subject", "followed by .>"},
		{"subject wildcard", "  url: nats://x:1\n  triggers: {stream: M, subject: \"deskd.*.>\"}\n", "nats.triggers.subject", "followed by .>"},
		{"events subject wildcard", "  url: nats://x:1\n  events: {stream: E, subject: \"deskd.>\"}\n", "nats.events.subject", "no wildcards"},
		{"small outbox", "  url: nats://x:1\n  events: {stream: E, outbox_max_bytes: 10}\n", "nats.events.outbox_max_bytes", "too small"},
		{"one stream for both", "  url: nats://x:1\n  triggers: {stream: S}\n  events: {stream: S}\n", "nats.events.stream", "of their own"},
		{"cert without key", "  url: nats://x:1\n  tls: {cert_file: tok}\n", "nats.tls.cert_file", "both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Load(setup(t, baseMain+"nats:\n"+tt.nats, map[string]string{"desks.d/main.yaml": baseDesk, "tok": tok + "\n"}))
			p := oneProblem(t, err, want{"deskd.yaml", tt.field, tt.reason})
			if strings.Contains(p.String(), tok) {
				t.Errorf("the problem echoes the token: %q", p.String())
			}
		})
	}
}

// TestNATSIsPinned: a change of the nats section is reported as taking
// effect after a restart.
func TestNATSIsPinned(t *testing.T) {
	wantRestart(t, "nats", baseMain+"nats: {url: \"nats://a:1\"}\n", baseMain+"nats: {url: \"nats://b:1\"}\n")
}
