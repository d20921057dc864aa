package config

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// diffBase is a config with two desks; each diff test changes a copy.
func diffBase() *Config {
	return &Config{
		Path:            "/etc/deskd/deskd.yaml",
		StateDir:        "/var/lib/deskd",
		Timezone:        "Asia/Kolkata",
		RolloverAt:      "00:00",
		Listen:          "127.0.0.1:7317",
		Listens:         []string{"127.0.0.1:7317"},
		DesksDir:        "/etc/deskd/desks.d",
		Log:             Log{Level: "info", Format: "json"},
		ShutdownTimeout: 30 * time.Second,
		Models: map[string]Model{
			"offline": {Name: "offline", Provider: router.ScriptedProvider, MaxOutputTokens: 4096, Timeout: 2 * time.Minute},
			"fast": {Name: "fast", Provider: router.OpenAIProvider, Model: "gpt-x", APIKeyEnv: "OPENAI_API_KEY",
				ContextWindow: 128000, MaxOutputTokens: 4096, Timeout: 2 * time.Minute},
		},
		Desks: map[string]*Desk{
			"fx": {
				Name: "fx", Path: "/etc/deskd/desks.d/fx.yaml", Model: "fast", Fallbacks: []string{"offline"},
				Instructions: "Trade FX.",
				Schedules: []Schedule{
					{Name: "every-minute", Cron: "* * * * *", Text: "Check the tape."},
					{Name: "open", Cron: "15 9 * * 1-5", Text: "The market opens."},
				},
				Curator: Curator{Enabled: true}, Rollover: keeper.RolloverDaily,
				QueueLimit: 256, Budgets: Budgets{DayTokens: 100000},
				Tools: []Tool{{Name: "note", Description: "Write a note.", Command: []string{"/usr/bin/tee", "-a"}}},
			},
			"rates": {
				Name: "rates", Path: "/etc/deskd/desks.d/rates.yaml", Model: "offline",
				Instructions: "Watch rates.", Curator: Curator{Enabled: true}, Rollover: keeper.RolloverDaily,
			},
		},
	}
}

// cloneConfig copies c deeply enough for a test to change any field of the copy.
func cloneConfig(c *Config) *Config {
	n := *c
	n.Listens = slices.Clone(c.Listens)
	n.Models = map[string]Model{}
	for k, m := range c.Models {
		n.Models[k] = m
	}
	n.Desks = map[string]*Desk{}
	for k, d := range c.Desks {
		dd := *d
		dd.Fallbacks = slices.Clone(d.Fallbacks)
		dd.Schedules = slices.Clone(d.Schedules)
		dd.Tools = slices.Clone(d.Tools)
		n.Desks[k] = &dd
	}
	return &n
}

