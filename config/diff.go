package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Change is one difference between two configs, in the words a reload
// reports it (config.reloaded, deskd check-config --diff).
type Change struct {
	// Desk is the desk the change concerns; empty for daemon-wide settings.
	Desk string
	// Field is the dotted field that changed, such as "model",
	// "schedules.open", "budgets.day_tokens" or "models.fast"; empty when a
	// whole desk was added or removed.
	Field string
	// What says what changed, such as `schedule open moved from "* * * * *"
	// to "*/5 * * * *"`. It never holds instructions, schedule texts, tool
	// descriptions or the value of a field that may hold a secret
	// (auth_token_file, api_key_file, ...), only that they changed.
	What string
	// Restart is true when the running daemon cannot apply the change: it
	// takes effect after a restart (state_dir, listen, timezone, ...).
	Restart bool
}

// String returns What, prefixed with "desk <name>: " for a desk's change.
func (c Change) String() string {
	if c.Desk == "" {
		return c.What
	}
	return "desk " + c.Desk + ": " + c.What
}

// restartNote ends the What of a change that needs a restart.
const restartNote = " (takes effect after a restart)"

// pinned are the daemon-wide settings a running deskd does not re-apply:
// the state folder and its lock, the API's listeners and tokens, the
// debug listener (opened at start only), the trading day every desk was built on, the logger's format, the shutdown
// deadline. This list is the one place that says so: Diff marks their
// changes Restart, and Plan keeps their running values (keep copies them
// from the running config into the one that will run).
var pinned = []struct {
	field string // the Change.Field of the setting
	keep  func(next, cur *Config)
}{
	{"cluster", func(n, c *Config) { n.Cluster = c.Cluster }},
	{"auth_token_file", func(n, c *Config) { n.AuthTokenFile = c.AuthTokenFile }},
	{"debug_listen", func(n, c *Config) { n.DebugListen = c.DebugListen }},
	{"feed_token_file", func(n, c *Config) { n.FeedTokenFile = c.FeedTokenFile }},
	{"listen", func(n, c *Config) { n.Listen, n.Listens = c.Listen, c.Listens }},
	{"log.format", func(n, c *Config) { n.Log.Format = c.Log.Format }},
	{"metrics_token_file", func(n, c *Config) { n.MetricsTokenFile = c.MetricsTokenFile }},
	{"nats", func(n, c *Config) { n.NATS = c.NATS }},
	{"notify", func(n, c *Config) { n.Notify, n.ConsoleURL = c.Notify, c.ConsoleURL }},
	{"console_url", func(n, c *Config) { n.Notify, n.ConsoleURL = c.Notify, c.ConsoleURL }},
	{"rollover_at", func(n, c *Config) { n.RolloverAt, n.Day = c.RolloverAt, c.Day }},
	{"shutdown_timeout", func(n, c *Config) { n.ShutdownTimeout = c.ShutdownTimeout }},
	{"state_dir", func(n, c *Config) { n.StateDir = c.StateDir }},
	{"timezone", func(n, c *Config) { n.Timezone, n.Location, n.Day = c.Timezone, c.Location, c.Day }},
}

// isPinned reports whether the daemon-wide field is one of pinned.
func isPinned(field string) bool {
	for _, p := range pinned {
		if p.field == field {
			return true
		}
	}
	return false
}

// Diff returns what changed from old to new: daemon-wide changes first,
// then each desk's, sorted by desk and then by field. A nil config counts
// as one with no desks (and no other differences), so Diff(nil, c) lists
// every desk of c as added. Equal configs give no changes.
//
// Fields Diff does not know by name (added to Config, Desk or Model after
// it was written) are still reported, by their key: "queue_limit changed
// from 256 to 100", "tools changed".
func Diff(old, new *Config) []Change {
	var cs []Change
	if old != nil && new != nil {
		cs = diffDaemon(old, new)
	}
	var oldDesks, newDesks map[string]*Desk
	if old != nil {
		oldDesks = old.Desks
	}
	if new != nil {
		newDesks = new.Desks
	}
	for name, od := range oldDesks {
		if nd := newDesks[name]; nd == nil && od != nil {
			cs = append(cs, Change{Desk: name, What: "desk removed"})
		}
	}
	for name, nd := range newDesks {
		if nd == nil {
			continue
		}
		od := oldDesks[name]
		if od == nil {
			cs = append(cs, Change{Desk: name, What: "desk added"})
			continue
		}
		for _, fd := range diffDesk(od, nd) {
			cs = append(cs, Change{Desk: name, Field: fd.field, What: fd.what})
		}
	}
	slices.SortStableFunc(cs, func(a, b Change) int {
		if c := strings.Compare(a.Desk, b.Desk); c != 0 {
			return c
		}
		return strings.Compare(a.Field, b.Field) // stable: a schedule's move before its text
	})
	if len(cs) == 0 {
		return nil
	}
	return cs
}

