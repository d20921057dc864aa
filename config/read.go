package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/deskd/deskd/memory/durable"
)

// sink collects the problems of one load.
type sink struct {
	ps Problems
	// hidden are the values of secret fields read so far (secret.go):
	// no reason quotes them.
	hidden []string
}

func (s *sink) add(file, field, format string, args ...any) {
	reason := newlines.ReplaceAllString(s.scrub(fmt.Sprintf(format, args...)), " ")
	field = newlines.ReplaceAllString(field, " ") // a quoted YAML key may hold one
	s.ps = append(s.ps, Problem{File: file, Field: field, Reason: reason})
}

// newlines matches line breaks, which a Field or Reason must not hold:
// Problems prints one problem a line.
var newlines = regexp.MustCompile(`\s*[\n\r]\s*`)

// keyDelimiter is viper's key path separator. It is not ".", because model
// names may hold dots (gpt-4.1) and viper would split them.
const keyDelimiter = "::"

// capture is a viper decoder registry that decodes with viper's own codec
// and also records, before viper lowercases them, the file's top-level keys
// and any keys that differ only in case.
type capture struct {
	keys       []string // top-level keys, lowercased, sorted
	collisions []Problem
	// written maps the dotted path of every key, lowercased, to the key
	// as the file spells it (environment variable names and MCP tool
	// names are case-sensitive).
	written map[string]string
}

type decoderFunc func(b []byte, v map[string]any) error

func (f decoderFunc) Decode(b []byte, v map[string]any) error { return f(b, v) }

// Decoder implements viper.DecoderRegistry.
func (c *capture) Decoder(format string) (viper.Decoder, error) {
	inner, err := viper.NewCodecRegistry().Decoder(format)
	if err != nil {
		return nil, err
	}
	return decoderFunc(func(b []byte, v map[string]any) error {
		if err := inner.Decode(b, v); err != nil {
			return err
		}
		for k := range v {
			c.keys = append(c.keys, strings.ToLower(k))
		}
		slices.Sort(c.keys)
		c.keys = slices.Compact(c.keys)
		c.checkCase("", v)
		return nil
	}), nil
}

// checkCase records every pair of keys in one mapping that viper would
// collapse into one, anywhere under val.
func (c *capture) checkCase(path string, val any) {
	switch val := val.(type) {
	case map[string]any:
		keys := make([]string, 0, len(val))
		for k := range val {
			keys = append(keys, k)
		}
		c.checkKeys(path, keys, func(k string) any { return val[k] })
	case map[any]any:
		keys := make([]string, 0, len(val))
		orig := make(map[string]any, len(val))
		for k, v := range val {
			s := fmt.Sprint(k)
			keys = append(keys, s)
			orig[s] = v
		}
		c.checkKeys(path, keys, func(k string) any { return orig[k] })
	case []any:
		for i, v := range val {
			c.checkCase(fmt.Sprintf("%s[%d]", path, i), v)
		}
	}
}

func (c *capture) checkKeys(path string, keys []string, get func(string) any) {
	slices.Sort(keys)
	first := map[string]string{}
	for _, k := range keys {
		l := strings.ToLower(k)
		if prev, ok := first[l]; ok {
			c.collisions = append(c.collisions, Problem{
				Field:  join(path, l),
				Reason: fmt.Sprintf("keys %q and %q differ only in case; keys are case-insensitive, keep one", prev, k),
			})
			continue
		}
		first[l] = k
		if c.written == nil {
			c.written = map[string]string{}
		}
		c.written[join(path, l)] = k
		c.checkCase(join(path, l), get(k))
	}
}

// maxConfigFile bounds the size of a config file (the main file, a desk
// or calendar file).
const maxConfigFile = 4 << 20

