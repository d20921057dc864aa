package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/config"
)

// secret is what an operator pasted into the wrong field: it must never
// come back in a problem or a change.
const secret = "sk-live-4f9Qz7XyW2vB8nL0pRt6"

// TestSecretFieldsAreNeverQuoted: a value typed into a field that holds
// or points at a secret (api_key_env, api_key_file, auth_token_file, a
// base_url with credentials) is refused by field and reason, and never
// appears in a problem, whatever the problem is.
func TestSecretFieldsAreNeverQuoted(t *testing.T) {
	t.Setenv("DESKD_TEST_KEY", "sk-test")
	withModel := func(t *testing.T, m string) string {
		return sub(t, baseMain, "  offline: {provider: scripted}\n", "  offline: {provider: scripted}\n  gpt: "+m+"\n")
	}
	tests := []struct {
		name, main string
		field      string
	}{
		{"key in api_key_env", withModel(t, `{provider: openai, model: m, api_key_env: "`+secret+`"}`),
			"models.gpt.api_key_env"},
		{"key-shaped name in api_key_env, unset", withModel(t, `{provider: openai, model: m, api_key_env: "SK_LIVE_4f9Qz7XyW2vB8nL0pRt6"}`),
			"models.gpt.api_key_env"},
		{"key in api_key_file", withModel(t, `{provider: openai, model: m, api_key_file: "`+secret+`"}`),
			"models.gpt.api_key_file"},
		{"key with a $ in api_key_file", withModel(t, `{provider: openai, model: m, api_key_file: "sk-live-$4f9Qz7XyW2vB8nL0pRt6"}`),
			"models.gpt.api_key_file"},
		{"key in auth_token_file", baseMain + `auth_token_file: "` + secret + `"` + "\n",
			"auth_token_file"},
		{"key in base_url", withModel(t, `{provider: openai, model: m, api_key_env: DESKD_TEST_KEY, base_url: "`+secret+`"}`),
			"models.gpt.base_url"},
		{"key in a base_url's user info", withModel(t, `{provider: openai, model: m, api_key_env: DESKD_TEST_KEY, base_url: "ftp://u:`+secret+`@h/v1"}`),
			"models.gpt.base_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := setup(t, tt.main, map[string]string{"desks.d/main.yaml": baseDesk})
			_, err := config.Load(path)
			ps := problemsOf(t, err)
			found := false
			for _, p := range ps {
				found = found || p.Field == tt.field
			}
			if !found {
				t.Errorf("no problem names %s:\n%v", tt.field, ps)
			}
			for _, frag := range []string{secret, "4f9Qz7XyW2vB8nL0pRt6"} {
				if strings.Contains(ps.Error(), frag) {
					t.Errorf("a problem echoes the value:\n%v", ps)
				}
			}
			if strings.HasPrefix(tt.field, "auth_token_file") {
				_, err := config.ReadClient(path)
				if err != nil && strings.Contains(err.Error(), "4f9Qz7XyW2vB8nL0pRt6") {
					t.Errorf("ReadClient echoes the value: %v", err)
				}
			}
		})
	}
}

// TestDiffHidesSecretFields: a reload's changes say that a secret-bearing
// field changed, never from what to what.
func TestDiffHidesSecretFields(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"tok-" + secret, "tok-other-" + secret} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("tok\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	load := func(tokenFile string) *config.Config {
		return mustLoad(t, setup(t, baseMain+"auth_token_file: "+filepath.Join(dir, tokenFile)+"\n",
			map[string]string{"desks.d/main.yaml": baseDesk}))
	}
	changes := config.Diff(load("tok-"+secret), load("tok-other-"+secret))
	var lines []string
	for _, c := range changes {
		lines = append(lines, c.String())
	}
	text := strings.Join(lines, "\n")
	if !strings.Contains(text, "auth_token_file changed") {
		t.Errorf("the diff does not say auth_token_file changed:\n%s", text)
	}
	if strings.Contains(text, "4f9Qz7XyW2vB8nL0pRt6") {
		t.Errorf("the diff shows the value of auth_token_file:\n%s", text)
	}
}

