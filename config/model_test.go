package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
)

func TestModelLayerKeys(t *testing.T) {
	main := baseMain + `  gpt:
    provider: openai
    model: gpt-4.1
    api_key_env: DESKD_TEST_KEY
    prices: {input: 2, output: 8, cached_input: 0.5}
`
	t.Setenv("DESKD_TEST_KEY", "sk-test-secret")
	path := setup(t, main, map[string]string{
		"desks.d/main.yaml": `model: gpt
fallbacks: [offline]
instructions: hi
max_tool_rounds: 4
compact_share: 0.7
compact_at_tokens: 20000
budgets: {turn_tokens: 1000, session_tokens: 5000, day_tokens: 9000, day_cost: 2.5}
tools:
  - name: quote
    description: Last price of a symbol.
    schema: '{"type":"object","properties":{"Symbol":{"type":"string"}},"required":["Symbol"]}'
    command: [/bin/cat]
    timeout: 5s
    max_output: 100
  - name: book
    description: The order book.
    schema:
      type: object
      properties: {symbol: {type: string}}
    command: [cat, -]
`,
	})
	c := mustLoad(t, path)
	m := c.Models["gpt"]
	if m.Prices == nil || *m.Prices != (config.Prices{Input: 2, Output: 8, CachedInput: 0.5}) {
		t.Errorf("prices = %+v", m.Prices)
	}
	key, err := m.APIKey()
	if err != nil || key != "sk-test-secret" {
		t.Errorf("APIKey() = %q, %v", key, err)
	}
	d := c.Desks["main"]
	if d.MaxToolRounds != 4 || d.CompactShare != 0.7 || d.CompactAtTokens != 20000 {
		t.Errorf("max_tool_rounds %d, compact_share %g, compact_at_tokens %d", d.MaxToolRounds, d.CompactShare, d.CompactAtTokens)
	}
	if want := (config.Budgets{TurnTokens: 1000, SessionTokens: 5000, DayTokens: 9000, DayCost: 2.5}); d.Budgets != want {
		t.Errorf("budgets = %+v, want %+v", d.Budgets, want)
	}
	if len(d.Tools) != 2 {
		t.Fatalf("%d tools, want 2", len(d.Tools))
	}
	q := d.Tools[0]
	if q.Name != "quote" || q.Timeout != 5*time.Second || q.MaxOutput != 100 || q.Command[0] != "/bin/cat" {
		t.Errorf("quote tool = %+v", q)
	}
	if !strings.Contains(string(q.Schema), `"Symbol"`) {
		t.Errorf("a string schema keeps its case: %s", q.Schema)
	}
	var schema map[string]any
	if err := json.Unmarshal(d.Tools[1].Schema, &schema); err != nil || schema["type"] != "object" {
		t.Errorf("mapping schema = %s (%v)", d.Tools[1].Schema, err)
	}
	if d.Tools[1].Timeout != 30*time.Second || d.Tools[1].MaxOutput != 16<<10 {
		t.Errorf("tool defaults: %+v", d.Tools[1])
	}
}

func TestModelLayerDefaults(t *testing.T) {
	c := mustLoad(t, setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk}))
	d := c.Desks["main"]
	if d.MaxToolRounds != 8 || d.CompactShare != 0.8 || d.CompactAtTokens != 0 || len(d.Tools) != 0 || d.Budgets != (config.Budgets{}) {
		t.Errorf("defaults: rounds %d share %g at_tokens %d tools %d budgets %+v", d.MaxToolRounds, d.CompactShare, d.CompactAtTokens,
			len(d.Tools), d.Budgets)
	}
	if c.Models["offline"].Prices != nil {
		t.Error("a model without prices has Prices")
	}
}

