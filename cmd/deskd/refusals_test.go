package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckConfigRefusesBadSecretsAndTools: check-config fails (exit 2)
// on an auth_token_file of white space, a device, or a token off its
// first line, and on a command tool whose program is not on PATH or not
// executable, naming the field, the tool and the program.
func TestCheckConfigRefusesBadSecretsAndTools(t *testing.T) {
	const main = "state_dir: state\nlisten: 127.0.0.1:0\nmodels:\n  offline: {provider: scripted}\n"
	const desk = "model: offline\ninstructions: hi\n"
	tests := []struct {
		name       string
		main, desk string
		files      map[string]string
		want       []string
	}{
		{"token file of white space", main + "auth_token_file: tok\n", desk, map[string]string{"tok": "  \n\n"},
			[]string{"auth_token_file", "only white space"}},
		{"token file /dev/zero", main + "auth_token_file: /dev/zero\n", desk, nil,
			[]string{"auth_token_file", "not a regular file"}},
		{"token not on the first line", main + "auth_token_file: tok\n", desk, map[string]string{"tok": "\ntok\n"},
			[]string{"auth_token_file", "first line"}},
		{"tool not on PATH", main, desk + "tools: [{name: quote, description: d, command: [deskd-no-such-quote]}]\n", nil,
			[]string{"tools[0].command", "tool quote", "deskd-no-such-quote", "PATH"}},
		{"tool not executable", main, desk + "tools: [{name: quote, description: d, command: [./quote.sh]}]\n",
			map[string]string{"desks.d/quote.sh": "#!/bin/sh\necho 1\n"},
			[]string{"tools[0].command", "tool quote", "quote.sh", "not executable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeTestFile(t, dir, "deskd.yaml", tt.main)
			writeTestFile(t, dir, filepath.Join("desks.d", "main.yaml"), tt.desk)
			writeTestFiles(t, dir, tt.files)
			var out, errb bytes.Buffer
			code := run(t.Context(), []string{"check-config", "--config", cfg}, &out, &errb)
			if code != 2 {
				t.Fatalf("check-config = %d, want 2\n%s%s", code, out.String(), errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("check-config does not say %q:\n%s", w, errb.String())
				}
			}
		})
	}
}

// TestClockStartRange: --clock-start far from now is refused with a clear
// error (exit 2), not wrapped round to another year.
func TestClockStartRange(t *testing.T) {
	for _, tt := range []struct{ at, want string }{
		{"0001-01-01T00:00:00Z", "out of range: want an instant in the years 1970 to 2199"},
		{"1969-12-31T23:59:59Z", "out of range"},
		{"2200-01-01T00:00:00Z", "out of range"},
		{"9999-12-31T23:59:59Z", "out of range"},
		{"yesterday", "want RFC3339"},
	} {
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{"run", "--clock-start", tt.at, "--config", filepath.Join(t.TempDir(), "none.yaml")}, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "--clock-start") || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("run --clock-start %s = %d %q, want 2 saying %q", tt.at, code, errb.String(), tt.want)
		}
	}
}
