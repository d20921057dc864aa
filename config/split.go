package config

// Loading desk by desk: a bad desk file refuses only its own desk.

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Loaded is a load whose main file (and every file that is not one desk's)
// validated, though some desk files may not have: LoadKeeping's answer.
type Loaded struct {
	// Config is the config to put in force: the main file, every desk
	// file that validated, and, for each refused desk file, the desk's
	// last good config (when it had one).
	Config *Config
	// Rejected are the refused desk files, sorted by desk name.
	Rejected []Rejected
}

// Rejected is one desk file that did not validate.
type Rejected struct {
	// Desk is the desk's name (the file name without .yaml).
	Desk string
	// File is the desk file's path.
	File string
	// Problems are the file's problems, at least one.
	Problems Problems
	// Kept is true when the desk runs on its last good config (Loaded's
	// Config has it); false when it had none: it is not started.
	Kept bool
}

// LoadKeeping loads the config at path as Load does, but refuses desk
// files one by one: a desk file with problems leaves its desk on its
// config in last (the config in force; nil: none, as at start), or, when
// last has no such desk, out of the config. Problems that are not any one
// desk file's (the main file's, a calendar's, a misnamed file in the
// desks folder, such as fx.yml beside fx.yaml) refuse the whole load: the
// error is every problem found, as Load's. So is a desk kept on its last
// good config that the new main file no longer fits (a model or calendar
// it uses is gone): the main file governs every desk.
func LoadKeeping(path string, last *Config) (Loaded, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Loaded{}, Problems{{File: path, Reason: err.Error()}}
	}
	s := &sink{}
	c := loadMain(s, abs)
	if c != nil && c.DesksDir != "" {
		loadDesksDir(s, c)
	}
	if c == nil {
		return Loaded{}, s.ps
	}
	byDesk, shared := splitProblems(c, s.ps)
	if len(shared) > 0 {
		return Loaded{}, s.ps
	}
	out := Loaded{Config: c}
	var misfits Problems
	for _, name := range slices.Sorted(maps.Keys(byDesk)) {
		ps := byDesk[name]
		r := Rejected{Desk: name, File: ps[0].File, Problems: ps}
		delete(c.Desks, name)
		if last != nil && last.Desks[name] != nil {
			kept := last.Desks[name]
			if bad := misfit(c, kept); bad != "" {
				misfits = append(misfits, Problem{File: c.Path, Reason: fmt.Sprintf(
					"desk %s would stay on its last good config (its file %s is refused), but %s: the main file governs every desk, so nothing was applied",
					name, r.File, bad)})
				continue
			}
			c.Desks[name], r.Kept = kept, true
		}
		out.Rejected = append(out.Rejected, r)
	}
	if len(misfits) > 0 {
		return Loaded{}, append(misfits, s.ps...)
	}
	return out, nil
}

// splitProblems sorts ps into the problems of each desk file (a
// <desk>.yaml in the desks folder with a good desk name) and the others.
func splitProblems(c *Config, ps Problems) (byDesk map[string]Problems, shared Problems) {
	byDesk = map[string]Problems{}
	for _, p := range ps {
		if name, ok := c.DeskOf(p.File); ok {
			byDesk[name] = append(byDesk[name], p)
		} else {
			shared = append(shared, p)
		}
	}
	return byDesk, shared
}

// DeskOf returns the desk whose file is file (a <desk>.yaml with a good
// desk name in c's desks folder), if file is one.
func (c *Config) DeskOf(file string) (string, bool) {
	if c.DesksDir == "" || filepath.Dir(file) != c.DesksDir {
		return "", false
	}
	name, ok := strings.CutSuffix(filepath.Base(file), ".yaml")
	if !ok || !deskNameRE.MatchString(name) {
		return "", false
	}
	return name, true
}

// misfit says why the desk d, validated against an earlier main file, does
// not fit c, or returns "" when it does: every model, calendar and MCP
// server it names is still there.
func misfit(c *Config, d *Desk) string {
	for _, m := range append([]string{d.Model}, d.Fallbacks...) {
		if _, ok := c.Models[m]; !ok {
			return fmt.Sprintf("it uses model %q, which models no longer has", m)
		}
	}
	cals := []string{d.Calendar}
	for _, s := range d.Schedules {
		cals = append(cals, s.Calendar)
	}
	for _, name := range cals {
		if name != "" && c.CalendarOf(name) == nil {
			return fmt.Sprintf("it uses calendar %q, which is no longer there", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.MCP)) {
		if c.MCPServers[name] == nil {
			return fmt.Sprintf("it uses MCP server %q, which mcp_servers no longer has", name)
		}
	}
	return ""
}

// Problems returns every problem of the refused desk files, in desk order.
func (l Loaded) Problems() Problems {
	var out Problems
	for _, r := range l.Rejected {
		out = append(out, r.Problems...)
	}
	return out
}
