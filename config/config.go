package config

import (
	"strings"
	"time"

	_ "time/tzdata" // zone names must load on hosts without zoneinfo

	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// Defaults and limits of the main file.
const (
	// DefaultPath is where deskd looks for the main file.
	DefaultPath = "/etc/deskd/deskd.yaml"
	// DefaultTimezone is the trading time zone when timezone is not set.
	DefaultTimezone = "Asia/Kolkata"
	// DefaultRolloverAt is when the trading day starts when rollover_at is not set.
	DefaultRolloverAt = "00:00"
	// DefaultListen is the HTTP API address when listen is not set.
	DefaultListen = "127.0.0.1:7317"
	// DefaultDesksDir is the desks folder, relative to the main file, when
	// desks_dir is not set.
	DefaultDesksDir = "desks.d"
	// DefaultLogLevel is the log level when log.level is not set.
	DefaultLogLevel = "info"
	// DefaultLogFormat is the log format when log.format is not set.
	DefaultLogFormat = "json"
	// DefaultShutdownTimeout is shutdown_timeout when it is not set.
	DefaultShutdownTimeout = 30 * time.Second
	// MaxShutdownTimeout is the largest shutdown_timeout allowed.
	MaxShutdownTimeout = 10 * time.Minute
	// DefaultCalendarsDir is the calendars folder, relative to the main
	// file, when calendars_dir is not set.
	DefaultCalendarsDir = "calendars.d"
	// UnixPrefix starts a listen address that is a unix socket: unix:PATH.
	UnixPrefix = "unix:"
)

// The defaults of a desk file and of a model entry are defined by the
// packages that own each setting, and applied here: triggers
// (queue_limit, coalesce, paused_triggers, a schedule's on and missed),
// keeper (rollover), curator (curator.max_changes), memory (memory), router
// (provider, timeout, max_output_tokens, context_window, max_tool_rounds,
// compact_share, a tool's timeout and max_output).

// Config is the whole configuration: the main file and every desk file.
// A Config returned by Load is valid in full; treat it as read-only.
type Config struct {
	// Path is the absolute path of the main file.
	Path string
	// StateDir is the absolute path of the state folder (state_dir, required).
	StateDir string
	// StateDirOverridden is true when StateDir came from `deskd run
	// --state-dir`, not the file: a reload keeps it, and does not report
	// the file's state_dir as a change.
	StateDirOverridden bool
	// Timezone is the trading time zone's name (timezone, default Asia/Kolkata).
	Timezone string
	// Location is Timezone loaded.
	Location *time.Location
	// RolloverAt is when the trading day starts (rollover_at, "HH:MM",
	// 24-hour, default "00:00").
	RolloverAt string
	// Day maps instants to trading dates: Location, and Start parsed from RolloverAt.
	Day memory.TradingDay
	// Listen is the HTTP API's first address (listen, default
	// 127.0.0.1:7317): host:port, or unix:PATH for a unix socket.
	Listen string
	// Listens is every address of listen, which may be one string or a
	// list; Listen is its first.
	Listens []string
	// AllowedHosts are the host names (allowed_hosts), lower case and
	// without a final dot, that a request over TCP may name in its Host
	// header beyond those always accepted: localhost, the listen
	// addresses' own hosts and every IP address. Any other name is
	// refused (421), against DNS rebinding. A reload applies a change.
	AllowedHosts []string
	// AuthTokenFile is the absolute path of the file holding the API's
	// bearer token (auth_token_file, relative to the main file's
	// directory; $VARIABLES expanded). Empty: no token, and then listen
	// must be loopback or a unix socket. Its token is the operator's
	// credential: every endpoint, manual triggers and control actions.
	AuthTokenFile string
	// FeedTokenFile is the absolute path of the file holding the feeds'
	// bearer token (feed_token_file, resolved as AuthTokenFile; optional,
	// and only beside AuthTokenFile). Its token may post market triggers
	// and read the state of the triggers it posted, nothing else.
	FeedTokenFile string
	// MetricsTokenFile is the absolute path of the file holding a scrape
	// token for GET /metrics alone (metrics_token_file, resolved as
	// AuthTokenFile; optional, and only beside AuthTokenFile). Without it,
	// /metrics takes the operator's token.
	MetricsTokenFile string
	// CalendarsDir is the absolute path of the calendars folder
	// (calendars_dir, default calendars.d beside the main file; it need
	// not exist unless set).
	CalendarsDir string
	// Calendars is every exchange calendar by name: the ones deskd ships
	// (NSE) and those of CalendarsDir, whose files replace shipped ones of
	// the same name.
	Calendars map[string]*triggers.Calendar
	// CalendarWarnDays is how many days before a calendar's end (its
	// through) deskd starts to warn of it (calendar_warn_days, default
	// DefaultCalendarWarnDays).
	CalendarWarnDays int
	// BeyondCalendar is the desks' default of what they do past the end of
	// a calendar (beyond_calendar: hold, the default, or weekdays).
	BeyondCalendar triggers.Beyond
	// DesksDir is the absolute path of the desks folder (desks_dir,
	// default desks.d beside the main file).
	DesksDir string
	// Log is the logging settings (log).
	Log Log
	// ShutdownTimeout bounds a graceful shutdown (shutdown_timeout,
	// default 30s, at most 10m).
	ShutdownTimeout time.Duration
	// DebugListen is the address of the debug listener, which serves
	// net/http/pprof's profiles under /debug/pprof/ (debug_listen, such as
	// 127.0.0.1:6060). It must be loopback: 127.0.0.0/8, ::1 or localhost.
	// Empty: no debug listener. It is opened at start only: a change
	// takes effect after a restart.
	DebugListen string
	// Models is the model providers (models), by model name.
	Models map[string]Model
	// Desks is every desk in DesksDir, by desk name.
	Desks map[string]*Desk
	// NATS is the nats section (nats, nats.go); nil: NATS is off.
	NATS *NATS
	// Cluster is the cluster section (cluster, cluster.go); nil: one host,
	// local disk only.
	Cluster *Cluster
	// MCPServers is the MCP servers desks may call tools on (mcp_servers,
	// mcp.go), by server name.
	MCPServers map[string]*MCPServer
	// Notify is the notification targets (notify, notify.go), by name;
	// nil without the section.
	Notify map[string]*NotifyTarget
	// ConsoleURL is the console's address as operators reach it
	// (console_url, no trailing /): notifications link to it. Empty: no
	// links.
	ConsoleURL string
}

// Log is the logging settings of the main file.
type Log struct {
	// Level is trace, debug, info (default), warn or error (level); a
	// reload applies a change at once.
	Level string
	// Format is json (default) or console (format).
	Format string
}

// Model is one entry of the main file's models: a provider and how to
// reach it. It names where the API key comes from but never holds the key.
type Model struct {
	// Name is the entry's key in models.
	Name string
	// Provider is scripted, openai or anthropic (provider, required).
	Provider router.ProviderName
	// BaseURL is the API's base URL (base_url, optional; openai and
	// anthropic only). Empty means the provider's default.
	BaseURL string
	// Model is the provider's model id (model; required for openai and anthropic).
	Model string
	// APIKeyEnv names the environment variable holding the API key (api_key_env).
	APIKeyEnv string
	// APIKeyFile is the absolute path of a file holding the API key
	// (api_key_file: relative to the main file's directory; environment
	// variables such as $CREDENTIALS_DIRECTORY are expanded in this field only).
	APIKeyFile string
	// ContextWindow is the model's context size in tokens (context_window,
	// default router.DefaultContextWindow for openai and anthropic, 0 for
	// scripted).
	ContextWindow int
	// MaxOutputTokens caps one response (max_output_tokens, default
	// router.DefaultMaxOutputTokens).
	MaxOutputTokens int
	// Timeout bounds one request (timeout, default router.DefaultTimeout).
	Timeout time.Duration
	// Prices are per million tokens (prices), nil when not set.
	Prices *Prices
}

// Desk is one desk file, <desks_dir>/<desk>.yaml.
type Desk struct {
	// Name is the file name without .yaml.
	Name string
	// Path is the absolute path of the desk file.
	Path string
	// Model names the desk's model, a key of Config.Models (model, required).
	Model string
	// Fallbacks names the models tried, in order, when Model fails
	// (fallbacks; keys of Config.Models, no duplicates, not Model).
	Fallbacks []string
	// Instructions is the desk's instructions: the inline instructions
	// (instructions), or the content of InstructionsFile.
	Instructions string
	// InstructionsFile is the absolute path instructions were read from
	// (instructions_file, relative to the desk file's directory), or empty.
	InstructionsFile string
	// Schedules is the desk's cron schedules (schedules), in file order.
	Schedules []Schedule
	// Curator is the skill curator settings (curator).
	Curator Curator
	// Rollover is daily (default), trading_day or off (rollover).
	Rollover keeper.RolloverMode
	// QueueLimit bounds the desk's trigger queue (queue_limit, default
	// triggers.DefaultQueueLimit, at most triggers.MaxQueueLimit).
	QueueLimit int
	// Coalesce is off (default) or key (coalesce).
	Coalesce triggers.Coalesce
	// Calendar names the desk's exchange calendar (calendar, a key of
	// Config.Calendars): the default of its schedules, and what
	// rollover: trading_day follows.
	Calendar string
	// BeyondCalendar is what the desk does past the end of its calendars
	// (beyond_calendar, default the main file's): hold its trading_days and
	// market_hours slots, or assume the calendar's weekdays.
	BeyondCalendar triggers.Beyond
	// Budgets are the desk's spending limits (budgets).
	Budgets Budgets
	// MaxToolRounds bounds the tool rounds of a turn (max_tool_rounds,
	// default router.DefaultMaxToolRounds).
	MaxToolRounds int
	// CompactShare is the share of the model's context window a request
	// may fill before the session is compacted (compact_share, default
	// router.DefaultCompactShare).
	CompactShare float64
	// CompactAtTokens is the estimated size, in tokens, of the next
	// request at which the session is compacted, whatever the model's
	// context window (compact_at_tokens, default
	// router.DefaultCompactAtTokens, 0: compact_share alone decides); the
	// smaller of the two bounds wins.
	CompactAtTokens int
	// Tools are the desk's command tools (tools), beside the built-in ones.
	Tools []Tool
	// MCP is the tools the desk may call on MCP servers (mcp, mcp.go), by
	// server name; each server is one of Config.MCPServers.
	MCP map[string]DeskMCP
	// Memory guards the folds into Memory.md (memory).
	Memory MemoryGuard
	// PausedTriggers is what the desk does with triggers while an operator
	// has paused it: queue (default) them for when it is resumed, or
	// refuse them (paused_triggers).
	PausedTriggers triggers.PausedTriggers
	// NotifyAnswers names the notify targets that also get each of the
	// desk's answers (notify: {answers: [...]}, notify.go).
	NotifyAnswers []string
}

// Schedule is one entry of a desk's schedules: a cron expression that
// fires a turn with Text.
type Schedule struct {
	// Name identifies the schedule within its desk (name, required).
	Name string
	// Cron is the cron expression as written (cron, required).
	Cron string
	// Text is the turn's message (text, required).
	Text string
	// Spec is Cron parsed, evaluated in Config.Location.
	Spec *triggers.Spec
	// Calendar names the exchange calendar the schedule follows
	// (calendar, default the desk's calendar).
	Calendar string
	// On is every_day (default), trading_days or market_hours (on);
	// trading_days and market_hours need a calendar.
	On triggers.On
	// RunWithin is the missed-run policy (missed): a slot that passed while
	// deskd was down still runs when it is at most this late (missed:
	// {run_within: 10m}; default triggers.DefaultRunWithin); 0 is missed: skip.
	RunWithin time.Duration
}

// Curator is a desk's skill curator settings.
type Curator struct {
	// Enabled runs the curator after the day's summary (enabled, default true).
	Enabled bool
	// MaxChanges caps the changes of one review (max_changes, default
	// curator.DefaultMaxChanges).
	MaxChanges int
}

// MemoryGuard is a desk's guard on folds into Memory.md (memory).
type MemoryGuard struct {
	// MaxBytes caps Memory.md (max_bytes, default memory.DefaultMemoryMaxBytes).
	MaxBytes int
	// MinKept is the share of prior entries a fold must keep (min_kept,
	// default memory.DefaultMemoryMinKept).
	MinKept float64
}

// Problem is one thing wrong with the config.
type Problem struct {
	// File is the path of the file the problem is in.
	File string
	// Field is the dotted path of the field, such as "schedules[1].cron"
	// or "models.offline.provider"; empty when the problem is with the
	// whole file.
	Field string
	// Reason says what is wrong. It never holds an API key.
	Reason string
}

// String formats the problem as "<file>: <field>: <reason>", or
// "<file>: <reason>" when Field is empty.
func (p Problem) String() string {
	if p.Field == "" {
		return p.File + ": " + p.Reason
	}
	return p.File + ": " + p.Field + ": " + p.Reason
}

// Problems is every problem found in one load; it is the error Load returns.
type Problems []Problem

// Error returns the problems, one a line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