var diffTests = []struct {
	name string
	edit func(c *Config)
	want []Change
}{
	{"nothing", func(c *Config) {}, nil},
	{"desk added", func(c *Config) {
		c.Desks["bonds"] = &Desk{Name: "bonds", Model: "offline"}
	}, []Change{{Desk: "bonds", What: "desk added"}}},
	{"desk removed", func(c *Config) { delete(c.Desks, "rates") },
		[]Change{{Desk: "rates", What: "desk removed"}}},
	{"schedule added", func(c *Config) {
		c.Desks["rates"].Schedules = []Schedule{{Name: "close", Cron: "30 15 * * 1-5", Text: "Close."}}
	}, []Change{{Desk: "rates", Field: "schedules.close", What: `schedule close added ("30 15 * * 1-5")`}}},
	{"schedule removed", func(c *Config) { c.Desks["fx"].Schedules = c.Desks["fx"].Schedules[1:] },
		[]Change{{Desk: "fx", Field: "schedules.every-minute", What: "schedule every-minute removed"}}},
	{"schedule moved", func(c *Config) { c.Desks["fx"].Schedules[0].Cron = "*/5 * * * *" },
		[]Change{{Desk: "fx", Field: "schedules.every-minute", What: `schedule every-minute moved from "* * * * *" to "*/5 * * * *"`}}},
	{"schedule text changed", func(c *Config) { c.Desks["fx"].Schedules[1].Text = "Open!" },
		[]Change{{Desk: "fx", Field: "schedules.open", What: "schedule open text changed"}}},
	{"schedule moved and text changed", func(c *Config) {
		c.Desks["fx"].Schedules[1] = Schedule{Name: "open", Cron: "20 9 * * 1-5", Text: "Open!"}
	}, []Change{
		{Desk: "fx", Field: "schedules.open", What: `schedule open moved from "15 9 * * 1-5" to "20 9 * * 1-5"`},
		{Desk: "fx", Field: "schedules.open", What: "schedule open text changed"},
	}},
	{"schedules reordered only", func(c *Config) { slices.Reverse(c.Desks["fx"].Schedules) }, nil},
	{"model changed", func(c *Config) { c.Desks["fx"].Model = "offline"; c.Desks["fx"].Fallbacks = nil }, []Change{
		{Desk: "fx", Field: "fallbacks", What: "fallbacks changed from [offline] to none"},
		{Desk: "fx", Field: "model", What: "model changed from fast to offline"},
	}},
	{"fallbacks added", func(c *Config) { c.Desks["rates"].Fallbacks = []string{"fast"} },
		[]Change{{Desk: "rates", Field: "fallbacks", What: "fallbacks changed from none to [fast]"}}},
	{"instructions changed", func(c *Config) { c.Desks["rates"].Instructions = "secret new plan" },
		[]Change{{Desk: "rates", Field: "instructions", What: "instructions changed"}}},
	{"instructions file", func(c *Config) { c.Desks["rates"].InstructionsFile = "/etc/deskd/rates.md" },
		[]Change{{Desk: "rates", Field: "instructions_file", What: `instructions_file changed from "" to "/etc/deskd/rates.md"`}}},
	{"curator disabled", func(c *Config) { c.Desks["fx"].Curator.Enabled = false },
		[]Change{{Desk: "fx", Field: "curator", What: "curator disabled"}}},
	{"rollover changed", func(c *Config) { c.Desks["rates"].Rollover = keeper.RolloverOff },
		[]Change{{Desk: "rates", Field: "rollover", What: "rollover changed from daily to off"}}},
	{"log level", func(c *Config) { c.Log.Level = "debug" },
		[]Change{{Field: "log.level", What: "log level changed from info to debug"}}},
	{"log format", func(c *Config) { c.Log.Format = "console" },
		[]Change{{Field: "log.format", What: "log format changed from json to console (takes effect after a restart)", Restart: true}}},
	{"state_dir", func(c *Config) { c.StateDir = "/srv/deskd" },
		[]Change{{Field: "state_dir", What: `state_dir changed from "/var/lib/deskd" to "/srv/deskd" (takes effect after a restart)`, Restart: true}}},
	{"listen", func(c *Config) {
		c.Listen = "127.0.0.1:9000"
		c.Listens = []string{"127.0.0.1:9000", "unix:/run/deskd/api.sock"}
	},
		[]Change{{Field: "listen", What: `listen changed from [127.0.0.1:7317] to [127.0.0.1:9000, unix:/run/deskd/api.sock] (takes effect after a restart)`, Restart: true}}},
	{"auth_token_file", func(c *Config) { c.AuthTokenFile = "/etc/deskd/token" },
		[]Change{{Field: "auth_token_file", What: `auth_token_file changed (takes effect after a restart)`, Restart: true}}},
	{"calendars", func(c *Config) {
		c.CalendarsDir = "/etc/deskd/cal"
		c.Calendars = map[string]*triggers.Calendar{"LSE": {Name: "LSE"}}
	}, []Change{
		{Field: "calendars.LSE", What: "calendar LSE added"},
		{Field: "calendars_dir", What: `calendars_dir changed from "" to "/etc/deskd/cal"`},
	}},
	{"desk queue, budgets, memory, tool rounds", func(c *Config) {
		d := c.Desks["fx"]
		d.QueueLimit, d.Coalesce, d.Calendar, d.MaxToolRounds, d.CompactShare = 100, triggers.CoalesceKey, "NSE", 8, 0.5
		d.Budgets.DayTokens, d.Budgets.DayCost = 50000, 2.5
		d.Memory.MaxBytes = 65536
		d.Curator.MaxChanges = 3
	}, []Change{
		{Desk: "fx", Field: "budgets.day_cost", What: "budgets.day_cost changed from 0 to 2.5"},
		{Desk: "fx", Field: "budgets.day_tokens", What: "budgets.day_tokens changed from 100000 to 50000"},
		{Desk: "fx", Field: "calendar", What: `calendar changed from "" to "NSE"`},
		{Desk: "fx", Field: "coalesce", What: `coalesce changed from "" to "key"`},
		{Desk: "fx", Field: "compact_share", What: "compact_share changed from 0 to 0.5"},
		{Desk: "fx", Field: "curator.max_changes", What: "curator.max_changes changed from 0 to 3"},
		{Desk: "fx", Field: "max_tool_rounds", What: "max_tool_rounds changed from 0 to 8"},
		{Desk: "fx", Field: "memory.max_bytes", What: "memory.max_bytes changed from 0 to 65536"},
		{Desk: "fx", Field: "queue_limit", What: "queue_limit changed from 256 to 100"},
	}},
	{"schedule calendar, on, missed", func(c *Config) {
		s := &c.Desks["fx"].Schedules[1]
		s.Calendar, s.On, s.RunWithin = "NSE", "market_hours", 10*time.Minute
	}, []Change{
		{Desk: "fx", Field: "schedules.open", What: `schedule open calendar changed from "" to "NSE"`},
		{Desk: "fx", Field: "schedules.open", What: `schedule open on changed from "" to "market_hours"`},
		{Desk: "fx", Field: "schedules.open", What: "schedule open missed.run_within changed from 0s to 10m0s"},
	}},
	{"tools", func(c *Config) {
		c.Desks["fx"].Tools[0].Description = "secret plan"
		c.Desks["fx"].Tools[0].Command = []string{"/bin/cat"}
		c.Desks["fx"].Tools = append(c.Desks["fx"].Tools, Tool{Name: "search"})
		c.Desks["rates"].Tools = []Tool{{Name: "note"}}
	}, []Change{
		{Desk: "fx", Field: "tools.note", What: "tool note changed: description, command"},
		{Desk: "fx", Field: "tools.search", What: "tool search added"},
		{Desk: "rates", Field: "tools.note", What: "tool note added"},
	}},
	{"tool removed", func(c *Config) { c.Desks["fx"].Tools = nil },
		[]Change{{Desk: "fx", Field: "tools.note", What: "tool note removed"}}},
	{"model prices", func(c *Config) {
		m := c.Models["fast"]
		m.Prices = &Prices{Input: 2, Output: 8}
		c.Models["fast"] = m
	}, []Change{{Field: "models.fast", What: "models.fast changed: prices"}}},
	{"timezone and rollover_at", func(c *Config) { c.Timezone = "UTC"; c.RolloverAt = "06:00" }, []Change{
		{Field: "rollover_at", What: `rollover_at changed from "00:00" to "06:00" (takes effect after a restart)`, Restart: true},
		{Field: "timezone", What: `timezone changed from "Asia/Kolkata" to "UTC" (takes effect after a restart)`, Restart: true},
	}},
	{"desks_dir", func(c *Config) { c.DesksDir = "/etc/deskd/desks" },
		[]Change{{Field: "desks_dir", What: `desks_dir changed from "/etc/deskd/desks.d" to "/etc/deskd/desks"`}}},
	{"shutdown_timeout", func(c *Config) { c.ShutdownTimeout = time.Minute },
		[]Change{{Field: "shutdown_timeout", What: "shutdown_timeout changed from 30s to 1m0s (takes effect after a restart)", Restart: true}}},
	{"model entry changed", func(c *Config) {
		m := c.Models["fast"]
		m.Model, m.Timeout, m.APIKeyEnv = "gpt-y", time.Minute, "OTHER_KEY"
		c.Models["fast"] = m
	}, []Change{{Field: "models.fast", What: "models.fast changed: model, api_key_env, timeout"}}},
	{"model entry added and removed", func(c *Config) {
		c.Models["slow"] = Model{Name: "slow", Provider: router.ScriptedProvider}
		delete(c.Models, "offline")
		c.Desks["fx"].Fallbacks = []string{"slow"}
		c.Desks["rates"].Model = "slow"
	}, []Change{
		{Field: "models.offline", What: "models.offline removed"},
		{Field: "models.slow", What: "models.slow added"},
		{Desk: "fx", Field: "fallbacks", What: "fallbacks changed from [offline] to [slow]"},
		{Desk: "rates", Field: "model", What: "model changed from offline to slow"},
	}},
	{"derived and ignored fields", func(c *Config) {
		c.Path = "/elsewhere/deskd.yaml"
		c.Desks["fx"].Path = "/elsewhere/fx.yaml"
		c.Location, c.Day.Start = time.UTC, time.Hour // parsed from timezone and rollover_at, which are compared
		spec, err := triggers.ParseSpec("* * * * *", time.UTC)
		if err != nil {
			panic(err)
		}
		c.Desks["fx"].Schedules[0].Spec = spec // parsed from Cron, which is compared
	}, nil},
	{"many, sorted by desk then field", func(c *Config) {
		c.Log.Level = "warn"
		c.Desks["zeta"] = &Desk{Name: "zeta"}
		c.Desks["fx"].Rollover = keeper.RolloverOff
		c.Desks["fx"].Model = "offline"
		c.Desks["fx"].Fallbacks = nil
		c.Desks["fx"].Instructions = "x"
		delete(c.Desks, "rates")
	}, []Change{
		{Field: "log.level", What: "log level changed from info to warn"},
		{Desk: "fx", Field: "fallbacks", What: "fallbacks changed from [offline] to none"},
		{Desk: "fx", Field: "instructions", What: "instructions changed"},
		{Desk: "fx", Field: "model", What: "model changed from fast to offline"},
		{Desk: "fx", Field: "rollover", What: "rollover changed from daily to off"},
		{Desk: "rates", What: "desk removed"},
		{Desk: "zeta", What: "desk added"},
	}},
}

