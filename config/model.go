package config

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
)

// Prices are a model's prices per million tokens (prices: {input, output,
// cached_input}); cost budgets count only models that have them.
type Prices struct {
	// Input is the price of a million input tokens (input): the prompt's
	// tokens neither read from nor written to the service's prompt cache
	// (those written to Anthropic's cost 125% of it).
	Input float64
	// Output is the price of a million output tokens (output).
	Output float64
	// CachedInput is the price of a million input tokens read from the
	// service's prompt cache (cached_input; default a share of input: 50%
	// for openai, 10% for anthropic, all of it for other services).
	CachedInput float64
}

// Budgets are a desk's spending limits (budgets); zero means no limit.
// The router enforces them, and its type documents each key.
type Budgets = router.Budgets

// Tool is an operator-defined command tool of a desk (tools[]).
type Tool struct {
	// Name is what the model calls it (name, required).
	Name string
	// Description tells the model when to use it (description, required).
	Description string
	// Schema is the JSON schema of its arguments (schema: a mapping, or a
	// string of JSON; a mapping's keys are read in lower case, so give a
	// string when property names need capitals).
	Schema json.RawMessage
	// Command is the argv to run, no shell (command, required; a relative
	// program path is relative to the desk file's folder).
	Command []string
	// Timeout bounds one run (timeout, default router.DefaultToolTimeout).
	Timeout time.Duration
	// MaxOutput caps the bytes of stdout given to the model (max_output,
	// default router.DefaultToolOutput).
	MaxOutput int
}

// Spec returns the model as the router builds it: its options, its
// prices, and APIKey as the reader of its key, which router.CheckSpec
// never calls and router.NewModel calls once, when the desk builds its
// client.
func (m Model) Spec() router.Spec {
	s := router.Spec{Name: m.Name, Provider: m.Provider, BaseURL: m.BaseURL, Model: m.Model,
		MaxOutputTokens: m.MaxOutputTokens, Timeout: m.Timeout, ContextWindow: m.ContextWindow, Key: m.APIKey}
	if m.Prices != nil {
		s.Prices = router.Prices{Input: m.Prices.Input, Output: m.Prices.Output, CachedInput: m.Prices.CachedInput}
	}
	return s
}

// APIKey reads the model's API key from its environment variable or file.
// The key is never kept in the Config; callers hold it only as long as
// their client needs it. An empty key is an error.
func (m Model) APIKey() (string, error) {
	var key string
	switch {
	case m.APIKeyEnv != "":
		key = os.Getenv(m.APIKeyEnv)
		if strings.TrimSpace(key) == "" {
			return "", fmt.Errorf("model %s: environment variable %s is not set", m.Name, m.APIKeyEnv)
		}
	case m.APIKeyFile != "":
		b, err := readSecretFile(m.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("model %s: api_key_file: %w", m.Name, err)
		}
		key = string(b)
	default:
		return "", fmt.Errorf("model %s: no api_key_env or api_key_file", m.Name)
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return "", fmt.Errorf("model %s: the API key is empty", m.Name)
	}
	return key, nil
}

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// builtinTools are the names every desk's tools already have.
var builtinTools = map[string]bool{"note": true, "memory_search": true, "skill_read": true, "skill_write": true}

// loadPrices reads a model's prices.
func loadPrices(n node) *Prices {
	pn, st := n.mapping("prices")
	if st != set {
		return nil
	}
	pn.only("cached_input", "input", "output")
	var p Prices
	for key, dst := range map[string]*float64{"input": &p.Input, "output": &p.Output, "cached_input": &p.CachedInput} {
		if f, st := pn.number(key); st == set {
			if f < 0 {
				pn.problem(key, "%g: want a price of 0 or more per million tokens", f)
			}
			*dst = f
		}
	}
	return &p
}

