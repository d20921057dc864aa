package calllimit_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/deskd/deskd/desk/calllimit"
	"github.com/deskd/deskd/memory"
)

const order = "mcp__broker__place_order"

var (
	day1 = memory.Date{Year: 2026, Month: 12, Day: 1}
	day2 = memory.Date{Year: 2026, Month: 12, Day: 2}
)

func open(t *testing.T, path string) *calllimit.Counter {
	t.Helper()
	c, err := calllimit.Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return c
}

func countsPath(t *testing.T) string { return filepath.Join(t.TempDir(), "calls.json") }

// fresh is a Counter on a counts file not yet written, and the file's
// path.
func fresh(t *testing.T) (string, *calllimit.Counter) {
	t.Helper()
	path := countsPath(t)
	return path, open(t, path)
}

// take counts a call of tool on date under limit; it fails the test if
// the call is not taken.
func take(t *testing.T, c *calllimit.Counter, date memory.Date, tool string, limit int) {
	t.Helper()
	if _, err := c.Take(date, tool, limit); err != nil {
		t.Fatalf("Take(%v, %s, %d): %v", date, tool, limit, err)
	}
}

func TestTakeUpToTheLimit(t *testing.T) {
	c := open(t, countsPath(t))
	for want := 1; want <= 3; want++ {
		if err := c.Check(day1, order, 3); err != nil {
			t.Fatalf("Check before call %d: %v", want, err)
		}
		used, err := c.Take(day1, order, 3)
		if err != nil || used != want {
			t.Fatalf("Take %d = %d, %v; want %d, nil", want, used, err, want)
		}
	}
	used, err := c.Take(day1, order, 3)
	if !errors.Is(err, calllimit.ErrLimit) || used != 3 {
		t.Fatalf("Take beyond the limit = %d, %v; want 3, ErrLimit", used, err)
	}
	if err := c.Check(day1, order, 3); !errors.Is(err, calllimit.ErrLimit) {
		t.Errorf("Check beyond the limit = %v, want ErrLimit", err)
	}
	if got := c.Used(day1); len(got) != 1 || got[order] != 3 {
		t.Errorf("Used = %v, want %s: 3", got, order)
	}
	// Other tools count on their own.
	if _, err := c.Take(day1, "mcp__broker__cancel", 3); err != nil {
		t.Errorf("Take of another tool: %v", err)
	}
	// A higher limit (a reloaded desk file) lets the next call through.
	if used, err := c.Take(day1, order, 4); err != nil || used != 4 {
		t.Errorf("Take under a raised limit = %d, %v; want 4, nil", used, err)
	}
}

func TestLimitErrorText(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		want  string
	}{
		{"many", 20, "mcp__broker__place_order may be called at most 20 times a trading day; 20 calls were made on 2026-12-01"},
		{"one", 1, "mcp__broker__place_order may be called at most 1 time a trading day; 1 call was made on 2026-12-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := open(t, countsPath(t))
			for range tt.limit {
				take(t, c, day1, order, tt.limit)
			}
			_, err := c.Take(day1, order, tt.limit)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Take beyond the limit: %v, want %q", err, tt.want)
			}
			if err := c.Check(day1, order, tt.limit); err == nil || err.Error() != tt.want {
				t.Errorf("Check beyond the limit: %v, want %q", err, tt.want)
			}
		})
	}
}

func TestBadArguments(t *testing.T) {
	c := open(t, countsPath(t))
	if _, err := c.Take(day1, order, 0); err == nil || errors.Is(err, calllimit.ErrLimit) || !strings.Contains(err.Error(), order) {
		t.Errorf("Take with limit 0: %v, want an error naming the tool", err)
	}
	if _, err := c.Take(memory.Date{}, order, 5); err == nil || !strings.Contains(err.Error(), order) {
		t.Errorf("Take on the zero date: %v, want an error naming the tool", err)
	}
	if got := c.Used(day1); len(got) != 0 {
		t.Errorf("Used after refused Takes = %v, want none", got)
	}
}

func TestMissingFileIsNoCalls(t *testing.T) {
	path, c := fresh(t)
	if got := c.Used(day1); len(got) != 0 {
		t.Errorf("Used = %v, want none", got)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open wrote %s (%v); want it written at the first call only", path, err)
	}
}