// fieldDiff is one changed field, before it becomes a Change.
type fieldDiff struct{ field, what string }

func changed(field, format string, args ...any) fieldDiff {
	return fieldDiff{field, fmt.Sprintf(format, args...)}
}

// diffDaemon compares the main files' settings.
func diffDaemon(o, n *Config) []Change {
	var fds []fieldDiff
	if !slices.Equal(o.Listens, n.Listens) {
		fds = append(fds, changed("listen", "listen changed from %s to %s", list(o.Listens), list(n.Listens)))
	}
	if !slices.Equal(o.AllowedHosts, n.AllowedHosts) { // applied at once (desk/httpapi reads it at each request)
		fds = append(fds, changed("allowed_hosts", "allowed_hosts changed from %s to %s", list(o.AllowedHosts), list(n.AllowedHosts)))
	}
	if o.Log.Level != n.Log.Level {
		fds = append(fds, changed("log.level", "log level changed from %s to %s", o.Log.Level, n.Log.Level))
	}
	if o.Log.Format != n.Log.Format {
		fds = append(fds, changed("log.format", "log format changed from %s to %s", o.Log.Format, n.Log.Format))
	}
	fds = append(fds, diffNamed("models", "models", o.Models, n.Models, func(a, b Model) string {
		return strings.Join(fieldNames(fieldDiffs("", a, b, "Name")), ", ")
	})...)
	fds = append(fds, diffNamed("calendars", "calendar", o.Calendars, n.Calendars, nil)...)
	fds = append(fds, diffNamed("mcp_servers", "mcp_servers", o.MCPServers, n.MCPServers, diffMCPServer)...)
	// Path is the file given; Location and Day are parsed from timezone and
	// rollover_at, which are compared; Listen is the first of Listens.
	fds = append(fds, fieldDiffs("", *o, *n,
		"Path", "Location", "Day", "Listen", "Listens", "AllowedHosts", "Log", "Models", "Calendars", "Desks", "MCPServers")...)

	cs := make([]Change, 0, len(fds))
	for _, fd := range fds {
		c := Change{Field: fd.field, What: fd.what}
		if isPinned(fd.field) {
			c.Restart = true
			c.What += restartNote
		}
		cs = append(cs, c)
	}
	return cs
}

// diffDesk compares two versions of one desk.
func diffDesk(o, n *Desk) []fieldDiff {
	var fds []fieldDiff
	add := func(field, format string, args ...any) { fds = append(fds, changed(field, format, args...)) }
	if !slices.Equal(o.Fallbacks, n.Fallbacks) {
		add("fallbacks", "fallbacks changed from %s to %s", list(o.Fallbacks), list(n.Fallbacks))
	}
	if o.Instructions != n.Instructions {
		add("instructions", "instructions changed")
	}

	olds := map[string]Schedule{}
	for _, s := range o.Schedules {
		olds[s.Name] = s
	}
	news := map[string]bool{}
	for _, s := range n.Schedules {
		news[s.Name] = true
		field := "schedules." + s.Name
		old, ok := olds[s.Name]
		if !ok {
			add(field, "schedule %s added (%q)", s.Name, s.Cron)
			continue
		}
		if old.Cron != s.Cron {
			add(field, "schedule %s moved from %q to %q", s.Name, old.Cron, s.Cron)
		}
		if old.Text != s.Text {
			add(field, "schedule %s text changed", s.Name)
		}
		// Spec is parsed from Cron.
		for _, fd := range fieldDiffs("", old, s, "Name", "Cron", "Text", "Spec") {
			add(field, "schedule %s %s", s.Name, fd.what)
		}
	}
	for _, s := range o.Schedules {
		if !news[s.Name] {
			add("schedules."+s.Name, "schedule %s removed", s.Name)
		}
	}

	if o.Curator.Enabled != n.Curator.Enabled {
		if n.Curator.Enabled {
			add("curator", "curator enabled")
		} else {
			add("curator", "curator disabled")
		}
	}
	fds = append(fds, fieldDiffs("curator.", o.Curator, n.Curator, "Enabled")...)

	oldTools, newTools := map[string]Tool{}, map[string]Tool{}
	for _, t := range o.Tools {
		oldTools[t.Name] = t
	}
	for _, t := range n.Tools {
		newTools[t.Name] = t
	}
	fds = append(fds, diffNamed("tools", "tool", oldTools, newTools, func(a, b Tool) string {
		return strings.Join(fieldNames(fieldDiffs("", a, b, "Name")), ", ")
	})...)

	fds = append(fds, diffNamed("mcp", "mcp", o.MCP, n.MCP, func(a, b DeskMCP) string {
		return strings.Join(fieldNames(fieldDiffs("", a, b, "Server")), ", ")
	})...)

	// Name and Path name the file; Instructions is compared above, without
	// its text.
	fds = append(fds, fieldDiffs("", *o, *n,
		"Name", "Path", "Fallbacks", "Instructions", "Schedules", "Curator", "Tools", "MCP")...)
	return fds
}

