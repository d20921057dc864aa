package config_test

// Fuzz targets of the config loader, through config.Load on files written
// into a temporary folder: the main file (deskd.yaml), a desk file
// (desks.d/main.yaml) and a calendar file (calendars.d/X.yaml). The seed
// corpora are in testdata/fuzz/<FuzzName>/; `go test` runs them.

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
)

// fzGoodMain and fzGoodDesk are a valid main file and desk file, the
// partner of the file being fuzzed.
const (
	fzGoodMain = "state_dir: ./state\nmodels:\n  offline: {provider: scripted}\n  spare: {provider: scripted}\n"
	fzGoodDesk = "model: offline\ninstructions: Trade.\nschedules:\n  - {name: open, cron: \"15 9 * * 1-5\", text: Open.}\n"
)

// fzLoadLimit bounds one Load: no input may make it hang.
const fzLoadLimit = 20 * time.Second

// fzLoad writes the files (path relative to a new temporary folder ->
// content) and loads its deskd.yaml; it returns the folder too.
func fzLoad(t *testing.T, files map[string][]byte) (string, *config.Config, config.Problems) {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, ps := fzLoadPath(t, filepath.Join(dir, "deskd.yaml"))
	return dir, c, ps
}

// fzLoadPath loads path within fzLoadLimit and checks the result's shape.
func fzLoadPath(t *testing.T, path string) (*config.Config, config.Problems) {
	t.Helper()
	type result struct {
		c   *config.Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := config.Load(path)
		done <- result{c, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(fzLoadLimit):
		t.Fatalf("Load did not return within %v", fzLoadLimit)
	}
	if r.err == nil {
		if r.c == nil {
			t.Fatal("Load returned neither a config nor an error")
		}
		return r.c, nil
	}
	if r.c != nil {
		t.Fatalf("Load returned a config and an error: %v", r.err)
	}
	var ps config.Problems
	if !errors.As(r.err, &ps) {
		t.Fatalf("Load's error is %T, want config.Problems: %v", r.err, r.err)
	}
	fzCheckProblems(t, ps)
	return nil, ps
}

// fzCheckProblems fails unless every problem names its file (an absolute
// path, or a shipped calendar) and says why, and Problems prints one
// problem a line.
func fzCheckProblems(t *testing.T, ps config.Problems) {
	t.Helper()
	if len(ps) == 0 {
		t.Fatal("Load failed with no problems")
	}
	for _, p := range ps {
		if p.File == "" || !filepath.IsAbs(p.File) && !strings.HasPrefix(p.File, "(shipped") {
			t.Errorf("a problem names no file, or not by its absolute path: %#v", p)
		}
		if strings.TrimSpace(p.Reason) == "" {
			t.Errorf("a problem gives no reason: %#v", p)
		}
	}
	if got := strings.Count(ps.Error(), "\n") + 1; got != len(ps) || strings.Contains(ps.Error(), "\r") {
		t.Errorf("%d problems print as %d lines (or hold a carriage return), want one a line:\n%q", len(ps), got, ps.Error())
	}
	if t.Failed() {
		t.FailNow()
	}
}

// fzCheckConfig fails unless an accepted config holds what Load promises.
func fzCheckConfig(t *testing.T, c *config.Config) {
	t.Helper()
	switch {
	case c.Location == nil || c.Day.Location != c.Location:
		t.Fatalf("accepted config has no trading time zone: %+v", c)
	case !filepath.IsAbs(c.StateDir) || !filepath.IsAbs(c.DesksDir):
		t.Fatalf("accepted config's folders are not absolute: state_dir %q, desks_dir %q", c.StateDir, c.DesksDir)
	case len(c.Listens) == 0 || c.Listen != c.Listens[0]:
		t.Fatalf("accepted config's listen = %q, %q", c.Listen, c.Listens)
	case c.ShutdownTimeout <= 0:
		t.Fatalf("accepted shutdown_timeout %v", c.ShutdownTimeout)
	case c.Day.Start < 0 || c.Day.Start >= 24*time.Hour:
		t.Fatalf("accepted rollover_at %q as %v", c.RolloverAt, c.Day.Start)
	}
	for name, d := range c.Desks {
		if d.Name != name {
			t.Fatalf("desk %q is named %q", name, d.Name)
		}
		if _, ok := c.Models[d.Model]; !ok {
			t.Fatalf("accepted desk %s names model %q, not one of models", name, d.Model)
		}
		for _, fb := range d.Fallbacks {
			if _, ok := c.Models[fb]; !ok || fb == d.Model {
				t.Fatalf("accepted desk %s has fallback %q (model %q)", name, fb, d.Model)
			}
		}
		if d.QueueLimit < 1 {
			t.Fatalf("accepted desk %s has queue_limit %d", name, d.QueueLimit)
		}
		var names []string
		for _, s := range d.Schedules {
			if s.Spec == nil || s.Spec.String() != s.Cron || slices.Contains(names, s.Name) {
				t.Fatalf("accepted desk %s has schedule %+v (names before: %q)", name, s, names)
			}
			names = append(names, s.Name)
			if s.Calendar != "" && c.CalendarOf(s.Calendar) == nil {
				t.Fatalf("accepted desk %s's schedule %s names calendar %q, which is unknown", name, s.Name, s.Calendar)
			}
		}
		if d.Calendar != "" && c.CalendarOf(d.Calendar) == nil {
			t.Fatalf("accepted desk %s names calendar %q, which is unknown", name, d.Calendar)
		}
		for server, m := range d.MCP {
			if c.MCPServers[server] == nil || m.Server != server || len(m.Tools) == 0 {
				t.Fatalf("accepted desk %s has mcp entry %s = %+v (servers %v)", name, server, m, c.MCPServers)
			}
		}
	}
	for name, cal := range c.Calendars {
		if err := cal.Check(); err != nil {
			t.Fatalf("accepted calendar %s: %v", name, err)
		}
	}
}

// FuzzLoad: Load of a fuzzed main file and a fuzzed desk file never
// panics and never hangs; it returns a valid config or problems that each
// name their file and say why, one a line, the same every time. With the
// other file valid, each file is judged alone: a fuzzed desk file beside a
// valid main file is refused only with problems that name the desk file,
// and once accepted it is desk "main".
func FuzzLoad(f *testing.F) {
	f.Fuzz(func(t *testing.T, mainFile, deskFile []byte) {
		// both fuzzed
		dir, c, ps := fzLoad(t, map[string][]byte{"deskd.yaml": mainFile, "desks.d/main.yaml": deskFile})
		if c != nil {
			fzCheckConfig(t, c)
		} else if _, again := fzLoadPath(t, filepath.Join(dir, "deskd.yaml")); again.Error() != ps.Error() {
			// the same problems, in the same order, every time
			t.Fatalf("Load is not deterministic:\nfirst:\n%s\nsecond:\n%s", ps.Error(), again.Error())
		}

		// the desk file beside a valid main file
		dir, c, ps = fzLoad(t, map[string][]byte{"deskd.yaml": []byte(fzGoodMain), "desks.d/main.yaml": deskFile})
		deskPath := filepath.Join(dir, "desks.d", "main.yaml")
		if c != nil {
			fzCheckConfig(t, c)
			if d := c.Desks["main"]; d == nil || d.Path != deskPath || len(c.Desks) != 1 {
				t.Fatalf("accepted desk file: desks %v, want main from %s", c.Desks, deskPath)
			}
		}
		for _, p := range ps {
			if p.File != deskPath {
				t.Fatalf("with a valid main file, a problem names %q, not the desk file %s: %s", p.File, deskPath, p)
			}
		}

		// the main file beside a valid desk file
		dir, c, ps = fzLoad(t, map[string][]byte{"deskd.yaml": mainFile, "desks.d/main.yaml": []byte(fzGoodDesk)})
		mainPath := filepath.Join(dir, "deskd.yaml")
		if c != nil {
			fzCheckConfig(t, c)
			if c.Path != mainPath {
				t.Fatalf("accepted main file: Path %q, want %s", c.Path, mainPath)
			}
		}
		if len(ps) > 0 && !slices.ContainsFunc(ps, func(p config.Problem) bool { return p.File == mainPath }) &&
			!slices.ContainsFunc(ps, func(p config.Problem) bool { return strings.HasPrefix(p.File, dir) }) {
			// a main file that moves desks_dir or calendars_dir elsewhere may
			// be refused for files there; anything else is the main file's
			if !strings.Contains(strings.ToLower(string(mainFile)), "_dir") {
				t.Fatalf("a refused main file is not named by any problem:\n%s", ps.Error())
			}
		}
	})
}

// FuzzCalendarFile: a calendar file (calendars.d/X.yaml) of any bytes
// never makes Load panic or hang; a refused one is named by its path; an
// accepted one is a calendar that passes Check, and answers consistently:
// the market is open only on a trading day, NextOpen of an open instant is
// that instant, and NextOpen's answer is an instant the market is open.
func FuzzCalendarFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, cal []byte, unix int64) {
		main := fzGoodMain + "calendars_dir: calendars.d\n"
		desk := "model: offline\ncalendar: X\nrollover: trading_day\n"
		dir, c, ps := fzLoad(t, map[string][]byte{"deskd.yaml": []byte(main), "desks.d/main.yaml": []byte(desk), "calendars.d/X.yaml": cal})
		calPath := filepath.Join(dir, "calendars.d", "X.yaml")
		deskPath := filepath.Join(dir, "desks.d", "main.yaml")
		if c == nil {
			for _, p := range ps {
				// a refused calendar is named; then the desk naming it is refused too
				if p.File != calPath && p.File != deskPath {
					t.Fatalf("a problem names %q, neither the calendar %s nor the desk naming it: %s", p.File, calPath, p)
				}
			}
			if !slices.ContainsFunc(ps, func(p config.Problem) bool { return p.File == calPath }) {
				t.Fatalf("a refused calendar is not named by any problem:\n%s", ps.Error())
			}
			return
		}
		fzCheckConfig(t, c)
		x := c.CalendarOf("X")
		if x == nil {
			t.Fatal("accepted config has no calendar X")
		}
		at := time.Unix(int64(uint64(unix)%(100*365*24*3600))+946684800, 0) // 2000 to 2100
		for _, t0 := range []time.Time{at, at.Add(12 * time.Hour), at.Add(-37 * time.Hour)} {
			open := x.Open(t0)
			if open && !x.TradingDay(t0) {
				t.Fatalf("calendar open at %v, which is not a trading day", t0)
			}
			next, ok := x.NextOpen(t0)
			if open && (!ok || !next.Equal(t0)) {
				t.Fatalf("calendar open at %v, but NextOpen = %v, %v", t0, next, ok)
			}
			if ok && (next.Before(t0) || !x.Open(next)) {
				t.Fatalf("NextOpen(%v) = %v, when the market is not open (sessions %v)", t0, next, x.SessionsOn(next))
			}
			if day, ok := x.NextTradingDay(t0); ok && (!day.After(t0) || !x.TradingDay(day.Add(12*time.Hour))) {
				t.Fatalf("NextTradingDay(%v) = %v", t0, day)
			}
		}
	})
}