func TestCountsPersistAcrossOpen(t *testing.T) {
	path, c := fresh(t)
	for range 2 {
		take(t, c, day1, order, 2)
	}
	take(t, c, day1, "mcp__broker__quote", 9)
	again := open(t, path)
	if got := again.Used(day1); len(got) != 2 || got[order] != 2 || got["mcp__broker__quote"] != 1 {
		t.Errorf("Used after Open = %v, want place_order 2, quote 1", got)
	}
	if _, err := again.Take(day1, order, 2); !errors.Is(err, calllimit.ErrLimit) {
		t.Errorf("Take after Open: %v, want ErrLimit (the limit holds across restarts)", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("counts file: %v, %v; want mode 0600", fi, err)
	}
}

func TestANewDateDropsTheOld(t *testing.T) {
	path, c := fresh(t)
	take(t, c, day1, order, 1)
	if got := c.Used(day2); len(got) != 0 {
		t.Errorf("Used(day2) before any call that day = %v, want none", got)
	}
	if used, err := c.Take(day2, order, 1); err != nil || used != 1 {
		t.Fatalf("Take on the next day = %d, %v; want 1, nil", used, err)
	}
	if got := c.Used(day1); len(got) != 0 {
		t.Errorf("Used(day1) after day2's call = %v, want none (dropped)", got)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "2026-12-01") || !strings.Contains(string(data), "2026-12-02") {
		t.Errorf("counts file %s, want day2's counts only", data)
	}
	if got := open(t, path).Used(day2); got[order] != 1 {
		t.Errorf("Used(day2) after Open = %v, want %s: 1", got, order)
	}
}

func TestDamagedFile(t *testing.T) {
	tests := []struct{ name, content string }{
		{"not json", "place_order: 3\n"},
		{"cut short", `{"date":"2026-12-01","calls":{"x":`},
		{"negative count", `{"date":"2026-12-01","calls":{"x":-1}}`},
		{"bad date", `{"date":"2026-13-01","calls":{}}`},
		{"zero date", `{"date":"0000-00-00","calls":{}}`},
		{"no date", `{"calls":{"x":1}}`},
		{"unknown field", `{"date":"2026-12-01","calls":{},"extra":1}`},
		{"data after", `{"date":"2026-12-01","calls":{}} {}`},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := countsPath(t)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := calllimit.Open(path)
			if err == nil {
				t.Fatalf("Open of a damaged file = %v, nil; want an error", c.Used(day1))
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file %s", err, path)
			}
		})
	}
	t.Run("a folder", func(t *testing.T) {
		path := countsPath(t)
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := calllimit.Open(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Open of a folder: %v, want an error naming it", err)
		}
	})
}

func TestWriteFailureRefusesTheCall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "desk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "calls.json")
	c := open(t, path)
	take(t, c, day1, order, 5)
	// The folder goes away: the next count cannot be written.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	_, err := c.Take(day1, order, 5)
	if err == nil || errors.Is(err, calllimit.ErrLimit) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), order) {
		t.Fatalf("Take with its file unwritable: %v, want an error naming the tool and the file", err)
	}
	if got := c.Used(day1); got[order] != 1 {
		t.Errorf("Used after the failed write = %v, want the call that was written only", got)
	}
}

func TestConcurrentTakeNeverExceeds(t *testing.T) {
	path, c := fresh(t)
	const limit, callers = 10, 40
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			_, err := c.Take(day1, order, limit)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, calllimit.ErrLimit):
				refused.Add(1)
			default:
				t.Errorf("Take: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != limit || refused.Load() != callers-limit {
		t.Errorf("%d calls taken, %d refused; want %d and %d", ok.Load(), refused.Load(), limit, callers-limit)
	}
	if got := open(t, path).Used(day1); got[order] != limit {
		t.Errorf("Used after Open = %v, want %d", got, limit)
	}
}

