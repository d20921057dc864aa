package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The history folders: every file this package replaces is first kept
// under history/, named after the instant it was replaced
// (HistoryStampLayout, then -2, -3, ... when that name is taken). This
// file reads those names and folders for everyone else.

// ParseHistoryName reads the name of a kept file, <stamp><ext> or
// <stamp>-<n><ext>: the instant it was replaced and its sequence number
// (1 for a name without -<n>). ok is false for a name of another shape.
func ParseHistoryName(name, ext string) (at time.Time, seq int, ok bool) {
	stem, found := strings.CutSuffix(name, ext)
	if !found {
		return time.Time{}, 0, false
	}
	seq = 1
	if i := strings.LastIndex(stem, "Z-"); i >= 0 {
		n, err := strconv.Atoi(stem[i+2:])
		if err != nil {
			return time.Time{}, 0, false
		}
		stem, seq = stem[:i+1], n
	}
	at, err := time.Parse(HistoryStampLayout, stem)
	if err != nil {
		return time.Time{}, 0, false
	}
	return at, seq, true
}

// SummaryVersion is an earlier version of a date's summary, kept under
// history/summaries/YYYY-MM-DD/ when the summary file was replaced.
type SummaryVersion struct {
	// Name is the file's name (see ParseHistoryName), Path its path.
	Name string
	Path string
	// Text is what the summary file held until it was replaced.
	Text string
}

// SummaryVersions returns the kept versions of date d's summary, by name
// (oldest replacement first). A date with none has none.
func (f *Folder) SummaryVersions(d Date) ([]SummaryVersion, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("kept summaries: invalid date %04d-%02d-%02d", d.Year, int(d.Month), d.Day)
	}
	dir := f.Path(filepath.Join(HistoryDir, SummariesDir, d.String()))
	entries, err := ListDir(dir, "kept summaries")
	if err != nil {
		return nil, err
	}
	var out []SummaryVersion
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".md") || isTempName(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // replaced again since it was listed
		}
		if err != nil {
			return nil, fmt.Errorf("read kept summary %s: %w", path, err)
		}
		out = append(out, SummaryVersion{Name: e.Name(), Path: path, Text: string(b)})
	}
	return out, nil
}