// diffMCPServer names what changed of an MCP server: its settings' keys,
// and, for its secrets, which source's content changed ("headers_file
// contents changed"), never a value.
func diffMCPServer(a, b *MCPServer) string {
	if a == nil || b == nil {
		return ""
	}
	what := fieldNames(fieldDiffs("", *a, *b, "Name", "Secrets"))
	if a.Secrets.Digest != b.Secrets.Digest || !equal(a.Secrets, b.Secrets) {
		what = append(what, secretsChanged(a, b)...)
		if len(what) == 0 {
			what = append(what, "secrets changed")
		}
	}
	return strings.Join(what, ", ")
}

// secretsChanged says which secret sources of an MCP server read other
// values: env_files, pass_env, headers_file.
func secretsChanged(a, b *MCPServer) []string {
	var what []string
	differs := func(names []string) bool {
		for _, k := range names {
			if a.Secrets.Env[k] != b.Secrets.Env[k] {
				return true
			}
		}
		return false
	}
	if differs(slices.Collect(maps.Keys(b.EnvFiles))) {
		what = append(what, "env_files contents changed")
	}
	if differs(b.PassEnv) {
		what = append(what, "pass_env values changed")
	}
	if !equal(a.Secrets.Headers, b.Secrets.Headers) {
		what = append(what, "headers_file contents changed")
	}
	return what
}

// diffNamed compares two maps of named entries (models, tools,
// calendars): "<noun> <name> added", "... removed", and "... changed",
// followed by ": " and what detail says when it says something.
func diffNamed[V any](field, noun string, o, n map[string]V, detail func(a, b V) string) []fieldDiff {
	var fds []fieldDiff
	label := func(name string) string {
		if noun == field {
			return field + "." + name // models.fast
		}
		return noun + " " + name // tool note, calendar nse
	}
	for name := range o {
		if _, ok := n[name]; !ok {
			fds = append(fds, changed(field+"."+name, "%s removed", label(name)))
		}
	}
	for name, nv := range n {
		ov, ok := o[name]
		switch {
		case !ok:
			fds = append(fds, changed(field+"."+name, "%s added", label(name)))
		case !same(reflect.ValueOf(ov), reflect.ValueOf(nv)):
			what := label(name) + " changed"
			if detail != nil {
				if d := detail(ov, nv); d != "" {
					what += ": " + d
				}
			}
			fds = append(fds, fieldDiff{field + "." + name, what})
		}
	}
	slices.SortFunc(fds, func(a, b fieldDiff) int { return strings.Compare(a.field, b.field) })
	return fds
}

// keyNames maps Go field names whose config key is not their snake_case.
var keyNames = map[string]string{"RunWithin": "missed.run_within"}