func TestDiff(t *testing.T) {
	for _, tt := range diffTests {
		t.Run(tt.name, func(t *testing.T) {
			old := diffBase()
			n := cloneConfig(old)
			tt.edit(n)
			got := Diff(old, n)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Diff =\n%s\nwant\n%s", changeLines(got), changeLines(tt.want))
			}
		})
	}
}

func TestDiffCuratorEnabled(t *testing.T) {
	old := diffBase()
	old.Desks["fx"].Curator.Enabled = false
	n := cloneConfig(old)
	n.Desks["fx"].Curator.Enabled = true
	want := []Change{{Desk: "fx", Field: "curator", What: "curator enabled"}}
	if got := Diff(old, n); !slices.Equal(got, want) {
		t.Errorf("Diff =\n%s\nwant\n%s", changeLines(got), changeLines(want))
	}
}

func TestDiffNil(t *testing.T) {
	c := diffBase()
	added := []Change{{Desk: "fx", What: "desk added"}, {Desk: "rates", What: "desk added"}}
	removed := []Change{{Desk: "fx", What: "desk removed"}, {Desk: "rates", What: "desk removed"}}
	if got := Diff(nil, c); !slices.Equal(got, added) {
		t.Errorf("Diff(nil, c) =\n%s\nwant\n%s", changeLines(got), changeLines(added))
	}
	if got := Diff(c, nil); !slices.Equal(got, removed) {
		t.Errorf("Diff(c, nil) =\n%s\nwant\n%s", changeLines(got), changeLines(removed))
	}
	if got := Diff(nil, nil); got != nil {
		t.Errorf("Diff(nil, nil) = %v, want none", got)
	}
}