// readConfigFile reads a config file with durable.ReadRegular: a symbolic
// link is followed (config files may be links, see Watcher), but what it
// leads to must be a regular file of at most maxConfigFile bytes; a FIFO,
// a device or a socket is refused at once, never waited on. It returns
// false after adding the problem to s.
func readConfigFile(s *sink, file string) ([]byte, bool) {
	data, err := durable.ReadRegular(file, maxConfigFile, durable.Follow)
	var refused *durable.RefusedError
	switch {
	case errors.As(err, &refused):
		s.add(file, "", "cannot read: it is %s", refused.Reason)
		return nil, false
	case err != nil:
		s.add(file, "", "cannot read: %v", pathErr(err))
		return nil, false
	}
	return data, true
}

// readYAML reads one YAML file with a fresh viper. It returns the file's
// top level as a node, or false after adding the problem (unreadable,
// not YAML, empty, not a mapping) to s.
func readYAML(s *sink, file string) (node, bool) {
	data, ok := readConfigFile(s, file)
	if !ok {
		return node{}, false
	}
	return parseYAML(s, file, data)
}

// parseYAML parses data, the YAML text of file (read from disk by
// readYAML, or shipped in the binary), with a fresh viper. It returns the
// top level as a node, or false after adding the problem (not YAML,
// empty, not a mapping) to s.
func parseYAML(s *sink, file string, data []byte) (node, bool) {
	c := &capture{}
	v := viper.NewWithOptions(viper.KeyDelimiter(keyDelimiter), viper.WithDecoderRegistry(c))
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		var ce viper.ConfigParseError
		switch {
		case errors.As(err, &ce):
			s.add(file, "", "not valid YAML: %v", errors.Unwrap(ce))
		default:
			s.add(file, "", "cannot read: %v", err)
		}
		return node{}, false
	}
	if len(c.keys) == 0 {
		s.add(file, "", "empty: partial write?")
		return node{}, false
	}
	for _, p := range c.collisions {
		s.add(file, p.Field, "%s", p.Reason)
	}
	m := make(map[string]any, len(c.keys))
	for _, k := range c.keys {
		if strings.Contains(k, keyDelimiter) {
			m[k] = true // only reported as unknown; viper cannot look it up
			continue
		}
		m[k] = v.Get(k)
	}
	return node{s: s, file: file, m: m, written: c.written}, true
}

// node is one YAML mapping of a file, at a dotted path, with typed getters
// that add a problem for every value of the wrong type.
type node struct {
	s    *sink
	file string
	path string
	m    map[string]any
	// written is the file's keys as spelt (capture.written); nil for a
	// file read otherwise.
	written map[string]string
}

// state says whether a getter found its key.
type state int

const (
	absent  state = iota // missing or null
	invalid              // present, wrong type or value; a problem was added
	set                  // present and of the right type
)

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (n node) field(key string) string { return join(n.path, key) }

// spelt returns key, a key of n (lowercased, as viper gives it), as the
// file spells it.
func (n node) spelt(key string) string {
	if w, ok := n.written[n.field(key)]; ok {
		return w
	}
	return key
}

func (n node) problem(key, format string, args ...any) {
	n.s.add(n.file, n.field(key), format, args...)
}

// only adds a problem for every key of n that is not in allowed.
func (n node) only(allowed ...string) {
	keys := make([]string, 0, len(n.m))
	for k := range n.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			n.problem(k, "unknown key (known keys here: %s)", strings.Join(allowed, ", "))
		}
	}
}

func (n node) get(key string) (any, bool) {
	v, ok := n.m[key]
	return v, ok && v != nil
}

// kind names the YAML type of v for messages.
func kind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "true/false"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "an integer"
	case float32, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	case time.Time:
		return "a timestamp"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// read reads key with conv, which turns its value into a T or says the
// problem at key and reports false: absent (and T's zero) when key is
// missing or null, invalid (and T's zero) when conv refused the value,
// set otherwise.
func read[T any](n node, key string, conv func(v any) (T, bool)) (T, state) {
	var zero T
	v, ok := n.get(key)
	if !ok {
		return zero, absent
	}
	t, ok := conv(v)
	if !ok {
		return zero, invalid
	}
	return t, set
}