// TestReleaseGivesBack: a call counted but never sent is given back, on
// disk too; there is nothing to give back of another date or of a tool
// with no count.
func TestReleaseGivesBack(t *testing.T) {
	path, c := fresh(t)
	take(t, c, day1, order, 1)
	if _, err := c.Take(day1, order, 1); !errors.Is(err, calllimit.ErrLimit) {
		t.Fatalf("a second Take of limit 1: %v", err)
	}
	if err := c.Release(day1, order); err != nil {
		t.Fatal(err)
	}
	if got := open(t, path).Used(day1)[order]; got != 0 {
		t.Fatalf("after Release the file counts %d calls, want 0", got)
	}
	if _, err := c.Take(day1, order, 1); err != nil {
		t.Fatalf("the call given back may be made again: %v", err)
	}
	for _, tt := range []struct {
		date memory.Date
		tool string
	}{{day1.AddDays(1), order}, {day1, "mcp__broker__quote"}} {
		if err := c.Release(tt.date, tt.tool); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.Used(day1)[order]; got != 1 {
		t.Fatalf("a Release of another date or tool changed the count: %d, want 1", got)
	}
}

// TestAnEarlierDateIsRefused: a call on a date before the counts' own
// (deskd's clock went back) is refused, and the later date's counts are
// kept, so that its limit holds when it comes round again.
func TestAnEarlierDateIsRefused(t *testing.T) {
	path, c := fresh(t)
	take(t, c, day2, order, 2)
	for name, err := range map[string]error{
		"Check": c.Check(day1, order, 2),
		"Take":  func() error { _, err := c.Take(day1, order, 2); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), "2026-12-01 is before 2026-12-02") || errors.Is(err, calllimit.ErrLimit) {
			t.Errorf("%s on an earlier date: %v", name, err)
		}
	}
	if got := open(t, path).Used(day2)[order]; got != 1 {
		t.Fatalf("the later date's count is %d after a call on an earlier one, want 1", got)
	}
}

// TestANewDateResetsEveryTool: a new trading date starts every tool's
// count at nothing, not only the tool called first that day. Day 1 has
// place_order at its limit and other tools part-used; on day 2 a
// cancel_order first, then place_order must run, and so must each other
// tool up to its full limit, in memory and after a reopen.
func TestANewDateResetsEveryTool(t *testing.T) {
	const (
		cancel = "mcp__broker__cancel_order"
		quote  = "mcp__broker__quote"
	)
	limits := map[string]int{order: 2, cancel: 1, quote: 3}
	path, c := fresh(t)
	for tool, n := range map[string]int{order: 2, cancel: 1, quote: 2} {
		for range n {
			take(t, c, day1, tool, limits[tool])
		}
	}
	if _, err := c.Take(day1, order, limits[order]); !errors.Is(err, calllimit.ErrLimit) {
		t.Fatalf("place_order past its limit on day 1: %v, want ErrLimit", err)
	}
	for tool, limit := range limits {
		if err := c.Check(day2, tool, limit); err != nil {
			t.Errorf("Check(day2, %s) before any call that day: %v", tool, err)
		}
	}
	if used, err := c.Take(day2, cancel, limits[cancel]); err != nil || used != 1 {
		t.Fatalf("day 2 cancel_order = %d, %v; want 1, nil", used, err)
	}
	if used, err := c.Take(day2, order, limits[order]); err != nil || used != 1 {
		t.Fatalf("day 2 place_order after cancel_order = %d, %v; want 1, nil (day 1's count carried over)", used, err)
	}
	if err := c.Check(day2, quote, limits[quote]); err != nil {
		t.Errorf("Check(day2, quote) after the day's other calls: %v", err)
	}
	// A give-back of day 1 (a call that ran late) changes nothing of day 2.
	if err := c.Release(day1, quote); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{cancel: 1, order: 1}
	for name, got := range map[string]map[string]int{"Used": c.Used(day2), "Used after Open": open(t, path).Used(day2)} {
		if len(got) != len(want) || got[cancel] != 1 || got[order] != 1 {
			t.Errorf("%s(day2) = %v, want %v", name, got, want)
		}
	}
	// Every tool has its whole limit on day 2, after a reopen too.
	again := open(t, path)
	for tool, limit := range limits {
		taken := again.Used(day2)[tool]
		for i := taken + 1; i <= limit; i++ {
			if used, err := again.Take(day2, tool, limit); err != nil || used != i {
				t.Fatalf("day 2 call %d of %s = %d, %v; want %d, nil", i, tool, used, err, i)
			}
		}
		if _, err := again.Take(day2, tool, limit); !errors.Is(err, calllimit.ErrLimit) {
			t.Errorf("day 2 call past the limit of %s: %v, want ErrLimit", tool, err)
		}
	}
	// Day 3 again starts every tool at nothing.
	day3 := day2.AddDays(1)
	for tool, limit := range limits {
		if err := again.Check(day3, tool, limit); err != nil {
			t.Errorf("Check(day3, %s): %v", tool, err)
		}
	}
	take(t, again, day3, quote, limits[quote])
	if got := again.Used(day3); len(got) != 1 || got[quote] != 1 {
		t.Errorf("Used(day3) = %v, want quote: 1 only", got)
	}
}