func TestDiffDeterministic(t *testing.T) {
	old := diffBase()
	n := cloneConfig(old)
	for i := range 20 {
		name := string(rune('a' + i))
		n.Desks[name] = &Desk{Name: name}
		n.Models[name] = Model{Name: name}
	}
	first := Diff(old, n)
	for range 20 {
		if got := Diff(old, n); !slices.Equal(got, first) {
			t.Fatalf("Diff changed between calls:\n%s\nthen\n%s", changeLines(first), changeLines(got))
		}
	}
}

func TestDiffChangeString(t *testing.T) {
	tests := []struct {
		c    Change
		want string
	}{
		{Change{Desk: "fx", Field: "model", What: "model changed from a to b"}, "desk fx: model changed from a to b"},
		{Change{Desk: "fx", What: "desk added"}, "desk fx: desk added"},
		{Change{Field: "log.level", What: "log level changed from info to debug"}, "log level changed from info to debug"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.c, got, tt.want)
		}
	}
}

// TestFieldDiffs: fields Diff does not know by name are still reported,
// by key, with their values when they are scalars.
func TestFieldDiffs(t *testing.T) {
	type limits struct{ Daily int }
	type desk struct {
		Name       string
		Limits     limits
		MaxTurns   int
		APIKeyFile string
		Tools      []string
		Wait       time.Duration
		On         bool
		internal   int
	}
	a := desk{Name: "a", Limits: limits{1}, MaxTurns: 1, APIKeyFile: "x", Tools: []string{"note"}, Wait: time.Second, internal: 1}
	b := desk{Name: "b", Limits: limits{2}, MaxTurns: 2, APIKeyFile: "/y", Tools: []string{"note", "search"}, Wait: time.Minute, On: true, internal: 2}
	got := fieldDiffs("p.", a, b, "Name")
	want := []fieldDiff{
		{"p.limits.daily", "p.limits.daily changed from 1 to 2"},
		{"p.max_turns", "p.max_turns changed from 1 to 2"},
		{"p.api_key_file", `p.api_key_file changed`}, // may hold a secret: no values
		{"p.tools", "p.tools changed"},
		{"p.wait", "p.wait changed from 1s to 1m0s"},
		{"p.on", "p.on changed from false to true"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("fieldDiffs =\n%v\nwant\n%v", got, want)
	}
	if got := fieldDiffs("", a, a); got != nil {
		t.Errorf("fieldDiffs(a, a) = %v, want none", got)
	}
}

func TestDiffSnake(t *testing.T) {
	for in, want := range map[string]string{
		"Budgets": "budgets", "MaxOutputTokens": "max_output_tokens", "APIKeyFile": "api_key_file",
		"BaseURL": "base_url", "StateDir": "state_dir", "ID": "id",
	} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}

func changeLines(cs []Change) string {
	if len(cs) == 0 {
		return "  (none)"
	}
	s := ""
	for _, c := range cs {
		s += "  " + c.Desk + " | " + c.Field + " | " + c.What
		if c.Restart {
			s += " | restart"
		}
		s += "\n"
	}
	return s
}

// TestDiffLoaded: two loads of the same files differ in nothing, though
// their parsed parts (time zones, calendars, cron specs) are separate
// values; an edit of a desk file shows as that edit only.
func TestDiffLoaded(t *testing.T) {
	dir := t.TempDir()
	watchWrite(t, filepath.Join(dir, "deskd.yaml"), "state_dir: ./state\nmodels:\n  offline: {provider: scripted}\n")
	desk := "model: offline\ncalendar: NSE\ninstructions: Trade.\nschedules:\n" +
		"  - {name: open, cron: \"15 9 * * 1-5\", text: Open., on: market_hours}\n"
	watchWrite(t, filepath.Join(dir, "desks.d", "fx.yaml"), desk)
	first, err := Load(filepath.Join(dir, "deskd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := Load(filepath.Join(dir, "deskd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Diff(first, second); got != nil {
		t.Errorf("Diff of two loads of the same files =\n%s", changeLines(got))
	}

	watchWrite(t, filepath.Join(dir, "desks.d", "fx.yaml"), strings.Replace(desk, "15 9", "20 9", 1))
	third, err := Load(filepath.Join(dir, "deskd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{{Desk: "fx", Field: "schedules.open", What: `schedule open moved from "15 9 * * 1-5" to "20 9 * * 1-5"`}}
	if got := Diff(first, third); !slices.Equal(got, want) {
		t.Errorf("Diff after moving a schedule =\n%s\nwant\n%s", changeLines(got), changeLines(want))
	}
}

func TestDiffSame(t *testing.T) {
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	type inner struct{ N int }
	type v struct {
		Loc  *time.Location
		List []string
		Map  map[string]int
		Ptr  *inner
		Any  any
		priv float64
	}
	tests := []struct {
		name string
		a, b v
		want bool
	}{
		{"zero", v{}, v{}, true},
		{"zones by name", v{Loc: london}, v{Loc: time.FixedZone("Europe/London", 0)}, true},
		{"other zone", v{Loc: london}, v{Loc: time.UTC}, false},
		{"nil zone", v{Loc: london}, v{}, false},
		{"nil and empty list", v{List: nil}, v{List: []string{}}, true},
		{"lists", v{List: []string{"a"}}, v{List: []string{"b"}}, false},
		{"nil and empty map", v{Map: nil}, v{Map: map[string]int{}}, true},
		{"maps", v{Map: map[string]int{"a": 1}}, v{Map: map[string]int{"a": 2}}, false},
		{"map keys", v{Map: map[string]int{"a": 1}}, v{Map: map[string]int{"b": 1}}, false},
		{"pointees", v{Ptr: &inner{1}}, v{Ptr: &inner{1}}, true},
		{"pointees differ", v{Ptr: &inner{1}}, v{Ptr: &inner{2}}, false},
		{"nil pointer", v{Ptr: &inner{1}}, v{}, false},
		{"interfaces", v{Any: 1}, v{Any: 1}, true},
		{"interface types", v{Any: 1}, v{Any: "1"}, false},
		{"unexported", v{priv: 1}, v{priv: 2}, false},
	}
	for _, tt := range tests {
		if got := same(reflect.ValueOf(tt.a), reflect.ValueOf(tt.b)); got != tt.want {
			t.Errorf("%s: same = %v, want %v", tt.name, got, tt.want)
		}
	}
}
