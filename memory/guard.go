package memory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ErrMemoryChanged is returned by ReplaceMemory when Memory.md no longer
// holds the text the caller read: someone (an operator) edited it meanwhile.
var ErrMemoryChanged = errors.New("Memory.md changed since it was read")

// Default guards of a fold.
const (
	DefaultMemoryMaxBytes = 32 << 10
	DefaultMemoryMinKept  = 0.75
)

// FoldGuard decides whether a fold's result may replace Memory.md.
type FoldGuard struct {
	// MaxBytes caps the new Memory.md (default 32 KiB).
	MaxBytes int
	// MinKept is the share of the prior entries the new text must keep
	// (default 0.75; 0 < MinKept <= 1).
	MinKept float64
}

// RefusedError says why a fold's result was refused.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "fold refused: " + e.Reason }

// Check returns a *RefusedError when after may not replace before: it is
// empty, it is larger than MaxBytes, or it keeps fewer than MinKept of
// before's entries.
func (g FoldGuard) Check(before, after string) error {
	max, minKept := g.MaxBytes, g.MinKept
	if max <= 0 {
		max = DefaultMemoryMaxBytes
	}
	if minKept <= 0 || minKept > 1 {
		minKept = DefaultMemoryMinKept
	}
	if strings.TrimSpace(after) == "" {
		return &RefusedError{"the result is empty"}
	}
	if len(after) > max {
		return &RefusedError{fmt.Sprintf("the result is %d bytes, more than the cap of %d", len(after), max)}
	}
	prior := Entries(before)
	if len(prior) == 0 {
		return nil
	}
	kept := map[string]int{}
	for _, e := range Entries(after) {
		kept[e]++
	}
	n := 0
	for _, e := range prior {
		if kept[e] > 0 {
			kept[e]--
			n++
		}
	}
	if share := float64(n) / float64(len(prior)); share < minKept {
		return &RefusedError{fmt.Sprintf("it keeps %d of %d prior entries (%.0f%%), fewer than the %.0f%% required",
			n, len(prior), 100*share, 100*minKept)}
	}
	return nil
}

// Entries returns the entries of a Memory.md: its non-blank lines that are
// not headings, trimmed, with list markers removed. Entries are what a fold
// must keep.
func Entries(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		for _, marker := range []string{"- ", "* ", "+ "} {
			l = strings.TrimPrefix(l, marker)
		}
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

// ReplaceMemory replaces Memory.md with text only if it still holds
// expected (compare and swap); otherwise it returns ErrMemoryChanged and
// changes nothing. The previous version goes to history first, whose path
// it returns.
func (f *Folder) ReplaceMemory(expected, text string) (historyPath string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.prompts.changed()
	path := f.Path(MemoryFile)
	cur, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("replace memory %s: %w", path, err)
	}
	if string(cur) != expected {
		return "", ErrMemoryChanged
	}
	hist, err := f.swapMemoryLocked(text)
	if err != nil {
		return hist, fmt.Errorf("replace memory: %w", err)
	}
	return hist, nil
}

// MemoryVersion is one kept version of Memory.md.
type MemoryVersion struct {
	// ID names the version: its file name without .md (the UTC time it was
	// replaced, such as 20260301T183000.000000000Z).
	ID   string
	Path string
	Size int64
	// At is when it was replaced, and Seq its place among the versions
	// replaced at the same instant (1, then 2, 3, ...), both read from its
	// name (ParseHistoryName); At is zero for a file named otherwise.
	At  time.Time
	Seq int
}

// MemoryHistory lists the kept versions of Memory.md, oldest first.
func (f *Folder) MemoryHistory() ([]MemoryVersion, error) {
	dir := f.Path(filepath.Join(HistoryDir, "memory"))
	entries, err := ListDir(dir, "memory history")
	if err != nil {
		return nil, err
	}
	var out []MemoryVersion
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".md") || isTempName(name) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		at, seq, _ := ParseHistoryName(name, ".md")
		out = append(out, MemoryVersion{ID: strings.TrimSuffix(name, ".md"), Path: filepath.Join(dir, name), Size: info.Size(), At: at, Seq: seq})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