// TestSecretFileChecks: a key or token file must be a regular file, of a
// small size, holding more than white space (a token file: on its first
// line, where the token is read from); check-config refuses the others.
func TestSecretFileChecks(t *testing.T) {
	big := strings.Repeat("k", 64<<10)
	tests := []struct {
		name, file string
		files      map[string]string
		reason     string
	}{
		{"white space", "tok", map[string]string{"tok": " \n\t\n"}, "only white space"},
		{"empty", "tok", map[string]string{"tok": ""}, "is empty"},
		{"a device", "/dev/zero", nil, "not a regular file"},
		{"a folder", "sub", map[string]string{"sub/x": "x"}, "not a regular file"},
		{"too large", "tok", map[string]string{"tok": big}, "larger than"},
	}
	for _, tt := range tests {
		for _, field := range []string{"auth_token_file", "models.gpt.api_key_file"} {
			t.Run(tt.name+" "+field, func(t *testing.T) {
				main := baseMain + "auth_token_file: " + tt.file + "\n"
				if field != "auth_token_file" {
					main = baseMain + "  gpt: {provider: openai, model: m, api_key_file: " + tt.file + "}\n"
				}
				files := map[string]string{"desks.d/main.yaml": baseDesk}
				for k, v := range tt.files {
					files[k] = v
				}
				_, err := config.Load(setup(t, main, files))
				oneProblem(t, err, want{"deskd.yaml", field, tt.reason})
			})
		}
	}
	t.Run("token not on the first line", func(t *testing.T) {
		_, err := config.Load(setup(t, baseMain+"auth_token_file: tok\n",
			map[string]string{"desks.d/main.yaml": baseDesk, "tok": "\nsecret-token\n"}))
		ps := problemsOf(t, err)
		if w := (want{"deskd.yaml", "auth_token_file", "first line"}); len(ps) != 1 || !w.matches(ps[0]) {
			t.Fatalf("problems:\n%v\nwant one about the first line", ps)
		}
	})
	t.Run("ReadAuthToken refuses a device", func(t *testing.T) {
		if _, err := config.ReadAuthToken("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadAuthToken(/dev/zero) = %v, want a refusal", err)
		}
	})
}

// TestToolProgramChecks: a command tool's program must be found: on PATH
// when it is a bare name, or an executable file; the problem names the
// tool and the program.
func TestToolProgramChecks(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, command, field string
		reason               []string
	}{
		{"not on PATH", "[deskd-no-such-program, --json]", "tools[0].command", []string{"tool quote", "deskd-no-such-program", "PATH"}},
		{"not executable", "[" + plain + "]", "tools[0].command", []string{"tool quote", plain, "not executable"}},
		{"missing file", "[./nope/quote]", "tools[0].command", []string{"tool quote", "nope/quote"}},
		{"empty program", `[""]`, "tools[0].command[0]", []string{"must not be empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desk := baseDesk + "tools: [{name: quote, description: d, command: " + tt.command + "}]\n"
			_, err := config.Load(setup(t, baseMain, map[string]string{"desks.d/main.yaml": desk}))
			ps := problemsOf(t, err)
			var p *config.Problem
			for i := range ps {
				if ps[i].Field == tt.field {
					p = &ps[i]
				}
			}
			if p == nil {
				t.Fatalf("problems:\n%v\nwant one of %s", ps, tt.field)
			}
			for _, r := range tt.reason {
				if !strings.Contains(p.Reason, r) {
					t.Errorf("reason %q does not say %q", p.Reason, r)
				}
			}
			if strings.Contains(p.Reason, "a string") {
				t.Errorf("reason %q names a type where it should say what is wrong", p.Reason)
			}
		})
	}
	t.Run("on PATH", func(t *testing.T) {
		desk := baseDesk + "tools: [{name: quote, description: d, command: [cat, -]}]\n"
		mustLoad(t, setup(t, baseMain, map[string]string{"desks.d/main.yaml": desk}))
	})
}
