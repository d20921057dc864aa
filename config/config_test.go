package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
)

const baseMain = `state_dir: ./state
timezone: Asia/Kolkata
rollover_at: "00:00"
listen: 127.0.0.1:7317
desks_dir: desks.d
log: {level: info, format: json}
models:
  offline: {provider: scripted}
`

const baseDesk = `model: offline
instructions: |
  You run the main desk.
schedules:
  - name: every-minute
    cron: "* * * * *"
    text: "Check the tape."
`

// writeFiles writes files (path relative to dir -> content), creating folders.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// setup writes deskd.yaml, an empty desks.d and files into a fresh folder,
// and returns the main file's path.
func setup(t *testing.T, main string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "desks.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"deskd.yaml": main})
	writeFiles(t, dir, files)
	return filepath.Join(dir, "deskd.yaml")
}

// problemsOf returns err as Problems, failing the test if it is not.
func problemsOf(t *testing.T, err error) config.Problems {
	t.Helper()
	if err == nil {
		t.Fatal("Load succeeded, want problems")
	}
	var ps config.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error is %T, want config.Problems: %v", err, err)
	}
	return ps
}

// mustLoad loads path and fails the test on any problem.
func mustLoad(t *testing.T, path string) *config.Config {
	t.Helper()
	c, err := config.Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c == nil {
		t.Fatal("Load returned a nil config and no error")
	}
	return c
}

// sub replaces old (which must occur) with new in s.
func sub(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("sub: %q not in %q", old, s)
	}
	return strings.Replace(s, old, new, 1)
}

