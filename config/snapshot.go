package config

// The config in force, kept for audits: each time it changes, the daemon
// writes its effective config under the state folder.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/deskd/deskd/memory"
)

// HistoryDir is the folder of the state folder where deskd keeps the
// effective config each time it changes, <state_dir>/config-history/<UTC
// instant>.json, so that an audit can show the config in force on a past
// trading date. WriteSnapshot writes its files and Snapshots lists them.
const HistoryDir = "config-history"

// configSnapshot is the content of one file of HistoryDir.
type configSnapshot struct {
	// Taken is when the config came into force, on deskd's clock.
	Taken time.Time `json:"taken"`
	// Reason is "start" or "reload".
	Reason string          `json:"reason"`
	Config effectiveConfig `json:"config"`
}

// effectiveConfig is the config deskd runs on, as loaded and validated,
// field by field: only what is listed here is kept, so that no secret can
// reach the file. API keys and the API token are never in a Config (it
// names the variable or file they come from); a base URL's user and
// password are dropped.
type effectiveConfig struct {
	Path             string                    `json:"path"`
	StateDir         string                    `json:"state_dir"`
	Timezone         string                    `json:"timezone"`
	RolloverAt       string                    `json:"rollover_at"`
	Listen           []string                  `json:"listen"`
	AllowedHosts     []string                  `json:"allowed_hosts,omitempty"`
	AuthTokenFile    string                    `json:"auth_token_file,omitempty"`
	FeedTokenFile    string                    `json:"feed_token_file,omitempty"`
	MetricsTokenFile string                    `json:"metrics_token_file,omitempty"`
	DesksDir         string                    `json:"desks_dir"`
	CalendarsDir     string                    `json:"calendars_dir,omitempty"`
	Calendars        []string                  `json:"calendars"`
	CalendarsThrough map[string]string         `json:"calendars_through"` // each calendar's last date covered
	CalendarWarnDays int                       `json:"calendar_warn_days"`
	BeyondCalendar   string                    `json:"beyond_calendar"`
	LogLevel         string                    `json:"log_level"`
	LogFormat        string                    `json:"log_format"`
	ShutdownTimeout  string                    `json:"shutdown_timeout"`
	DebugListen      string                    `json:"debug_listen,omitempty"`
	Models           map[string]effectiveModel `json:"models"`
	MCPServers       map[string]effectiveMCP   `json:"mcp_servers,omitempty"`
	Desks            map[string]effectiveDesk  `json:"desks"`
}