// fieldDiffs compares the exported fields of a and b, structs of one
// type, except those named in skip. A changed number, string, bool or
// duration reads "<key> changed from A to B"; a nested struct is compared
// field by field under "<key>."; anything else (lists, maps, pointers),
// and any field that may hold a secret (secretField: auth_token_file,
// api_key_file, ...), reads "<key> changed". Keys are the config's:
// snake_case field names, after prefix.
func fieldDiffs(prefix string, a, b any, skip ...string) []fieldDiff {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	var fds []fieldDiff
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || slices.Contains(skip, f.Name) {
			continue
		}
		x, y := va.Field(i), vb.Field(i)
		key, ok := keyNames[f.Name]
		if !ok {
			key = snake(f.Name)
		}
		key = prefix + key
		if x.Kind() == reflect.Struct && x.Type() != reflect.TypeFor[time.Time]() {
			fds = append(fds, fieldDiffs(key+".", x.Interface(), y.Interface())...)
			continue
		}
		if same(x, y) {
			continue
		}
		if from, to, ok := showPair(x, y); ok && !secretField(key) {
			fds = append(fds, changed(key, "%s changed from %s to %s", key, from, to))
		} else {
			fds = append(fds, changed(key, "%s changed", key))
		}
	}
	return fds
}

var locationType = reflect.TypeFor[*time.Location]()

// same is reflect.DeepEqual for config values, with two differences: time
// zones are equal when their names are (a *time.Location caches the zone
// of the moment it was loaded, so two loads of one zone can differ), and
// a nil list or map equals an empty one.
func same(x, y reflect.Value) bool {
	if !x.IsValid() || !y.IsValid() {
		return x.IsValid() == y.IsValid()
	}
	if x.Type() != y.Type() {
		return false
	}
	if x.Type() == locationType {
		if x.IsNil() || y.IsNil() {
			return x.IsNil() == y.IsNil()
		}
		return x.Interface().(*time.Location).String() == y.Interface().(*time.Location).String()
	}
	switch x.Kind() {
	case reflect.Pointer, reflect.Interface:
		if x.IsNil() || y.IsNil() {
			return x.IsNil() == y.IsNil()
		}
		return same(x.Elem(), y.Elem())
	case reflect.Struct:
		for i := range x.NumField() {
			if !same(x.Field(i), y.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if x.Len() != y.Len() {
			return false
		}
		for i := range x.Len() {
			if !same(x.Index(i), y.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if x.Len() != y.Len() {
			return false
		}
		for _, k := range x.MapKeys() {
			if v := y.MapIndex(k); !v.IsValid() || !same(x.MapIndex(k), v) {
				return false
			}
		}
		return true
	case reflect.Bool:
		return x.Bool() == y.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return x.Int() == y.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return x.Uint() == y.Uint()
	case reflect.Float32, reflect.Float64:
		return x.Float() == y.Float()
	case reflect.Complex64, reflect.Complex128:
		return x.Complex() == y.Complex()
	case reflect.String:
		return x.String() == y.String()
	default: // funcs, channels, unsafe pointers: equal only when both are nil
		return x.IsNil() && y.IsNil()
	}
}

// fieldNames returns the fields of fds.
func fieldNames(fds []fieldDiff) []string {
	names := make([]string, len(fds))
	for i, fd := range fds {
		names[i] = fd.field
	}
	return names
}

// showPair formats two values of a scalar field for a change line. Strings
// are quoted when either of them is empty or holds a space, a slash or a
// colon (paths, addresses, times of day), and left bare otherwise (names,
// levels). ok is false for kinds that are not shown.
func showPair(x, y reflect.Value) (from, to string, ok bool) {
	if x.Type() == reflect.TypeFor[time.Duration]() {
		return x.Interface().(time.Duration).String(), y.Interface().(time.Duration).String(), true
	}
	switch x.Kind() {
	case reflect.String:
		a, b := x.String(), y.String()
		if needsQuotes(a) || needsQuotes(b) {
			return fmt.Sprintf("%q", a), fmt.Sprintf("%q", b), true
		}
		return a, b, true
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return fmt.Sprint(x.Interface()), fmt.Sprint(y.Interface()), true
	}
	return "", "", false
}

func needsQuotes(s string) bool { return s == "" || strings.ContainsAny(s, " \t/:") }

// list formats names as "[a, b]", or "none".
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// snake turns a Go field name into the config's key style:
// "MaxOutputTokens" -> "max_output_tokens", "APIKeyFile" -> "api_key_file".
func snake(name string) string {
	rs := []rune(name)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) {
			prevLower := i > 0 && !unicode.IsUpper(rs[i-1])
			nextLower := i > 0 && i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])
			if prevLower || nextLower {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