// typed is read for a value of Go type T as YAML decodes it; want names
// it in the problem ("want <want>, got <kind>").
func typed[T any](n node, key, want string) (T, state) {
	return read(n, key, func(v any) (T, bool) {
		t, ok := v.(T)
		if !ok {
			n.problem(key, "want %s, got %s", want, kind(v))
		}
		return t, ok
	})
}

func (n node) str(key string) (string, state) {
	return read(n, key, func(v any) (string, bool) {
		s, ok := v.(string)
		if !ok {
			hint := ""
			switch v.(type) {
			case bool, int, int64, uint64, float64, time.Time:
				hint = " (quote it)"
			}
			n.problem(key, "want a string, got %s%s", kind(v), hint)
			return "", false
		}
		if secretField(key) && !namesUsualEnv(key, s) {
			n.s.hide(s)
		}
		return s, true
	})
}

// requiredStr is str with a problem when key is absent or blank.
func (n node) requiredStr(key string) (string, bool) {
	s, st := n.str(key)
	switch {
	case st == absent:
		n.problem(key, "required")
		return "", false
	case st == invalid:
		return "", false
	case strings.TrimSpace(s) == "":
		n.problem(key, "must not be empty")
		return "", false
	}
	return s, true
}

func (n node) boolean(key string) (bool, state) { return typed[bool](n, key, "true or false") }

func (n node) integer(key string) (int, state) {
	return read(n, key, func(v any) (int, bool) {
		var i int64
		switch x := v.(type) {
		case int:
			i = int64(x)
		case int64:
			i = x
		case uint64:
			if x > math.MaxInt64 {
				n.problem(key, "%d is too large", x)
				return 0, false
			}
			i = int64(x)
		default:
			n.problem(key, "want an integer, got %s", kind(v))
			return 0, false
		}
		if i < math.MinInt || i > math.MaxInt {
			n.problem(key, "%d is out of range", i)
			return 0, false
		}
		return int(i), true
	})
}

func (n node) duration(key string) (time.Duration, state) {
	return read(n, key, func(v any) (time.Duration, bool) {
		s, ok := v.(string)
		if !ok {
			if _, num := v.(int); num {
				n.problem(key, "want a duration such as \"30s\" or \"2m\", got a bare number (give a unit)")
			} else {
				n.problem(key, "want a duration such as \"30s\" or \"2m\", got %s", kind(v))
			}
			return 0, false
		}
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			n.problem(key, "want a duration such as \"30s\" or \"2m\", got %s", strconv.Quote(s))
			return 0, false
		}
		return d, true
	})
}

func (n node) list(key string) ([]any, state) { return typed[[]any](n, key, "a list") }

// oneOrList says, in the problems of node.oneOrList, what a field of one
// value or a list of them holds: "want <one>, got <kind>, or <list>" for
// another kind; "the list is empty: <empty>" for an empty list.
type oneOrList struct {
	one, list, empty string
}

// oneOrList reads v, the value of key, as one string or a list of them
// (want names them in the problems) and checks each: check's
// error, or a value listed twice, is a problem at key (key[i] in a list of
// several). It returns the strings read, checked or not; nil for an empty
// list or another kind, which are problems too. An element that is not a
// string is a problem at key[i], and left out.
func (n node) oneOrList(key string, v any, want oneOrList, check func(string) error) []string {
	var values []string
	switch v := v.(type) {
	case string:
		values = []string{v}
	case []any:
		if len(v) == 0 {
			n.problem(key, "the list is empty: %s", want.empty)
			return nil
		}
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				n.s.add(n.file, fmt.Sprintf("%s[%d]", n.field(key), i), "want a string, got %s", kind(x))
				continue
			}
			values = append(values, s)
		}
	default:
		n.problem(key, "want %s, got %s, or %s", want.one, kind(v), want.list)
		return nil
	}
	for i, s := range values {
		field := n.field(key)
		if len(values) > 1 {
			field = fmt.Sprintf("%s[%d]", field, i)
		}
		if err := check(s); err != nil {
			n.s.add(n.file, field, "%v", err)
		} else if slices.Contains(values[:i], s) {
			n.s.add(n.file, field, "%q is listed twice", s)
		}
	}
	return values
}