// loadDeskModelKeys reads the desk keys of the model layer: budgets,
// max_tool_rounds, compact_share, compact_at_tokens and tools.
func loadDeskModelKeys(root node, d *Desk) {
	if bn, st := root.mapping("budgets"); st == set {
		bn.only("day_cost", "day_tokens", "reserve_tokens", "session_tokens", "turn_tokens")
		for key, dst := range map[string]*int64{"turn_tokens": &d.Budgets.TurnTokens, "session_tokens": &d.Budgets.SessionTokens,
			"day_tokens": &d.Budgets.DayTokens, "reserve_tokens": &d.Budgets.ReserveTokens} {
			if v, st := bn.integer(key); st == set {
				if v < 0 {
					bn.problem(key, "%d: want 0 (no limit) or more tokens", v)
				}
				*dst = int64(v)
			}
		}
		if f, st := bn.number("day_cost"); st == set {
			if f < 0 {
				bn.problem("day_cost", "%g: want 0 (no limit) or more", f)
			}
			d.Budgets.DayCost = f
		}
	}
	d.Memory = MemoryGuard{MaxBytes: memory.DefaultMemoryMaxBytes, MinKept: memory.DefaultMemoryMinKept}
	if mn, st := root.mapping("memory"); st == set {
		mn.only("max_bytes", "min_kept")
		if v, st := mn.integer("max_bytes"); st == set {
			d.Memory.MaxBytes = v
			if v < 1024 || v > 1<<20 {
				mn.problem("max_bytes", "%d: want 1024 to 1048576 bytes", v)
			}
		}
		if f, st := mn.number("min_kept"); st == set {
			d.Memory.MinKept = f
			if f <= 0 || f > 1 {
				mn.problem("min_kept", "%g: want a share above 0 and at most 1 (1 keeps every entry)", f)
			}
		}
	}
	if d.Curator.MaxChanges == 0 {
		d.Curator.MaxChanges = curator.DefaultMaxChanges
	}
	d.MaxToolRounds = router.DefaultMaxToolRounds
	if v, st := root.integer("max_tool_rounds"); st == set {
		d.MaxToolRounds = v
		if v < 1 || v > 64 {
			root.problem("max_tool_rounds", "%d: want 1 to 64", v)
		}
	}
	d.CompactShare = router.DefaultCompactShare
	if f, st := root.number("compact_share"); st == set {
		d.CompactShare = f
		if f <= 0.1 || f > 1 {
			root.problem("compact_share", "%g: want a share of the context window above 0.1 and at most 1", f)
		}
	}
	d.CompactAtTokens = router.DefaultCompactAtTokens
	if v, st := root.integer("compact_at_tokens"); st == set {
		d.CompactAtTokens = v
		if v != 0 && (v < router.MinCompactAtTokens || v > router.MaxCompactAtTokens) {
			root.problem("compact_at_tokens", "%d: want 0 (compact_share alone decides) or %d to %d tokens "+
				"(below %d the instructions and tools alone would compact the session every turn)",
				v, router.MinCompactAtTokens, router.MaxCompactAtTokens, router.MinCompactAtTokens)
		}
	}
	root.eachNamed(namedList{key: "tools", what: "tool", re: toolNameRE, builtin: builtinTools,
		allowed: []string{"command", "description", "max_output", "name", "schema", "timeout"}}, func(tn node, name string) {
		t := Tool{Name: name}
		if desc, ok := tn.requiredStr("description"); ok {
			t.Description = desc
		}
		t.Schema = loadSchema(tn)
		var st state
		if t.Command, st = loadCommand(tn, filepath.Dir(d.Path), "tool "+name+": ", `["./quote", "--json"]`); st == absent {
			tn.problem("command", "required")
		}
		t.Timeout = router.DefaultToolTimeout
		if dur, st := tn.duration("timeout"); st == set {
			t.Timeout = dur
			if dur <= 0 || dur > 10*time.Minute {
				tn.problem("timeout", "%v: want more than 0 and at most 10m", dur)
			}
		}
		t.MaxOutput = router.DefaultToolOutput
		if v, st := tn.integer("max_output"); st == set {
			t.MaxOutput = v
			if v < 1 || v > 1<<20 {
				tn.problem("max_output", "%d: want 1 to 1048576 bytes", v)
			}
		}
		d.Tools = append(d.Tools, t)
	})
}

// loadSchema reads a tool's schema: a mapping, or a string of JSON; it
// must describe an object. No schema means an empty object schema.
func loadSchema(tn node) json.RawMessage {
	v, ok := tn.get("schema")
	if !ok {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var raw []byte
	switch x := v.(type) {
	case string:
		raw = []byte(x)
	default:
		b, err := json.Marshal(normalise(x))
		if err != nil {
			tn.problem("schema", "cannot encode as JSON: %v", err)
			return nil
		}
		raw = b
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		tn.problem("schema", "not a JSON object: %v", err)
		return nil
	}
	if t, _ := obj["type"].(string); t != "object" {
		tn.problem("schema", "type must be \"object\" (tool arguments are an object)")
	}
	return raw
}

// normalise turns YAML's map[any]any into map[string]any for JSON.
func normalise(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalise(e)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalise(e)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalise(e)
		}
		return out
	}
	return v
}

// checkProgram checks that a command tool's program can be run: a bare
// name must be found in PATH (deskd's own, when it checks), a path must be
// an executable file.
func checkProgram(prog string) error {
	if !strings.ContainsRune(prog, '/') {
		if _, err := exec.LookPath(prog); err != nil {
			return fmt.Errorf("program %s is not found in PATH: give its path, or install it", prog)
		}
		return nil
	}
	fi, err := os.Stat(prog)
	if err != nil {
		return fmt.Errorf("cannot run %s: %v", prog, pathErr(err))
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("cannot run %s: not executable (want an executable file: chmod +x)", prog)
	}
	return nil
}
