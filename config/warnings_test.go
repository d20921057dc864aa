package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
)

const realMain = `state_dir: ./state
timezone: Asia/Kolkata
models:
  offline: {provider: scripted}
  gpt: {provider: openai, model: gpt-4.1, api_key_env: DESKD_TEST_WARN_KEY}
`

// TestWarnings: a desk on a real model with no budget whose schedules
// fire more than once in an hour is warned of; a scripted desk, a desk
// with a budget, or an hourly or market-hours-only-once schedule is not.
func TestWarnings(t *testing.T) {
	t.Setenv("DESKD_TEST_WARN_KEY", "sk-test")
	now := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC) // Monday 08:30 IST
	tests := []struct {
		name string
		desk string
		want string // a part of the one warning; empty: none
	}{
		{"real model, every minute, no budget", "model: gpt\ninstructions: x\nschedules:\n  - {name: tick, cron: \"* * * * *\", text: t}\n",
			"fire 60 times in the hour"},
		{"two schedules that fire together", "model: gpt\ninstructions: x\nschedules:\n" +
			"  - {name: a, cron: \"0 * * * *\", text: t}\n  - {name: b, cron: \"30 * * * *\", text: t}\n", "fire 2 times"},
		{"market hours every 15 minutes, no budget", "model: gpt\ninstructions: x\ncalendar: NSE\nschedules:\n" +
			"  - {name: tick, cron: \"*/15 * * * *\", text: t, on: market_hours}\n", "fire 4 times"},
		{"hourly", "model: gpt\ninstructions: x\nschedules:\n  - {name: tick, cron: \"0 * * * *\", text: t}\n", ""},
		{"once a trading day", "model: gpt\ninstructions: x\ncalendar: NSE\nschedules:\n" +
			"  - {name: open, cron: \"15 9 * * *\", text: t, on: trading_days}\n", ""},
		{"scripted", "model: offline\ninstructions: x\nschedules:\n  - {name: tick, cron: \"* * * * *\", text: t}\n", ""},
		{"day budget", "model: gpt\ninstructions: x\nbudgets: {day_tokens: 100000}\nschedules:\n  - {name: tick, cron: \"* * * * *\", text: t}\n", ""},
		{"cost budget", "model: gpt\ninstructions: x\nbudgets: {day_cost: 5}\nschedules:\n  - {name: tick, cron: \"* * * * *\", text: t}\n", ""},
		{"no schedules", "model: gpt\ninstructions: x\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, setup(t, realMain, map[string]string{"desks.d/main.yaml": tt.desk}))
			got := config.Warnings(cfg, now)
			if tt.want == "" {
				if len(got) != 0 {
					t.Errorf("Warnings = %v, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Reason, tt.want) || !strings.Contains(got[0].Reason, "desk main") ||
				!strings.HasSuffix(got[0].File, "main.yaml") {
				t.Errorf("Warnings = %v, want one for desk main saying %q", got, tt.want)
			}
		})
	}
}

// TestProductionExample: examples/production loads (with a dummy key in
// the environment), is on a real model, fires only in NSE market hours
// on trading days, has budgets, and draws no warning.
func TestProductionExample(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-dummy")
	cfg := mustLoad(t, "../examples/production/deskd.yaml")
	d, ok := cfg.Desks["nse"]
	if !ok || len(cfg.Desks) != 1 {
		t.Fatalf("desks = %v, want nse", cfg.Desks)
	}
	if m := cfg.Models[d.Model]; m.Provider == "scripted" || len(d.Fallbacks) != 0 {
		t.Errorf("desk nse is on %s (%s) with fallbacks %v, want a real model and no scripted fallback", d.Model, m.Provider, d.Fallbacks)
	}
	if d.Budgets.DayTokens == 0 || d.Budgets.DayCost == 0 || !d.Curator.Enabled {
		t.Errorf("budgets %+v, curator %+v: want day budgets and the curator", d.Budgets, d.Curator)
	}
	sunday := time.Date(2026, 3, 1, 0, 0, 0, 0, cfg.Location)
	for _, e := range cfg.Entries(d) {
		if e.Calendar == nil || e.On == "" || e.On == "every_day" {
			t.Errorf("schedule %s fires every day, want trading days or market hours", e.Name)
		}
		if next := e.Next(sunday); next.Weekday() != time.Monday || next.Hour() < 9 || next.Hour() > 15 {
			t.Errorf("schedule %s: first slot after Sunday = %v, want Monday in market hours", e.Name, next)
		}
	}
	if w := config.Warnings(cfg, sunday); len(w) != 0 {
		t.Errorf("Warnings = %v, want none", w)
	}
}

// TestDemoExampleIsScripted: examples/deskd.yaml, README's first command,
// stays the offline demo.
func TestDemoExampleIsScripted(t *testing.T) {
	cfg := mustLoad(t, "../examples/deskd.yaml")
	for name, d := range cfg.Desks {
		if m := cfg.Models[d.Model]; m.Provider != "scripted" {
			t.Errorf("demo desk %s is on %s (%s), want the scripted model", name, d.Model, m.Provider)
		}
	}
}