// eachString calls each with the field ("key[i]") and the value of every
// element of l, the list of key. An element that is not a string is a
// problem, "want <want>, got <its kind>", and each is not called for it.
// It returns false when an element was not a string or each returned
// false.
func (n node) eachString(key string, l []any, want string, each func(field, s string) bool) bool {
	good := true
	for i, v := range l {
		field := fmt.Sprintf("%s[%d]", n.field(key), i)
		s, ok := v.(string)
		if !ok {
			n.s.add(n.file, field, "want %s, got %s", want, kind(v))
			good = false
			continue
		}
		if !each(field, s) {
			good = false
		}
	}
	return good
}

// eachMapping calls each with the index and the node of every item of
// the list at key that is a mapping ("key[i]"; any other item is a
// problem, and each is not called for it). It returns the list's state.
func (n node) eachMapping(key string, each func(i int, item node)) state {
	l, st := n.list(key)
	for i, v := range l {
		if item, ok := n.asMapping(fmt.Sprintf("%s[%d]", n.field(key), i), v); ok {
			each(i, item)
		}
	}
	return st
}

// namedList describes a list of named mappings, such as a desk's
// schedules or tools (eachNamed).
type namedList struct {
	// key is the list's key ("schedules"); what names an item ("schedule").
	key, what string
	// re is what a name must match.
	re *regexp.Regexp
	// builtin holds the names no item may take (the built-in tools).
	builtin map[string]bool
	// allowed are the keys an item may have.
	allowed []string
}

// eachNamed calls each with every item of the list l describes that is
// a mapping (eachMapping), and its name: a key of l.allowed and the
// required name, which must match l.re, be no builtin and be no earlier
// item's; each name that breaks a rule is a problem of its item, and each
// still gets it ("" when the item has none).
func (n node) eachNamed(l namedList, each func(item node, name string)) {
	first := map[string]int{} // a name, and the item that took it
	n.eachMapping(l.key, func(i int, item node) {
		item.only(l.allowed...)
		name, ok := item.requiredStr("name")
		if ok {
			switch j, dup := first[name]; {
			case !l.re.MatchString(name):
				item.problem("name", "bad %s name %q: want %s", l.what, name, l.re)
			case l.builtin[name]:
				item.problem("name", "%q is a built-in %s", name, l.what)
			case dup:
				item.problem("name", "%q is also the name of %s[%d]", name, l.key, j)
			default:
				first[name] = i
			}
		}
		each(item, name)
	})
}

// asMapping returns v as a node at path, or false after adding a problem.
func (n node) asMapping(path string, v any) (node, bool) {
	sub := node{s: n.s, file: n.file, path: path, written: n.written}
	switch m := v.(type) {
	case map[string]any:
		sub.m = m
	case map[any]any:
		sub.m = make(map[string]any, len(m))
		for k, x := range m {
			sub.m[strings.ToLower(fmt.Sprint(k))] = x
		}
	default:
		n.s.add(n.file, path, "want a mapping, got %s", kind(v))
		return node{}, false
	}
	return sub, true
}

// mapping reads key as a mapping; an absent one is an empty mapping at
// key, so that its own keys read as absent.
func (n node) mapping(key string) (node, state) {
	sub, st := read(n, key, func(v any) (node, bool) { return n.asMapping(n.field(key), v) })
	if st == absent {
		sub = node{s: n.s, file: n.file, path: n.field(key), m: map[string]any{}, written: n.written}
	}
	return sub, st
}

// number reads a number (an integer or a decimal).
func (n node) number(key string) (float64, state) {
	return read(n, key, func(v any) (float64, bool) {
		switch x := v.(type) {
		case int:
			return float64(x), true
		case int64:
			return float64(x), true
		case uint64:
			return float64(x), true
		case float64:
			return x, true
		}
		n.problem(key, "want a number, got %s", kind(v))
		return 0, false
	})
}