func TestModelLayerProblems(t *testing.T) {
	tests := []struct {
		name, desk, field, reason string
	}{
		{"negative budget", "budgets: {day_tokens: -1}", "budgets.day_tokens", "want 0"},
		{"unknown budget", "budgets: {week_tokens: 1}", "budgets.week_tokens", "unknown key"},
		{"rounds", "max_tool_rounds: 0", "max_tool_rounds", "want 1 to 64"},
		{"share", "compact_share: 2", "compact_share", "at most 1"},
		{"compact_at_tokens negative", "compact_at_tokens: -1", "compact_at_tokens", "-1: want 0 (compact_share alone decides) or 1000 to 10000000 tokens"},
		{"compact_at_tokens too small", "compact_at_tokens: 999", "compact_at_tokens", "below 1000 the instructions and tools alone"},
		{"compact_at_tokens too large", "compact_at_tokens: 10000001", "compact_at_tokens", "1000 to 10000000 tokens"},
		{"compact_at_tokens a string", "compact_at_tokens: 20k", "compact_at_tokens", "want an integer, got"},
		{"compact_at_tokens a fraction", "compact_at_tokens: 0.5", "compact_at_tokens", "want an integer, got"},
		{"builtin name", "tools: [{name: note, description: d, command: [cat]}]", "tools[0].name", "built-in"},
		{"no command", "tools: [{name: q, description: d}]", "tools[0].command", "required"},
		{"missing program", "tools: [{name: q, description: d, command: [/nonexistent/quote]}]", "tools[0].command", "cannot run"},
		{"schema not object", `tools: [{name: q, description: d, command: [cat], schema: '{"type":"string"}'}]`, "tools[0].schema", `"object"`},
		{"schema not json", `tools: [{name: q, description: d, command: [cat], schema: '{nope'}]`, "tools[0].schema", "not a JSON object"},
		{"duplicate", "tools: [{name: q, description: d, command: [cat]}, {name: q, description: d, command: [cat]}]", "tools[1].name", "also the name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk + tt.desk + "\n"})
			_, err := config.Load(path)
			ps := problemsOf(t, err)
			for _, p := range ps {
				if p.Field == tt.field && strings.Contains(p.Reason, tt.reason) {
					return
				}
			}
			t.Errorf("no problem %s ~ %q in %v", tt.field, tt.reason, ps)
		})
	}
}

func TestAPIKeyNeverInProblems(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("sk-very-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	main := baseMain + "  gpt: {provider: openai, model: m, api_key_file: " + keyFile + ", context_window: -5}\n"
	_, err := config.Load(setup(t, main, map[string]string{"desks.d/main.yaml": baseDesk}))
	ps := problemsOf(t, err)
	if strings.Contains(ps.Error(), "sk-very-secret") {
		t.Fatalf("a problem holds the key: %v", ps)
	}
	m := config.Model{Name: "gpt", APIKeyFile: keyFile}
	if key, err := m.APIKey(); err != nil || key != "sk-very-secret" {
		t.Fatalf("APIKey() = %q, %v", key, err)
	}
}

func TestMemoryGuardAndCuratorKeys(t *testing.T) {
	path := setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk +
		"memory: {max_bytes: 4096, min_kept: 0.5}\ncurator: {enabled: true, max_changes: 2}\n"})
	d := mustLoad(t, path).Desks["main"]
	if d.Memory != (config.MemoryGuard{MaxBytes: 4096, MinKept: 0.5}) || d.Curator.MaxChanges != 2 {
		t.Errorf("memory %+v, curator %+v", d.Memory, d.Curator)
	}
	d = mustLoad(t, setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk})).Desks["main"]
	if d.Memory != (config.MemoryGuard{MaxBytes: 32 << 10, MinKept: 0.75}) || d.Curator.MaxChanges != 5 {
		t.Errorf("defaults: memory %+v, curator %+v", d.Memory, d.Curator)
	}
	_, err := config.Load(setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk + "memory: {min_kept: 0}\n"}))
	if ps := problemsOf(t, err); !strings.Contains(ps.Error(), "memory.min_kept") {
		t.Errorf("min_kept 0 not refused: %v", ps)
	}
}