// effectiveMCP is one MCP server of the effective config: where its
// secrets come from (env_files paths, pass_env names, headers_file), never
// what they are. Env holds plain values only (a secret's name is refused
// there).
type effectiveMCP struct {
	Command     []string          `json:"command,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	EnvFiles    map[string]string `json:"env_files,omitempty"`
	PassEnv     []string          `json:"pass_env,omitempty"`
	URL         string            `json:"url,omitempty"`
	HeadersFile string            `json:"headers_file,omitempty"`
	Timeout     string            `json:"timeout"`
	MaxResult   int               `json:"max_result"`
}

// effectiveDeskMCP is one entry of a desk's mcp.
type effectiveDeskMCP struct {
	Tools         []string       `json:"tools"`
	Approve       []string       `json:"approve,omitempty"`
	ApproveWithin string         `json:"approve_within"`
	Limits        map[string]int `json:"limits,omitempty"`
}

// effectiveModel is one model of the effective config.
type effectiveModel struct {
	Provider        string  `json:"provider"`
	BaseURL         string  `json:"base_url,omitempty"`
	Model           string  `json:"model,omitempty"`
	APIKeyEnv       string  `json:"api_key_env,omitempty"`
	APIKeyFile      string  `json:"api_key_file,omitempty"`
	ContextWindow   int     `json:"context_window"`
	MaxOutputTokens int     `json:"max_output_tokens"`
	Timeout         string  `json:"timeout"`
	Prices          *Prices `json:"prices,omitempty"`
}

// effectiveDesk is one desk of the effective config.
type effectiveDesk struct {
	Path             string                      `json:"path"`
	Model            string                      `json:"model"`
	Fallbacks        []string                    `json:"fallbacks,omitempty"`
	Instructions     string                      `json:"instructions"`
	InstructionsFile string                      `json:"instructions_file,omitempty"`
	Schedules        []effectiveSchedule         `json:"schedules,omitempty"`
	Curator          Curator                     `json:"curator"`
	Rollover         string                      `json:"rollover"`
	QueueLimit       int                         `json:"queue_limit"`
	Coalesce         string                      `json:"coalesce"`
	Calendar         string                      `json:"calendar,omitempty"`
	Budgets          Budgets                     `json:"budgets"`
	MaxToolRounds    int                         `json:"max_tool_rounds"`
	CompactShare     float64                     `json:"compact_share"`
	CompactAtTokens  int                         `json:"compact_at_tokens,omitempty"`
	Tools            []effectiveTool             `json:"tools,omitempty"`
	MCP              map[string]effectiveDeskMCP `json:"mcp,omitempty"`
	Memory           MemoryGuard                 `json:"memory"`
	PausedTriggers   string                      `json:"paused_triggers"`
	BeyondCalendar   string                      `json:"beyond_calendar,omitempty"`
}

// effectiveSchedule is one schedule of a desk.
type effectiveSchedule struct {
	Name      string `json:"name"`
	Cron      string `json:"cron"`
	Text      string `json:"text"`
	Calendar  string `json:"calendar,omitempty"`
	On        string `json:"on,omitempty"`
	RunWithin string `json:"run_within"`
}

// effectiveTool is one command tool of a desk.
type effectiveTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Command     []string        `json:"command"`
	Timeout     string          `json:"timeout"`
	MaxOutput   int             `json:"max_output"`
}

// effective returns the effective config of cfg.
func effective(cfg *Config) effectiveConfig {
	e := effectiveConfig{
		Path: cfg.Path, StateDir: cfg.StateDir, Timezone: cfg.Timezone, RolloverAt: cfg.RolloverAt,
		Listen: cfg.Listens, AllowedHosts: cfg.AllowedHosts, AuthTokenFile: cfg.AuthTokenFile, FeedTokenFile: cfg.FeedTokenFile, MetricsTokenFile: cfg.MetricsTokenFile,
		DesksDir: cfg.DesksDir, CalendarsDir: cfg.CalendarsDir,
		Calendars: append([]string{}, slices.Sorted(maps.Keys(cfg.Calendars))...), LogLevel: cfg.Log.Level, LogFormat: cfg.Log.Format,
		ShutdownTimeout: cfg.ShutdownTimeout.String(), DebugListen: cfg.DebugListen,
		CalendarsThrough: map[string]string{}, CalendarWarnDays: cfg.CalendarWarnDays, BeyondCalendar: string(cfg.BeyondCalendar),
		Models: map[string]effectiveModel{}, Desks: map[string]effectiveDesk{},
	}
	for name, cal := range cfg.Calendars {
		e.CalendarsThrough[name] = cal.Through
	}
	for name, m := range cfg.Models {
		e.Models[name] = effectiveModel{
			Provider: string(m.Provider), BaseURL: withoutUserinfo(m.BaseURL), Model: m.Model, APIKeyEnv: m.APIKeyEnv, APIKeyFile: m.APIKeyFile,
			ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens, Timeout: m.Timeout.String(), Prices: m.Prices,
		}
	}
	for name, dc := range cfg.Desks {
		d := effectiveDesk{
			Path: dc.Path, Model: dc.Model, Fallbacks: dc.Fallbacks, Instructions: dc.Instructions, InstructionsFile: dc.InstructionsFile,
			Curator: dc.Curator, Rollover: string(dc.Rollover), QueueLimit: dc.QueueLimit, Coalesce: string(dc.Coalesce), Calendar: dc.Calendar,
			Budgets: dc.Budgets, MaxToolRounds: dc.MaxToolRounds, CompactShare: dc.CompactShare, CompactAtTokens: dc.CompactAtTokens, Memory: dc.Memory,
			PausedTriggers: string(dc.PausedTriggers), BeyondCalendar: string(dc.BeyondCalendar),
		}
		for _, sc := range dc.Schedules {
			d.Schedules = append(d.Schedules, effectiveSchedule{
				Name: sc.Name, Cron: sc.Cron, Text: sc.Text, Calendar: sc.Calendar, On: string(sc.On), RunWithin: sc.RunWithin.String(),
			})
		}
		for _, t := range dc.Tools {
			d.Tools = append(d.Tools, effectiveTool{
				Name: t.Name, Description: t.Description, Schema: t.Schema, Command: t.Command, Timeout: t.Timeout.String(), MaxOutput: t.MaxOutput,
			})
		}
		for server, m := range dc.MCP {
			if d.MCP == nil {
				d.MCP = map[string]effectiveDeskMCP{}
			}
			d.MCP[server] = effectiveDeskMCP{Tools: m.Tools, Approve: m.Approve, ApproveWithin: m.ApproveWithin.String(), Limits: m.Limits}
		}
		e.Desks[name] = d
	}
	for name, srv := range cfg.MCPServers {
		if e.MCPServers == nil {
			e.MCPServers = map[string]effectiveMCP{}
		}
		e.MCPServers[name] = effectiveMCP{
			Command: srv.Command, Env: srv.Env, EnvFiles: srv.EnvFiles, PassEnv: srv.PassEnv, URL: withoutUserinfo(srv.URL),
			HeadersFile: srv.HeadersFile, Timeout: srv.Timeout.String(), MaxResult: srv.MaxResult,
		}
	}
	return e
}

// withoutUserinfo drops the user and password from a URL; a URL that does
// not parse is kept only up to its scheme and host, if it has them.
func withoutUserinfo(raw string) string {
	if !strings.Contains(raw, "@") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(a base URL that does not parse, left out: it may hold a password)"
	}
	u.User = nil
	return u.String()
}

// WriteSnapshot writes the effective config of cfg (field by field, with
// no secret: key variables and files are named, base URLs lose their user
// and password) to <state_dir>/config-history/<UTC now>.json, atomically,
// unless the newest snapshot there already holds the same config: a
// snapshot is written only when the config in force changes (the first
// start, an edit, a restart on edited files). reason is "start" or
// "reload". It returns the file written ("" when none was).
func WriteSnapshot(cfg *Config, now time.Time, reason string) (string, error) {
	dir := filepath.Join(cfg.StateDir, HistoryDir)
	snap := configSnapshot{Taken: now, Reason: reason, Config: effective(cfg)}
	latest, err := Snapshots(dir)
	if err != nil {
		return "", err
	}
	if n := len(latest); n > 0 {
		same, err := sameConfig(latest[n-1].Path, snap.Config)
		if err != nil {
			return "", err
		}
		if same {
			return "", nil
		}
	}
	data, err := json.MarshalIndent(snap, "", "  ")
	if err != nil {
		return "", fmt.Errorf("snapshot the config: %w", err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("snapshot the config: %w", err)
	}
	// Two changes at one instant: the later is the one in force from it.
	path := filepath.Join(dir, now.UTC().Format(memory.HistoryStampLayout)+".json")
	if err := memory.WriteFileAtomic(path, append(data, '\n'), 0o640); err != nil {
		return "", fmt.Errorf("snapshot the config: %w", err)
	}
	return path, nil
}

// sameConfig reports whether the snapshot at path holds the config c.
func sameConfig(path string, c effectiveConfig) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("read config snapshot %s: %w", path, err)
	}
	var old struct {
		Config json.RawMessage `json:"config"`
	}
	if json.Unmarshal(b, &old) != nil {
		return false, nil // damaged: a new snapshot follows it
	}
	cur, err := json.Marshal(c)
	if err != nil {
		return false, fmt.Errorf("snapshot the config: %w", err)
	}
	var a, bb bytes.Buffer
	if json.Compact(&a, old.Config) != nil || json.Compact(&bb, cur) != nil {
		return false, nil
	}
	return bytes.Equal(a.Bytes(), bb.Bytes()), nil
}

// SnapshotFile is one file of HistoryDir.
type SnapshotFile struct {
	// Path is the file's path.
	Path string
	// Name is its name in HistoryDir.
	Name string
	// Taken is when its config came into force, from its name.
	Taken time.Time
}

// Snapshots lists the snapshots in dir (<state_dir>/config-history),
// oldest first; a missing dir has none, and files not named as snapshots
// are left out.
func Snapshots(dir string) ([]SnapshotFile, error) {
	entries, err := memory.ListDir(dir, "config snapshots")
	if err != nil {
		return nil, err
	}
	var out []SnapshotFile
	for _, e := range entries {
		stem, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		at, err := time.Parse(memory.HistoryStampLayout, stem)
		if err != nil {
			continue
		}
		out = append(out, SnapshotFile{Path: filepath.Join(dir, e.Name()), Name: e.Name(), Taken: at})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Taken.Before(out[j].Taken) })
	return out, nil
}