func TestLoadExample(t *testing.T) {
	path := filepath.Join("testdata", "example", "deskd.yaml")
	c := mustLoad(t, path)
	dir, err := filepath.Abs(filepath.Join("testdata", "example"))
	if err != nil {
		t.Fatal(err)
	}

	checks := []struct {
		name      string
		got, want any
	}{
		{"Path", c.Path, filepath.Join(dir, "deskd.yaml")},
		{"StateDir", c.StateDir, filepath.Join(dir, "state")},
		{"DesksDir", c.DesksDir, filepath.Join(dir, "desks.d")},
		{"Timezone", c.Timezone, "Asia/Kolkata"},
		{"Location", c.Location.String(), "Asia/Kolkata"},
		{"RolloverAt", c.RolloverAt, "00:00"},
		{"Day.Start", c.Day.Start, time.Duration(0)},
		{"Day.Location", c.Day.Location, c.Location},
		{"Listen", c.Listen, "127.0.0.1:7317"},
		{"Log", c.Log, config.Log{Level: "info", Format: "json"}},
		{"ShutdownTimeout", c.ShutdownTimeout, 30 * time.Second},
		{"len(Models)", len(c.Models), 1},
		{"Models[offline]", c.Models["offline"], config.Model{
			Name: "offline", Provider: "scripted", ContextWindow: 0,
			MaxOutputTokens: 4096, Timeout: 120 * time.Second,
		}},
		{"len(Desks)", len(c.Desks), 1},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}

	d := c.Desks["main"]
	if d == nil {
		t.Fatalf("no desk main; desks: %v", c.Desks)
	}
	deskChecks := []struct {
		name      string
		got, want any
	}{
		{"Name", d.Name, "main"},
		{"Path", d.Path, filepath.Join(dir, "desks.d", "main.yaml")},
		{"Model", d.Model, "offline"},
		{"len(Fallbacks)", len(d.Fallbacks), 0},
		{"Instructions", d.Instructions, "You run the main desk. Keep notes of what you learn.\n"},
		{"InstructionsFile", d.InstructionsFile, ""},
		{"Curator", d.Curator, config.Curator{Enabled: true, MaxChanges: 5}},
		{"Rollover", string(d.Rollover), "daily"},
		{"len(Schedules)", len(d.Schedules), 1},
	}
	for _, ch := range deskChecks {
		if ch.got != ch.want {
			t.Errorf("desk %s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if len(d.Schedules) != 1 {
		return
	}
	s := d.Schedules[0]
	if s.Name != "every-minute" || s.Cron != "* * * * *" || s.Text != "Check the tape." {
		t.Errorf("schedule = %+v", s)
	}
	if s.Spec == nil {
		t.Fatal("schedule Spec is nil")
	}
	from := time.Date(2026, 3, 10, 9, 15, 30, 0, c.Location)
	if got, want := s.Spec.Next(from), time.Date(2026, 3, 10, 9, 16, 0, 0, c.Location); !got.Equal(want) {
		t.Errorf("Spec.Next(%v) = %v, want %v", from, got, want)
	}
}

func TestDefaults(t *testing.T) {
	t.Setenv("DESKD_TEST_KEY", "sk-test-secret")
	path := setup(t, `state_dir: /var/lib/deskd
models:
  gpt: {provider: openai, model: gpt-4.1, api_key_env: DESKD_TEST_KEY}
  claude: {provider: anthropic, model: claude-x, api_key_env: DESKD_TEST_KEY, context_window: 200000, max_output_tokens: 8192, timeout: 2m}
`, nil)
	c := mustLoad(t, path)
	dir := filepath.Dir(path)
	checks := []struct {
		name      string
		got, want any
	}{
		{"StateDir", c.StateDir, "/var/lib/deskd"},
		{"Timezone", c.Timezone, "Asia/Kolkata"},
		{"Location", c.Location.String(), "Asia/Kolkata"},
		{"RolloverAt", c.RolloverAt, "00:00"},
		{"Day.Start", c.Day.Start, time.Duration(0)},
		{"Listen", c.Listen, "127.0.0.1:7317"},
		{"DesksDir", c.DesksDir, filepath.Join(dir, "desks.d")},
		{"Log", c.Log, config.Log{Level: "info", Format: "json"}},
		{"ShutdownTimeout", c.ShutdownTimeout, 30 * time.Second},
		{"len(Desks)", len(c.Desks), 0},
		{"Models[gpt]", c.Models["gpt"], config.Model{
			Name: "gpt", Provider: "openai", Model: "gpt-4.1", APIKeyEnv: "DESKD_TEST_KEY",
			ContextWindow: 128000, MaxOutputTokens: 4096, Timeout: 120 * time.Second,
		}},
		{"Models[claude]", c.Models["claude"], config.Model{
			Name: "claude", Provider: "anthropic", Model: "claude-x", APIKeyEnv: "DESKD_TEST_KEY",
			ContextWindow: 200000, MaxOutputTokens: 8192, Timeout: 2 * time.Minute,
		}},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if s := fmt.Sprintf("%+v", *c); strings.Contains(s, "sk-test-secret") {
		t.Errorf("config holds the API key: %s", s)
	}
}

func TestDeskSettings(t *testing.T) {
	path := setup(t, `state_dir: state
models:
  offline: {provider: scripted}
  backup: {provider: scripted}
  "gpt-4.1": {provider: scripted}
`, map[string]string{
		"desks.d/fx_desk-2.yaml": `model: offline
fallbacks: [gpt-4.1, backup]
curator: {enabled: false}
rollover: off
schedules: []
`,
	})
	c := mustLoad(t, path)
	d := c.Desks["fx_desk-2"]
	if d == nil {
		t.Fatalf("no desk fx_desk-2 in %v", c.Desks)
	}
	if !slices.Equal(d.Fallbacks, []string{"gpt-4.1", "backup"}) {
		t.Errorf("Fallbacks = %q", d.Fallbacks)
	}
	if d.Curator.Enabled {
		t.Error("Curator.Enabled = true, want false")
	}
	if d.Rollover != "off" {
		t.Errorf("Rollover = %q, want off", d.Rollover)
	}
	if d.Instructions != "" || len(d.Schedules) != 0 {
		t.Errorf("Instructions = %q, Schedules = %v; want none", d.Instructions, d.Schedules)
	}
	if _, ok := c.Models["gpt-4.1"]; !ok {
		t.Errorf("model gpt-4.1 missing (dotted names must survive): %v", c.Models)
	}
}

func TestRolloverAt(t *testing.T) {
	tests := []struct {
		at        string
		wantStart time.Duration
		// at instant (Asia/Kolkata), the trading date is wantDate.
		instant  time.Time
		wantDate string
	}{
		{"00:00", 0, time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), "2026-03-10"},
		{"06:00", 6 * time.Hour, time.Date(2026, 3, 10, 0, 29, 0, 0, time.UTC), "2026-03-09"},                // 05:59 IST
		{"06:00", 6 * time.Hour, time.Date(2026, 3, 10, 0, 30, 0, 0, time.UTC), "2026-03-10"},                // 06:00 IST
		{"09:15", 9*time.Hour + 15*time.Minute, time.Date(2026, 3, 10, 3, 44, 0, 0, time.UTC), "2026-03-09"}, // 09:14 IST
		{"09:15", 9*time.Hour + 15*time.Minute, time.Date(2026, 3, 10, 3, 45, 0, 0, time.UTC), "2026-03-10"}, // 09:15 IST
		{"23:59", 23*time.Hour + 59*time.Minute, time.Date(2026, 3, 10, 18, 0, 0, 0, time.UTC), "2026-03-09"},
	}
	for _, tt := range tests {
		t.Run(tt.at+"@"+tt.instant.Format(time.Kitchen), func(t *testing.T) {
			path := setup(t, sub(t, baseMain, `rollover_at: "00:00"`, `rollover_at: "`+tt.at+`"`), nil)
			c := mustLoad(t, path)
			if c.RolloverAt != tt.at {
				t.Errorf("RolloverAt = %q, want %q", c.RolloverAt, tt.at)
			}
			if c.Day.Start != tt.wantStart {
				t.Errorf("Day.Start = %v, want %v", c.Day.Start, tt.wantStart)
			}
			if got := c.Day.DateOf(tt.instant).String(); got != tt.wantDate {
				t.Errorf("Day.DateOf(%v) = %s, want %s", tt.instant, got, tt.wantDate)
			}
		})
	}
}

// want is one expected problem: the file's base name, the field, and a
// substring of the reason.
type want struct {
	file, field, reason string
}

func (w want) matches(p config.Problem) bool {
	return filepath.Base(p.File) == w.file && p.Field == w.field && strings.Contains(p.Reason, w.reason)
}

// oneProblem fails the test unless err holds exactly one problem and it
// is w; it returns that problem.
func oneProblem(t *testing.T, err error, w want) config.Problem {
	t.Helper()
	ps := problemsOf(t, err)
	if len(ps) != 1 || !w.matches(ps[0]) {
		t.Fatalf("problems:\n%v\nwant exactly one: %s: %s: ...%s...", ps, w.file, w.field, w.reason)
	}
	return ps[0]
}

func TestProblems(t *testing.T) {
	const (
		mainFile = "deskd.yaml"
		deskFile = "main.yaml"
	)
	withModel := func(t *testing.T, model string) string {
		return sub(t, baseMain, "  offline: {provider: scripted}\n", "  offline: {provider: scripted}\n  "+model+"\n")
	}
	tests := []struct {
		name  string
		main  func(t *testing.T) string            // default baseMain
		desk  func(t *testing.T) string            // desks.d/main.yaml; default baseDesk
		files func(t *testing.T) map[string]string // more files, relative to the main file's folder
		env   map[string]string
		want  want
	}{
		// Unknown keys, everywhere.
		{name: "unknown main key",
			main: func(t *testing.T) string { return baseMain + "lisen: 1\n" },
			want: want{mainFile, "lisen", "unknown key"}},
		{name: "unknown main key holding an empty mapping",
			main: func(t *testing.T) string { return baseMain + "budgets: {}\n" },
			want: want{mainFile, "budgets", "unknown key"}},
		{name: "unknown log key",
			main: func(t *testing.T) string { return sub(t, baseMain, "format: json", "fromat: json") },
			want: want{mainFile, "log.fromat", "unknown key"}},
		{name: "unknown model key",
			main: func(t *testing.T) string {
				return sub(t, baseMain, "{provider: scripted}", "{provider: scripted, modle: x}")
			},
			want: want{mainFile, "models.offline.modle", "unknown key"}},
		{name: "unknown desk key",
			desk: func(t *testing.T) string { return baseDesk + "shedules: []\n" },
			want: want{deskFile, "shedules", "unknown key"}},
		{name: "unknown schedule key",
			desk: func(t *testing.T) string { return baseDesk + "    txt: typo\n" },
			want: want{deskFile, "schedules[0].txt", "unknown key"}},
		{name: "unknown curator key",
			desk: func(t *testing.T) string { return baseDesk + "curator: {enable: false}\n" },
			want: want{deskFile, "curator.enable", "unknown key"}},
		{name: "keys differing only in case",
			main: func(t *testing.T) string { return baseMain + "Listen: 127.0.0.1:9\n" },
			want: want{mainFile, "listen", "differ only in case"}},

		// Models named by desks.
		{name: "desk names an unknown model",
			desk: func(t *testing.T) string { return sub(t, baseDesk, "model: offline", "model: gpt") },
			want: want{deskFile, "model", `unknown model "gpt"; models has offline`}},
		{name: "desk names a model in upper case",
			desk: func(t *testing.T) string { return sub(t, baseDesk, "model: offline", "model: Offline") },
			want: want{deskFile, "model", "lower case"}},
		{name: "unknown fallback",
			desk: func(t *testing.T) string { return baseDesk + "fallbacks: [offline2]\n" },
			want: want{deskFile, "fallbacks[0]", `unknown model "offline2"`}},
		{name: "fallback is the desk's model",
			desk: func(t *testing.T) string { return baseDesk + "fallbacks: [offline]\n" },
			want: want{deskFile, "fallbacks[0]", "the desk's model"}},
		{name: "duplicate fallback",
			main: func(t *testing.T) string { return withModel(t, "backup: {provider: scripted}") },
			desk: func(t *testing.T) string { return baseDesk + "fallbacks: [backup, backup]\n" },
			want: want{deskFile, "fallbacks[1]", "listed twice"}},
		{name: "fallbacks not a list",
			desk: func(t *testing.T) string { return baseDesk + "fallbacks: offline\n" },
			want: want{deskFile, "fallbacks", "want a list, got a string"}},
		{name: "desk model missing",
			desk: func(t *testing.T) string { return sub(t, baseDesk, "model: offline\n", "") },
			want: want{deskFile, "model", "required"}},

		// Schedules.
		{name: "bad cron",
			desk: func(t *testing.T) string { return sub(t, baseDesk, `"* * * * *"`, `"61 * * * *"`) },
			want: want{deskFile, "schedules[0].cron", `cron "61 * * * *"`}},
		{name: "cron with a time zone prefix",
			desk: func(t *testing.T) string { return sub(t, baseDesk, `"* * * * *"`, `"CRON_TZ=UTC * * * * *"`) },
			want: want{deskFile, "schedules[0].cron", "time zone prefixes are not allowed"}},
		{name: "schedule without cron",
			desk: func(t *testing.T) string { return sub(t, baseDesk, `    cron: "* * * * *"`+"\n", "") },
			want: want{deskFile, "schedules[0].cron", "required"}},
		{name: "schedule with blank text",
			desk: func(t *testing.T) string { return sub(t, baseDesk, `"Check the tape."`, `"   "`) },
			want: want{deskFile, "schedules[0].text", "must not be empty"}},
		{name: "schedule without name",
			desk: func(t *testing.T) string { return sub(t, baseDesk, "  - name: every-minute\n    cron", "  - cron") },
			want: want{deskFile, "schedules[0].name", "required"}},
		{name: "bad schedule name",
			desk: func(t *testing.T) string { return sub(t, baseDesk, "every-minute", "Every Minute") },
			want: want{deskFile, "schedules[0].name", "bad schedule name"}},
		{name: "duplicate schedule name",
			desk: func(t *testing.T) string {
				return baseDesk + "  - {name: every-minute, cron: \"@hourly\", text: again}\n"
			},
			want: want{deskFile, "schedules[1].name", "also the name of schedules[0]"}},
		{name: "schedules not a list",
			desk: func(t *testing.T) string {
				return "model: offline\nschedules: {name: x, cron: \"@hourly\", text: y}\n"
			},
			want: want{deskFile, "schedules", "want a list, got a mapping"}},
		{name: "schedule entry not a mapping",
			desk: func(t *testing.T) string { return "model: offline\nschedules: [\"@hourly\"]\n" },
			want: want{deskFile, "schedules[0]", "want a mapping"}},

		// Time.
		{name: "unknown time zone",
			main: func(t *testing.T) string { return sub(t, baseMain, "Asia/Kolkata", "Mars/Olympus_Mons") },
			want: want{mainFile, "timezone", `unknown time zone "Mars/Olympus_Mons"`}},
		{name: "Local time zone",
			main: func(t *testing.T) string { return sub(t, baseMain, "Asia/Kolkata", "Local") },
			want: want{mainFile, "timezone", "depends on the host"}},
		{name: "rollover_at 24:00",
			main: func(t *testing.T) string { return sub(t, baseMain, `"00:00"`, `"24:00"`) },
			want: want{mainFile, "rollover_at", `"24:00" is not a time of day`}},
		{name: "rollover_at 7:5",
			main: func(t *testing.T) string { return sub(t, baseMain, `"00:00"`, `"7:5"`) },
			want: want{mainFile, "rollover_at", `"7:5" is not a time of day`}},
		{name: "rollover_at noon",
			main: func(t *testing.T) string { return sub(t, baseMain, `"00:00"`, `noon`) },
			want: want{mainFile, "rollover_at", `"noon" is not a time of day`}},
		{name: "rollover_at read as a number",
			main: func(t *testing.T) string { return sub(t, baseMain, `"00:00"`, `0600`) },
			want: want{mainFile, "rollover_at", "got an integer; quote it"}},
		{name: "rollover_at a bare hour",
			main: func(t *testing.T) string { return sub(t, baseMain, `"00:00"`, `6`) },
			want: want{mainFile, "rollover_at", "quote it"}},
		{name: "desk rollover",
			desk: func(t *testing.T) string { return baseDesk + "rollover: weekly\n" },
			want: want{deskFile, "rollover", `"weekly": want daily or off`}},

		// Files and names.
		{name: "bad desk name",
			files: func(t *testing.T) map[string]string { return map[string]string{"desks.d/Main-Desk.yaml": baseDesk} },
			want:  want{"Main-Desk.yaml", "", `bad desk name "Main-Desk"`}},
		{name: "desk file ending in .yml",
			files: func(t *testing.T) map[string]string { return map[string]string{"desks.d/fx.yml": baseDesk} },
			want:  want{"fx.yml", "", "use .yaml"}},
		{name: "empty main file",
			main: func(t *testing.T) string { return "" },
			want: want{mainFile, "", "empty: partial write?"}},
		{name: "main file of comments only",
			main: func(t *testing.T) string { return "# nothing yet\n" },
			want: want{mainFile, "", "empty: partial write?"}},
		{name: "empty desk file",
			desk: func(t *testing.T) string { return "" },
			want: want{deskFile, "", "empty: partial write?"}},
		{name: "desk file not YAML",
			desk: func(t *testing.T) string { return "model: [offline\n" },
			want: want{deskFile, "", "not valid YAML: yaml: line"}},
		{name: "main file not a mapping",
			main: func(t *testing.T) string { return "- state_dir\n" },
			want: want{mainFile, "", "not valid YAML"}},
		{name: "unreadable desks_dir",
			main: func(t *testing.T) string { return sub(t, baseMain, "desks_dir: desks.d", "desks_dir: nowhere") },
			want: want{mainFile, "desks_dir", "cannot read"}},
		{name: "desk file is a directory",
			files: func(t *testing.T) map[string]string { return map[string]string{"desks.d/fx.yaml/x": ""} },
			want:  want{"fx.yaml", "", "is a directory"}},

		// Instructions.
		{name: "unreadable instructions file",
			desk: func(t *testing.T) string {
				return sub(t, baseDesk, "instructions: |\n  You run the main desk.\n", "instructions_file: missing.md\n")
			},
			want: want{deskFile, "instructions_file", "cannot read"}},
		{name: "both instructions and instructions_file",
			desk: func(t *testing.T) string { return baseDesk + "instructions_file: x.md\n" },
			want: want{deskFile, "instructions_file", "set only one of instructions and instructions_file"}},

		// Main file keys and types.
		{name: "state_dir missing",
			main: func(t *testing.T) string { return sub(t, baseMain, "state_dir: ./state\n", "") },
			want: want{mainFile, "state_dir", "required"}},
		{name: "state_dir empty",
			main: func(t *testing.T) string { return sub(t, baseMain, "state_dir: ./state", `state_dir: ""`) },
			want: want{mainFile, "state_dir", "must not be empty"}},
		{name: "listen of the wrong type",
			main: func(t *testing.T) string { return sub(t, baseMain, "listen: 127.0.0.1:7317", "listen: 7317") },
			want: want{mainFile, "listen", "want a string, got an integer"}},
		{name: "listen without a port",
			main: func(t *testing.T) string { return sub(t, baseMain, "listen: 127.0.0.1:7317", "listen: localhost") },
			want: want{mainFile, "listen", "not host:port"}},
		{name: "log level",
			main: func(t *testing.T) string { return sub(t, baseMain, "level: info", "level: verbose") },
			want: want{mainFile, "log.level", `"verbose" is not a level`}},
		{name: "log format",
			main: func(t *testing.T) string { return sub(t, baseMain, "format: json", "format: text") },
			want: want{mainFile, "log.format", `"text" is not a format`}},
		{name: "log not a mapping",
			main: func(t *testing.T) string { return sub(t, baseMain, "log: {level: info, format: json}", "log: debug") },
			want: want{mainFile, "log", "want a mapping, got a string"}},
		{name: "shutdown_timeout zero",
			main: func(t *testing.T) string { return baseMain + "shutdown_timeout: 0s\n" },
			want: want{mainFile, "shutdown_timeout", "out of range"}},
		{name: "shutdown_timeout too long",
			main: func(t *testing.T) string { return baseMain + "shutdown_timeout: 11m\n" },
			want: want{mainFile, "shutdown_timeout", "out of range"}},
		{name: "shutdown_timeout without a unit",
			main: func(t *testing.T) string { return baseMain + "shutdown_timeout: 30\n" },
			want: want{mainFile, "shutdown_timeout", "bare number"}},
		{name: "curator enabled not a bool",
			desk: func(t *testing.T) string { return baseDesk + "curator: {enabled: \"no\"}\n" },
			want: want{deskFile, "curator.enabled", "want true or false, got a string"}},

		// Models.
		{name: "bad provider",
			main: func(t *testing.T) string { return sub(t, baseMain, "provider: scripted", "provider: gemini") },
			want: want{mainFile, "models.offline.provider", `"gemini" is not a provider`}},
		{name: "provider missing",
			main: func(t *testing.T) string { return sub(t, baseMain, "{provider: scripted}", "{timeout: 5s}") },
			want: want{mainFile, "models.offline.provider", "required"}},
		{name: "model entry not a mapping",
			main: func(t *testing.T) string { return sub(t, baseMain, "{provider: scripted}", "scripted") },
			want: want{mainFile, "models.offline", "want a mapping, got a string"}},
		{name: "bad model name",
			main: func(t *testing.T) string { return withModel(t, "_x: {provider: scripted}") },
			want: want{mainFile, "models._x", "bad model name"}},
		{name: "openai without model",
			main: func(t *testing.T) string { return withModel(t, "gpt: {provider: openai, api_key_env: DESKD_TEST_KEY}") },
			env:  map[string]string{"DESKD_TEST_KEY": "sk-secret-1"},
			want: want{mainFile, "models.gpt.model", "required"}},
		{name: "anthropic without an API key source",
			main: func(t *testing.T) string { return withModel(t, "claude: {provider: anthropic, model: claude-x}") },
			want: want{mainFile, "models.claude.api_key_env", "set api_key_env or api_key_file"}},
		{name: "api_key_env not set",
			main: func(t *testing.T) string {
				return withModel(t, "gpt: {provider: openai, model: m, api_key_env: DESKD_TEST_UNSET}")
			},
			env:  map[string]string{"DESKD_TEST_UNSET": ""},
			want: want{mainFile, "models.gpt.api_key_env", "the environment variable it names, DESKD_TEST_UNSET, is not set"}},
		{name: "api_key_file unreadable",
			main: func(t *testing.T) string {
				return withModel(t, "gpt: {provider: openai, model: m, api_key_file: keys/none}")
			},
			want: want{mainFile, "models.gpt.api_key_file", "cannot read"}},
		{name: "api_key_file in an unset CREDENTIALS_DIRECTORY",
			main: func(t *testing.T) string {
				return withModel(t, "gpt: {provider: openai, model: m, api_key_file: $CREDENTIALS_DIRECTORY/gpt}")
			},
			env:  map[string]string{"CREDENTIALS_DIRECTORY": ""},
			want: want{mainFile, "models.gpt.api_key_file", "an environment variable that is not set here (systemd sets $CREDENTIALS_DIRECTORY"}},
		{name: "both api_key_env and api_key_file",
			main: func(t *testing.T) string {
				return withModel(t, "gpt: {provider: openai, model: m, api_key_env: DESKD_TEST_KEY, api_key_file: key}")
			},
			env:   map[string]string{"DESKD_TEST_KEY": "sk-secret-1"},
			files: func(t *testing.T) map[string]string { return map[string]string{"key": "sk-secret-2"} },
			want:  want{mainFile, "models.gpt.api_key_file", "set only one"}},
		{name: "base_url not http",
			main: func(t *testing.T) string {
				return withModel(t, "gpt: {provider: openai, model: m, api_key_env: DESKD_TEST_KEY, base_url: \"localhost:8000\"}")
			},
			env:  map[string]string{"DESKD_TEST_KEY": "sk-secret-1"},
			want: want{mainFile, "models.gpt.base_url", "http:// or https://"}},
		{name: "max_output_tokens not below context_window",
			main: func(t *testing.T) string {
				return withModel(t, "gpt: {provider: openai, model: m, api_key_env: DESKD_TEST_KEY, context_window: 4096}")
			},
			env:  map[string]string{"DESKD_TEST_KEY": "sk-secret-1"},
			want: want{mainFile, "models.gpt.max_output_tokens", "less than context_window"}},
		{name: "context_window of the wrong type",
			main: func(t *testing.T) string {
				return sub(t, baseMain, "{provider: scripted}", "{provider: scripted, context_window: 8k}")
			},
			want: want{mainFile, "models.offline.context_window", "want an integer, got a string"}},
		{name: "model timeout",
			main: func(t *testing.T) string {
				return sub(t, baseMain, "{provider: scripted}", "{provider: scripted, timeout: soon}")
			},
			want: want{mainFile, "models.offline.timeout", `got "soon"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			main := baseMain
			if tt.main != nil {
				main = tt.main(t)
			}
			desk := baseDesk
			if tt.desk != nil {
				desk = tt.desk(t)
			}
			files := map[string]string{"desks.d/main.yaml": desk}
			if tt.files != nil {
				for k, v := range tt.files(t) {
					files[k] = v
				}
			}
			path := setup(t, main, files)
			c, err := config.Load(path)
			if c != nil {
				t.Errorf("Load returned a config with problems")
			}
			oneProblem(t, err, tt.want)
			for _, secret := range []string{"sk-secret-1", "sk-secret-2"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("problem holds an API key: %v", err)
				}
			}
		})
	}
}

func TestAllProblemsAtOnce(t *testing.T) {
	path := setup(t, `state_dir: state
timezone: Europe/Atlantis
models:
  offline: {provider: gemini}
`, map[string]string{
		"desks.d/a.yaml": `model: offline
schedules:
  - {name: open, cron: "0 25 * * *", text: go}
`,
		"desks.d/b.yaml":  "model: gpt\nmystery: 1\n",
		"desks.d/c.yml":   "model: offline\n",
		"desks.d/d.yaml":  "model: [\n",
		"desks.d/ok.yaml": baseDesk,
	})
	c, err := config.Load(path)
	if c != nil {
		t.Error("Load returned a config with problems")
	}
	ps := problemsOf(t, err)
	t.Logf("problems:\n%v", err)
	wants := []want{
		{"deskd.yaml", "timezone", "unknown time zone"},
		{"deskd.yaml", "models.offline.provider", "not a provider"},
		{"a.yaml", "schedules[0].cron", `cron "0 25 * * *"`},
		{"b.yaml", "model", `unknown model "gpt"`},
		{"b.yaml", "mystery", "unknown key"},
		{"c.yml", "", "use .yaml"},
		{"d.yaml", "", "not valid YAML"},
	}
	for _, w := range wants {
		if !slices.ContainsFunc(ps, w.matches) {
			t.Errorf("missing problem %s: %s: ...%s...", w.file, w.field, w.reason)
		}
	}
	if len(ps) != len(wants) {
		t.Errorf("got %d problems, want %d:\n%v", len(ps), len(wants), err)
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != len(ps) {
		t.Errorf("Error() has %d lines for %d problems:\n%v", len(lines), len(ps), err)
	}
}

func TestInstructionsFile(t *testing.T) {
	path := setup(t, baseMain, map[string]string{
		"desks.d/main.yaml":         "model: offline\ninstructions_file: prompts/main.md\n",
		"desks.d/prompts/main.md":   "You run the main desk.\n",
		"prompts/main.md":           "wrong: relative to the main file, not the desk file\n",
		"desks.d/prompts/other.txt": "not a desk",
	})
	c := mustLoad(t, path)
	d := c.Desks["main"]
	if d == nil {
		t.Fatalf("no desk main in %v", c.Desks)
	}
	wantFile := filepath.Join(filepath.Dir(path), "desks.d", "prompts", "main.md")
	if d.InstructionsFile != wantFile {
		t.Errorf("InstructionsFile = %q, want %q", d.InstructionsFile, wantFile)
	}
	if d.Instructions != "You run the main desk.\n" {
		t.Errorf("Instructions = %q", d.Instructions)
	}
}

func TestMissingAPIKeyEnv(t *testing.T) {
	const name = "DESKD_TEST_GPT_KEY"
	main := sub(t, baseMain, "  offline: {provider: scripted}\n",
		"  offline: {provider: scripted}\n  gpt: {provider: openai, model: gpt-4.1, api_key_env: "+name+"}\n")
	path := setup(t, main, nil)

	t.Setenv(name, "")
	ps := problemsOf(t, func() error { _, err := config.Load(path); return err }())
	w := want{"deskd.yaml", "models.gpt.api_key_env", "the environment variable it names, " + name + ", is not set"}
	if len(ps) != 1 || !w.matches(ps[0]) {
		t.Fatalf("problems:\n%v\nwant exactly: %s: %s: %s", ps, w.file, w.field, w.reason)
	}

	// A name not in the usual upper-case form may be a key pasted by
	// mistake: it is not shown.
	const odd = "sk_live_0a1b2c3d4e5f"
	t.Setenv(odd, "")
	ps = problemsOf(t, func() error {
		_, err := config.Load(setup(t, strings.Replace(main, name, odd, 1), nil))
		return err
	}())
	if len(ps) != 1 || !strings.Contains(ps[0].Reason, "is not set") || strings.Contains(fmt.Sprint(ps[0]), odd) {
		t.Fatalf("problems:\n%v\nwant one saying the variable is not set, without its name", ps)
	}

	t.Setenv(name, "sk-live-secret")
	c := mustLoad(t, path)
	if got := c.Models["gpt"].APIKeyEnv; got != name {
		t.Errorf("APIKeyEnv = %q, want %q", got, name)
	}
	if s := fmt.Sprintf("%+v", c.Models); strings.Contains(s, "sk-live-secret") {
		t.Errorf("config holds the API key: %s", s)
	}
}

func TestAPIKeyFile(t *testing.T) {
	creds := t.TempDir()
	writeFiles(t, creds, map[string]string{"gpt": "sk-file-secret\n"})
	t.Setenv("CREDENTIALS_DIRECTORY", creds)
	tests := []struct {
		name, value string
		wantFile    func(mainDir string) string
	}{
		{"credentials directory", "$CREDENTIALS_DIRECTORY/gpt", func(string) string { return filepath.Join(creds, "gpt") }},
		{"credentials directory in braces", "${CREDENTIALS_DIRECTORY}/gpt", func(string) string { return filepath.Join(creds, "gpt") }},
		{"relative to the main file", "keys/gpt", func(dir string) string { return filepath.Join(dir, "keys", "gpt") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			main := sub(t, baseMain, "  offline: {provider: scripted}\n",
				"  offline: {provider: scripted}\n  gpt: {provider: openai, model: m, api_key_file: \""+tt.value+"\"}\n")
			path := setup(t, main, map[string]string{"keys/gpt": "sk-file-secret\n"})
			c := mustLoad(t, path)
			m := c.Models["gpt"]
			if want := tt.wantFile(filepath.Dir(path)); m.APIKeyFile != want {
				t.Errorf("APIKeyFile = %q, want %q", m.APIKeyFile, want)
			}
			if s := fmt.Sprintf("%+v", *c); strings.Contains(s, "sk-file-secret") {
				t.Errorf("config holds the API key: %s", s)
			}
		})
	}
}

func TestIgnoredFiles(t *testing.T) {
	garbage := "model: [this is not yaml\n"
	path := setup(t, baseMain, map[string]string{
		"desks.d/main.yaml":      baseDesk,
		"desks.d/.hidden.yaml":   garbage,
		"desks.d/main.yaml~":     garbage,
		"desks.d/.main.yaml.swp": garbage,
		"desks.d/main.yaml.swp":  garbage,
		"desks.d/main.yaml.tmp":  garbage,
		"desks.d/README.md":      garbage,
		"desks.d/notes/x.yaml":   garbage,
	})
	c := mustLoad(t, path)
	if len(c.Desks) != 1 || c.Desks["main"] == nil {
		t.Errorf("Desks = %v, want only main", c.Desks)
	}
}

func TestLoadMissingMainFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deskd.yaml")
	_, err := config.Load(path)
	ps := problemsOf(t, err)
	if len(ps) != 1 || ps[0].File != path || ps[0].Field != "" || !strings.Contains(ps[0].Reason, "cannot read") {
		t.Fatalf("problems = %v", err)
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    config.Problem
		want string
	}{
		{config.Problem{File: "/etc/deskd/desks.d/fx.yaml", Field: "schedules[1].cron", Reason: "bad"},
			"/etc/deskd/desks.d/fx.yaml: schedules[1].cron: bad"},
		{config.Problem{File: "/etc/deskd/deskd.yaml", Reason: "empty: partial write?"},
			"/etc/deskd/deskd.yaml: empty: partial write?"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	ps := config.Problems{tests[0].p, tests[1].p}
	if got, want := ps.Error(), tests[0].want+"\n"+tests[1].want; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
