package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeCheckConfig writes a main file on a real model and one desk file,
// and returns the main file's path.
func writeCheckConfig(t *testing.T, desk string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("DESKD_CHECK_WARN_KEY", "sk-dummy")
	main := "state_dir: ./state\nmodels:\n  gpt: {provider: openai, model: gpt-4.1, api_key_env: DESKD_CHECK_WARN_KEY}\n"
	if err := os.MkdirAll(filepath.Join(dir, "desks.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"deskd.yaml": main, "desks.d/main.yaml": desk} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "deskd.yaml")
}

// TestCheckConfigWarnsOfACostTrap: check-config passes (exit 0) a desk on
// a real model with no budget that fires every minute, with a warning
// line; the production example draws none; counts read "1 desk",
// "1 problem".
func TestCheckConfigWarnsOfACostTrap(t *testing.T) {
	var out, errb bytes.Buffer
	path := writeCheckConfig(t, "model: gpt\ninstructions: x\nschedules:\n  - {name: tick, cron: \"* * * * *\", text: t}\n")
	code := run(t.Context(), []string{"check-config", "--config", path}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "ok, 1 desk [main]") ||
		!strings.Contains(out.String(), "warning: ") || !strings.Contains(out.String(), "desk main runs the real model gpt (openai) with no budget") {
		t.Errorf("check-config of a cost trap = %d\n%s%s", code, out.String(), errb.String())
	}

	out.Reset()
	errb.Reset()
	t.Setenv("OPENAI_API_KEY", "sk-dummy")
	// As of a date well before its calendar's end (NSE's shipped one ends 2026-12-31), so that no calendar warning comes.
	code = run(t.Context(), []string{"check-config", "--config", "../../examples/production/deskd.yaml", "--clock-start", "2026-03-02T10:00:00+05:30"}, &out, &errb)
	if code != 0 || strings.Contains(out.String(), "warning") || !strings.Contains(out.String(), "ok, 1 desk [nse]") {
		t.Errorf("check-config of examples/production = %d\n%s%s", code, out.String(), errb.String())
	}

	out.Reset()
	errb.Reset()
	path = writeCheckConfig(t, "model: nosuch\ninstructions: x\n")
	code = run(t.Context(), []string{"check-config", "--config", path}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "config has 1 problem:") {
		t.Errorf("check-config of one problem = %d\n%s%s", code, out.String(), errb.String())
	}
}
