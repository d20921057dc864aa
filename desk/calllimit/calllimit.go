// Package calllimit counts a desk's calls of each limited tool on the
// current trading date (a desk file's mcp limits: {place_order: 20}), so
// that a tool is refused once it has been called its limit of times that
// day.
//
// The counts live in a small JSON file, replaced atomically on every
// call, and written before the call runs: a crash never forgets a call
// that ran. A file that cannot be read back is an error, never an empty
// count: a desk whose counts were lost refuses its limited tools rather
// than risk exceeding a limit.
package calllimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
)

// ErrLimit is wrapped by the error of a call beyond its tool's day limit.
var ErrLimit = errors.New("tool call limit reached")

// maxFile is the largest counts file Open reads: far more than the
// counts of any desk's tools.
const maxFile = 1 << 20

// filePerm is the counts file's mode.
const filePerm fs.FileMode = 0o600

// Counter is one desk's counts of calls per tool, for one trading date.
// It is safe for concurrent use.
type Counter struct {
	path string

	mu    sync.Mutex
	state state
}

// state is the counts file's content.
type state struct {
	// Date is the trading date the counts are of.
	Date memory.Date `json:"date"`
	// Calls counts the calls of each tool on Date.
	Calls map[string]int `json:"calls"`
}

// Open reads the counts kept at path. A missing file is no calls yet; a
// file that cannot be read or does not parse is an error naming it (the
// caller then refuses the limited calls).
func Open(path string) (*Counter, error) {
	c := &Counter{path: path, state: state{Calls: map[string]int{}}}
	data, err := durable.ReadRegular(path, maxFile, durable.NoFollow)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read tool call counts %s: %w", path, err)
	}
	if err := decode(data, &c.state); err != nil {
		return nil, fmt.Errorf("read tool call counts %s: %w", path, err)
	}
	return c, nil
}

// decode parses a counts file into s, checking every value.
func decode(data []byte, s *state) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		return fmt.Errorf("not a counts file: %w", err)
	}
	if dec.More() {
		return errors.New("not a counts file: data after its object")
	}
	if !s.Date.Valid() {
		return fmt.Errorf("not a counts file: date %s is not a calendar day", s.Date)
	}
	if s.Calls == nil {
		s.Calls = map[string]int{}
	}
	for tool, n := range s.Calls {
		if n < 0 {
			return fmt.Errorf("not a counts file: %s has %d calls", tool, n)
		}
	}
	return nil
}

// Check returns an ErrLimit error when tool has been called limit times
// (or more) on date, and nil otherwise. It counts nothing.
func (c *Counter) Check(date memory.Date, tool string, limit int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.backwards(date, tool); err != nil {
		return err
	}
	return check(date, tool, limit, c.used(date, tool))
}

// backwards refuses a date before the counts' own: deskd's clock went
// back (or its trading day moved), and counting on would drop the later
// date's counts, letting its limit be passed when it comes round again.
// The caller holds c.mu.
func (c *Counter) backwards(date memory.Date, tool string) error {
	if !c.state.Date.IsZero() && date.Before(c.state.Date) {
		return fmt.Errorf("count a call of %s: its trading date %s is before %s, the date of the counts in %s "+
			"(deskd's clock went back?); limited calls are refused until that date", tool, date, c.state.Date, c.path)
	}
	return nil
}

// Take counts one call of tool on date and writes the counts to disk
// before it returns nil; used is then the day's calls of tool, this one
// included. It returns an ErrLimit error, counting nothing, when tool has
// been called limit times already (used is then that count), and an
// error when the counts cannot be written: in both cases the call must
// not run. Counts of dates before date are dropped.
func (c *Counter) Take(date memory.Date, tool string, limit int) (used int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !date.Valid() {
		return 0, fmt.Errorf("count a call of %s: %s is not a trading date", tool, date)
	}
	if err := c.backwards(date, tool); err != nil {
		return 0, err
	}
	n := c.used(date, tool)
	if err := check(date, tool, limit, n); err != nil {
		return n, err
	}
	next := state{Date: date, Calls: map[string]int{}}
	if c.state.Date == date {
		for t, k := range c.state.Calls {
			next.Calls[t] = k
		}
	}
	next.Calls[tool] = n + 1
	if err := c.write(next); err != nil {
		return n, fmt.Errorf("count a call of %s: %w", tool, err)
	}
	c.state = next
	return n + 1, nil
}

// Release gives back one call of tool on date that Take counted but that
// never reached its tool (its server was not connected), and persists
// that; a date the counter no longer holds, or no count, is nothing to
// give back.
func (c *Counter) Release(date memory.Date, tool string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.used(date, tool)
	if c.state.Date != date || n == 0 {
		return nil
	}
	next := state{Date: date, Calls: map[string]int{}}
	for t, k := range c.state.Calls {
		next.Calls[t] = k
	}
	next.Calls[tool] = n - 1
	if err := c.write(next); err != nil {
		return fmt.Errorf("give back a call of %s: %w", tool, err)
	}
	c.state = next
	return nil
}

// Used returns the calls of each tool counted on date (none for another
// date than the counter's).
func (c *Counter) Used(date memory.Date) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	if c.state.Date != date {
		return out
	}
	for t, n := range c.state.Calls {
		out[t] = n
	}
	return out
}

// used returns the calls of tool on date. The caller holds c.mu.
func (c *Counter) used(date memory.Date, tool string) int {
	if c.state.Date != date {
		return 0
	}
	return c.state.Calls[tool]
}

// write replaces the counts file with s.
func (c *Counter) write(s state) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode tool call counts: %w", err)
	}
	if err := durable.WriteFile(durable.OS{}, c.path, append(data, '\n'), filePerm); err != nil {
		return fmt.Errorf("write tool call counts %s: %w", c.path, err)
	}
	return nil
}

// check is the limit's verdict on a call of tool that would be its
// used+1st of date.
func check(date memory.Date, tool string, limit, used int) error {
	if limit < 1 {
		return fmt.Errorf("limit of %s: %d is not a limit (at least 1)", tool, limit)
	}
	if used < limit {
		return nil
	}
	return &limitError{tool: tool, limit: limit, used: used, date: date}
}

// limitError is a call beyond its tool's limit.
type limitError struct {
	tool        string
	limit, used int
	date        memory.Date
}

// Error says which tool, its limit and the calls made:
// "mcp__broker__place_order may be called at most 20 times a trading
// day; 20 calls were made on 2026-12-01".
func (e *limitError) Error() string {
	return fmt.Sprintf("%s may be called at most %s a trading day; %s made on %s",
		e.tool, plural(e.limit, "time", "times"), plural(e.used, "call was", "calls were"), e.date)
}

// Unwrap returns ErrLimit.
func (e *limitError) Unwrap() error { return ErrLimit }

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
