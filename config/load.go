package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskd/deskd/keeper"
	"github.com/deskd/deskd/memory/durable"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

var (
	deskNameRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	modelNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	clockRE     = regexp.MustCompile(`^([01][0-9]|2[0-3]):([0-5][0-9])$`)
	envNameRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// usualEnvNameRE is the upper-case form environment variables are given
	// by convention: a name of that form is quoted in a problem, any other
	// is not (it may be a key pasted where its name belongs).
	usualEnvNameRE = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,39}$`)
)

// Load reads and validates the main file at path and every desk file in
// its desks_dir. It returns every problem at once, as Problems, and never
// a partially valid config: on any problem the *Config is nil.
func Load(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, Problems{{File: path, Reason: err.Error()}}
	}
	s := &sink{}
	c := loadMain(s, abs)
	if c != nil && c.DesksDir != "" {
		loadDesksDir(s, c)
	}
	if len(s.ps) > 0 {
		return nil, s.ps
	}
	return c, nil
}

// maxInstructionsFile bounds the size of a desk's instructions_file.
const maxInstructionsFile = 1 << 20

// resolve makes p absolute, relative to dir.
func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// loadMain reads the main file. It returns nil if the file could not be
// read at all; otherwise a Config holding whatever was valid.
func loadMain(s *sink, file string) *Config {
	root, ok := readYAML(s, file)
	if !ok {
		return nil
	}
	root.only("allowed_hosts", "auth_token_file", "beyond_calendar", "calendar_warn_days", "calendars_dir", "cluster", "console_url", "debug_listen", "desks_dir", "feed_token_file", "listen", "log", "mcp_servers", "metrics_token_file", "models", "nats", "notify", "rollover_at",
		"shutdown_timeout", "state_dir", "timezone")
	dir := filepath.Dir(file)
	c := &Config{Path: file, Models: map[string]Model{}, Desks: map[string]*Desk{}}

	if p, ok := root.requiredStr("state_dir"); ok {
		c.StateDir = resolve(dir, p)
	}

	c.Timezone = DefaultTimezone
	if tz, st := root.str("timezone"); st == set {
		c.Timezone = tz
		switch {
		case strings.TrimSpace(tz) == "":
			root.problem("timezone", "must not be empty (default %s)", DefaultTimezone)
		case tz == "Local":
			root.problem("timezone", "name the zone, such as %s; Local depends on the host", DefaultTimezone)
		default:
			if loc, err := time.LoadLocation(tz); err != nil {
				root.problem("timezone", "unknown time zone %q", tz)
			} else {
				c.Location = loc
			}
		}
	} else if st == absent {
		c.Location, _ = time.LoadLocation(DefaultTimezone) // embedded tzdata
	}

	c.RolloverAt = DefaultRolloverAt
	if v, ok := root.get("rollover_at"); ok {
		if r, isStr := v.(string); isStr {
			c.RolloverAt = r
			if d, ok := parseClock(r); ok {
				c.Day.Start = d
			} else {
				root.problem("rollover_at", "%q is not a time of day: want \"HH:MM\", 24-hour, \"00:00\" to \"23:59\"", r)
			}
		} else {
			root.problem("rollover_at", "want \"HH:MM\" as a quoted string, got %s; quote it, as in rollover_at: \"06:00\"", kind(v))
		}
	}
	c.Day.Location = c.Location

	loadListen(root, c)       // listen, auth_token_file, calendars: triggers.go
	loadAllowedHosts(root, c) // hosts.go
	loadAuth(root, c, dir)
	loadTokenFiles(root, c, dir)
	loadCalendars(root, c, dir)
	loadNATS(root, c, dir)           // nats.go
	loadCluster(root, c, osHostname) // cluster.go
	loadMCPServers(root, c, dir)     // mcp.go
	loadNotify(root, c, dir)         // notify.go

	c.DesksDir = resolve(dir, DefaultDesksDir)
	if d, st := root.str("desks_dir"); st == set {
		if strings.TrimSpace(d) == "" {
			root.problem("desks_dir", "must not be empty (default %s)", DefaultDesksDir)
			c.DesksDir = ""
		} else {
			c.DesksDir = resolve(dir, d)
		}
	} else if st == invalid {
		c.DesksDir = ""
	}

	c.Log = Log{Level: DefaultLogLevel, Format: DefaultLogFormat}
	if lg, st := root.mapping("log"); st == set {
		lg.only("format", "level")
		if l, st := lg.str("level"); st == set {
			c.Log.Level = l
			if !slices.Contains([]string{"trace", "debug", "info", "warn", "error"}, l) {
				lg.problem("level", "%q is not a level: want trace, debug, info, warn or error", l)
			}
		}
		if f, st := lg.str("format"); st == set {
			c.Log.Format = f
			if f != "json" && f != "console" {
				lg.problem("format", "%q is not a format: want json or console", f)
			}
		}
	}

	c.ShutdownTimeout = DefaultShutdownTimeout
	if d, st := root.duration("shutdown_timeout"); st == set {
		c.ShutdownTimeout = d
		if d <= 0 || d > MaxShutdownTimeout {
			root.problem("shutdown_timeout", "%v is out of range: want more than 0 and at most %v", d, MaxShutdownTimeout)
		}
	}

	if a, st := root.str("debug_listen"); st == set && a != "" {
		c.DebugListen = a
		if err := checkDebugListen(a); err != nil {
			root.problem("debug_listen", "%v", err)
		}
	}

	if ms, st := root.mapping("models"); st == set {
		names := make([]string, 0, len(ms.m))
		for name := range ms.m {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			c.Models[name] = loadModel(ms, name, dir)
		}
	}
	return c
}

// parseClock parses "HH:MM" (24-hour) into the time since midnight.
func parseClock(s string) (time.Duration, bool) {
	m := clockRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	h, _ := strconv.Atoi(m[1])
	mm, _ := strconv.Atoi(m[2])
	return time.Duration(h)*time.Hour + time.Duration(mm)*time.Minute, true
}

// checkDebugListen checks debug_listen: host:port (port 0 to 65535) on a
// loopback host. The profiles it serves show the daemon's memory, and so
// may show prompts, replies and keys: they must not reach the network,
// and the listener has no token.
func checkDebugListen(addr string) error {
	if strings.HasPrefix(addr, UnixPrefix) {
		return fmt.Errorf("%q: want a loopback host:port such as 127.0.0.1:6060, not a unix socket", addr)
	}
	if err := checkListen(addr); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(addr) // checkListen parsed it
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	const why = "the debug listener serves the daemon's memory profiles without a token, so it must be loopback " +
		"(127.0.0.1, ::1 or localhost; reach it from elsewhere through ssh -L)"
	ip := net.ParseIP(host)
	switch {
	case host == "":
		return fmt.Errorf("%q listens on every interface: %s", addr, why)
	case ip == nil:
		return fmt.Errorf("%q: host name %q may resolve to a non-loopback address: %s", addr, host, why)
	case ip.IsUnspecified():
		return fmt.Errorf("%q listens on every interface: %s", addr, why)
	case !ip.IsLoopback():
		return fmt.Errorf("%q is not a loopback address: %s", addr, why)
	}
	return nil
}

func unwrapAddrErr(err error) string {
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return ae.Err
	}
	return err.Error()
}

// loadModel reads models.<name>. The model is returned (and kept in
// Config.Models) even when it has problems, so that desks naming it are
// not also reported.
func loadModel(ms node, name, dir string) Model {
	m := Model{Name: name}
	field := ms.field(name)
	if !modelNameRE.MatchString(name) {
		ms.s.add(ms.file, field, "bad model name %q: want %s", name, modelNameRE)
	}
	raw, _ := ms.get(name)
	n, ok := ms.asMapping(field, raw)
	if !ok {
		return m
	}
	n.only("api_key_env", "api_key_file", "base_url", "context_window", "max_output_tokens", "model", "prices", "provider", "timeout")
	m.Prices = loadPrices(n)

	if p, ok := n.requiredStr("provider"); ok {
		m.Provider = router.ProviderName(p)
		if m.Provider != router.ScriptedProvider && m.Provider != router.OpenAIProvider && m.Provider != router.AnthropicProvider {
			n.problem("provider", "%q is not a provider: want scripted, openai or anthropic", p)
		}
	}
	remote := m.Provider == router.OpenAIProvider || m.Provider == router.AnthropicProvider

	if u, st := n.str("base_url"); st == set {
		m.BaseURL = u
		if err := router.CheckBaseURL(u); err != nil {
			n.problem("base_url", "%v", err)
		}
	}

	if remote {
		if id, ok := n.requiredStr("model"); ok {
			m.Model = id
		}
	} else if id, st := n.str("model"); st == set {
		m.Model = id
	}

	env, envSt := n.str("api_key_env")
	file, fileSt := n.str("api_key_file")
	if envSt == set {
		m.APIKeyEnv = env
	}
	if fileSt == set && strings.TrimSpace(file) != "" {
		if p, err := expandKeyFile(file); err != nil {
			n.problem("api_key_file", "%v", err)
		} else {
			m.APIKeyFile = resolve(dir, p)
		}
	}
	if remote {
		switch {
		case envSt == absent && fileSt == absent:
			n.problem("api_key_env", "required for %s: set api_key_env or api_key_file", m.Provider)
		case envSt == set && fileSt == set:
			n.problem("api_key_file", "set only one of api_key_env and api_key_file")
		case envSt == set:
			// The name is quoted only in its usual upper-case form: a key
			// pasted here by mistake must not reach the log or the events.
			switch {
			case !envNameRE.MatchString(env):
				n.problem("api_key_env", "not an environment variable name (letters, digits and _, not starting with a digit); "+
					"if it is the key itself, put the key in the environment or a file: the YAML names where it is")
			case os.Getenv(env) == "":
				n.problem("api_key_env", "%s", unsetEnvReason(env, "this environment"))
			}
		case fileSt == set && strings.TrimSpace(file) == "":
			n.problem("api_key_file", "must not be empty")
		case fileSt == set && m.APIKeyFile != "":
			if err := checkKeyFile(m.APIKeyFile); err != nil {
				n.problem("api_key_file", "%v", err)
			}
		}
	}

	if remote {
		m.ContextWindow = router.DefaultContextWindow
	}
	if cw, st := n.integer("context_window"); st == set {
		m.ContextWindow = cw
		if cw < 0 || remote && cw == 0 {
			n.problem("context_window", "%d: want a positive number of tokens", cw)
		}
	}
	m.MaxOutputTokens = router.DefaultMaxOutputTokens
	if mo, st := n.integer("max_output_tokens"); st == set {
		m.MaxOutputTokens = mo
		if mo <= 0 {
			n.problem("max_output_tokens", "%d: want a positive number of tokens", mo)
		}
	}
	if m.ContextWindow > 0 && m.MaxOutputTokens >= m.ContextWindow {
		n.problem("max_output_tokens", "%d must be less than context_window (%d)", m.MaxOutputTokens, m.ContextWindow)
	}
	m.Timeout = router.DefaultTimeout
	if d, st := n.duration("timeout"); st == set {
		m.Timeout = d
		if d <= 0 {
			n.problem("timeout", "%v: want more than 0", d)
		}
	}
	return m
}

// expandKeyFile expands environment variables such as
// $CREDENTIALS_DIRECTORY in an api_key_file or auth_token_file value; an
// unset one is an error. Its messages quote nothing of the value (see
// secret.go).
func expandKeyFile(p string) (string, error) {
	missing := 0
	out := os.Expand(p, func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			missing++
		}
		return v
	})
	if missing > 0 {
		return "", errors.New("it uses an environment variable that is not set here " +
			"(systemd sets $CREDENTIALS_DIRECTORY for the service only)")
	}
	if strings.TrimSpace(out) == "" {
		return "", errors.New("it expands to nothing")
	}
	return out, nil
}

// pathErr drops the path from an *fs.PathError, which messages name already.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// isIgnored reports whether a desks folder entry is hidden or an editor's
// temporary file.
func isIgnored(name string) bool {
	return strings.HasPrefix(name, ".") ||
		strings.HasSuffix(name, "~") ||
		strings.HasSuffix(name, ".swp") ||
		strings.HasSuffix(name, ".tmp")
}

// loadDesksDir loads every <desk>.yaml in c.DesksDir into c.Desks.
func loadDesksDir(s *sink, c *Config) {
	entries, err := os.ReadDir(c.DesksDir)
	if err != nil {
		s.add(c.Path, "desks_dir", "cannot read %s: %v", c.DesksDir, pathErr(err))
		return
	}
	for _, e := range entries { // sorted by name
		name := e.Name()
		p := filepath.Join(c.DesksDir, name)
		switch {
		case isIgnored(name):
			continue
		case strings.HasSuffix(name, ".yml"):
			s.add(p, "", "use .yaml: rename it to %s", strings.TrimSuffix(name, ".yml")+".yaml")
			continue
		case !strings.HasSuffix(name, ".yaml"):
			continue
		}
		fi, err := os.Stat(p) // follows symlinks
		if err != nil {
			s.add(p, "", "cannot read: %v", pathErr(err))
			continue
		}
		if fi.IsDir() {
			s.add(p, "", "is a directory, not a desk file")
			continue
		}
		if d := loadDesk(s, c, p); d != nil {
			c.Desks[d.Name] = d
		}
	}
}

// loadDesk reads one desk file. It returns nil if the desk cannot be named
// or read; otherwise the desk with whatever was valid.
func loadDesk(s *sink, c *Config, file string) *Desk {
	base := filepath.Base(file)
	name, isYAML := strings.CutSuffix(base, ".yaml")
	named := true
	switch {
	case !isYAML:
		s.add(file, "", "desk files are named <desk>.yaml")
		named = false
	case !deskNameRE.MatchString(name):
		s.add(file, "", "bad desk name %q (the file name without .yaml): want %s", name, deskNameRE)
		named = false
	}
	root, ok := readYAML(s, file)
	if !ok {
		return nil
	}
	root.only("beyond_calendar", "budgets", "calendar", "coalesce", "compact_at_tokens", "compact_share", "curator", "fallbacks", "instructions", "instructions_file", "max_tool_rounds", "mcp", "memory", "model", "notify", "paused_triggers", "queue_limit", "rollover", "schedules", "tools")
	d := &Desk{Name: name, Path: file, Curator: Curator{Enabled: true}, Rollover: keeper.RolloverDaily}

	if m, ok := root.requiredStr("model"); ok {
		d.Model = m
		checkModelRef(root, "model", m, c.Models)
	}

	if fbs, st := root.list("fallbacks"); st == set {
		seen := map[string]bool{}
		for i, v := range fbs {
			field := fmt.Sprintf("%s[%d]", root.field("fallbacks"), i)
			fb, ok := v.(string)
			switch {
			case !ok:
				s.add(file, field, "want a model name, got %s", kind(v))
				continue
			case fb == d.Model:
				s.add(file, field, "%q is the desk's model; fallbacks are other models", fb)
			case seen[fb]:
				s.add(file, field, "%q is listed twice", fb)
			default:
				checkModelRef(root, field, fb, c.Models)
			}
			seen[fb] = true
			d.Fallbacks = append(d.Fallbacks, fb)
		}
	}

	text, textSt := root.str("instructions")
	ifile, fileSt := root.str("instructions_file")
	switch {
	case textSt == set && fileSt == set:
		root.problem("instructions_file", "set only one of instructions and instructions_file")
	case textSt == set:
		d.Instructions = text
	case fileSt == set && strings.TrimSpace(ifile) == "":
		root.problem("instructions_file", "must not be empty")
	case fileSt == set:
		d.InstructionsFile = resolve(filepath.Dir(file), ifile)
		// a device (/dev/zero) or a FIFO would never end: regular files only
		b, err := durable.ReadRegular(d.InstructionsFile, maxInstructionsFile, durable.Follow)
		var refused *durable.RefusedError
		switch {
		case errors.As(err, &refused):
			root.problem("instructions_file", "%s is %s", d.InstructionsFile, refused.Reason)
		case err != nil:
			root.problem("instructions_file", "cannot read %s: %v", d.InstructionsFile, pathErr(err))
		default:
			d.Instructions = string(b)
		}
	}

	loc := c.Location
	if loc == nil {
		loc = time.UTC // the time zone is reported already; still check the expressions
	}
	root.eachNamed(namedList{key: "schedules", what: "schedule", re: deskNameRE,
		allowed: []string{"calendar", "cron", "missed", "name", "on", "text"}}, func(sn node, name string) {
		sc := Schedule{Name: name}
		if expr, ok := sn.requiredStr("cron"); ok {
			sc.Cron = expr
			spec, err := triggers.ParseSpec(expr, loc)
			if err != nil {
				sn.problem("cron", "%v", err)
			} else {
				sc.Spec = spec
			}
		}
		if t, ok := sn.requiredStr("text"); ok {
			sc.Text = t
		}
		loadScheduleTriggers(sn, &sc, c)
		d.Schedules = append(d.Schedules, sc)
	})

	if cur, st := root.mapping("curator"); st == set {
		cur.only("enabled", "max_changes")
		if b, st := cur.boolean("enabled"); st == set {
			d.Curator.Enabled = b
		}
		if v, st := cur.integer("max_changes"); st == set {
			d.Curator.MaxChanges = v
			if v < 1 || v > 100 {
				cur.problem("max_changes", "%d: want 1 to 100", v)
			}
		}
	}

	if r, st := root.str("rollover"); st == set {
		d.Rollover = keeper.RolloverMode(r)
		if d.Rollover != keeper.RolloverDaily && d.Rollover != keeper.RolloverOff && d.Rollover != keeper.RolloverTradingDay {
			root.problem("rollover", "%q: want daily or off, or trading_day (with a calendar)", r)
		}
	}

	loadDeskModelKeys(root, d)
	loadDeskMCP(root, d, c)    // mcp.go
	loadDeskNotify(root, d, c) // notify.go

	loadDeskTriggers(root, d, c)
	finishDeskTriggers(root, d)

	if !named {
		return nil
	}
	return d
}

// checkModelRef adds a problem if name is not a key of models.
func checkModelRef(n node, field, name string, models map[string]Model) {
	if _, ok := models[name]; ok {
		return
	}
	known := make([]string, 0, len(models))
	for k := range models {
		known = append(known, k)
	}
	slices.Sort(known)
	reason := fmt.Sprintf("unknown model %q", name)
	if _, ok := models[strings.ToLower(name)]; ok {
		reason += " (model names are lower case)"
	}
	if len(known) == 0 {
		reason += "; the main file's models is empty"
	} else {
		reason += "; models has " + strings.Join(known, ", ")
	}
	n.s.add(n.file, field, "%s", reason)
}

// loadTokenFiles reads feed_token_file and metrics_token_file: token
// files checked as auth_token_file is, each a credential of its own (a
// feed's: market triggers only; a scraper's: GET /metrics only). They need
// auth_token_file (without the operator's token the API is open to every
// local client, so theirs would limit nothing), and no two of the three
// may hold the same token (a request would carry the wrong trust).
func loadTokenFiles(root node, c *Config, dir string) {
	tokens := map[string]string{} // key -> token, of the files that can serve
	if c.AuthTokenFile != "" {
		if b, err := readSecretFile(c.AuthTokenFile); err == nil && firstLineToken(b) != "" {
			tokens["auth_token_file"] = firstLineToken(b)
		}
	}
	for _, f := range []struct {
		key, before string
		dst         *string
	}{
		{"feed_token_file", "auth_token_file", &c.FeedTokenFile},
		{"metrics_token_file", "feed_token_file", &c.MetricsTokenFile},
	} {
		v, st := root.str(f.key)
		if st != set {
			continue
		}
		p, err := expandKeyFile(v)
		switch {
		case strings.TrimSpace(v) == "":
			root.problem(f.key, "must not be empty: leave it out for none")
			continue
		case err != nil:
			root.problem(f.key, "%v", err)
			continue
		}
		if _, ok := root.get("auth_token_file"); !ok {
			root.problem(f.key, "needs auth_token_file: without the operator's token the API is open to every local client, so this token would limit nothing")
			continue
		}
		path := resolve(dir, p)
		if err := checkTokenFile(path); err != nil {
			root.problem(f.key, "%v", err)
			continue
		}
		b, err := readSecretFile(path)
		if err != nil {
			root.problem(f.key, "%v", err)
			continue
		}
		tok := firstLineToken(b)
		for _, other := range []string{"auth_token_file", "feed_token_file"} {
			if t, ok := tokens[other]; ok && t == tok {
				root.problem(f.key, "the file it names holds the same token as %s: give each credential a token of its own", other)
				tok = ""
				break
			}
		}
		if tok == "" {
			continue
		}
		tokens[f.key] = tok
		*f.dst = path
	}
}

// unsetEnvReason is the reason of a problem with a field naming env, an
// environment variable unset in where: the name is given when it has the
// usual upper-case form, and withheld otherwise, since it may then be a
// secret pasted where its name belongs.
func unsetEnvReason(env, where string) string {
	if usualEnvNameRE.MatchString(env) {
		return fmt.Sprintf("the environment variable it names, %s, is not set (or empty) in %s", env, where)
	}
	return fmt.Sprintf("the environment variable it names is not set (or empty) in %s (its name is not shown, as it is not in the usual upper-case form and may be a secret pasted by mistake)", where)
}
