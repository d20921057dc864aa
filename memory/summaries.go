package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Summary is the summary of one trading date, summaries/YYYY-MM-DD.md.
type Summary struct {
	Date Date   // the trading date summarised
	Text string // the Markdown text, as stored
	Path string // the file
	// Scripted is true when the offline scripted model wrote it, as the
	// header its text begins with says (ScriptedSummaryHeader); Model is
	// then that model's name.
	Scripted bool
	Model    string
}

// WriteSummary writes text as the summary of date d, atomically, and
// returns the file's path. If d has a summary already, its old text is
// first kept under history/summaries/YYYY-MM-DD/<UTC now>.md, as WriteMemory
// does.
func (f *Folder) WriteSummary(d Date, text string) (path string, err error) {
	path, err = f.dateFile(SummariesDir, d)
	if err != nil {
		return "", fmt.Errorf("write summary: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, perm, err := f.keepOld(path, filepath.Join(HistoryDir, SummariesDir, d.String()), ".md")
	if err != nil {
		return "", fmt.Errorf("write summary %s: %w", path, err)
	}
	if err := f.writeAtomic(path, []byte(text), perm); err != nil {
		return "", fmt.Errorf("write summary %s: %w", path, err)
	}
	return path, nil
}

// ReadSummary returns the summary of date d; ok is false if there is none.
func (f *Folder) ReadSummary(d Date) (Summary, bool, error) {
	path, err := f.dateFile(SummariesDir, d)
	if err != nil {
		return Summary{}, false, fmt.Errorf("read summary: %w", err)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Summary{}, false, nil
	}
	if err != nil {
		return Summary{}, false, fmt.Errorf("read summary %s: %w", path, err)
	}
	return withScriptedHeader(Summary{Date: d, Text: string(b), Path: path}), true, nil
}

// SummaryDates returns the dates that have a summary, sorted ascending.
func (f *Folder) SummaryDates() ([]Date, error) {
	dates, err := listDates(f.Path(SummariesDir))
	if err != nil {
		return nil, fmt.Errorf("list summaries %s: %w", f.Path(SummariesDir), err)
	}
	return dates, nil
}

// LatestSummary returns the summary with the greatest date; ok is false if
// there is none.
func (f *Folder) LatestSummary() (Summary, bool, error) {
	dates, err := f.SummaryDates()
	if err != nil {
		return Summary{}, false, err
	}
	for i := len(dates) - 1; i >= 0; i-- {
		s, ok, err := f.ReadSummary(dates[i])
		if err != nil || ok {
			return s, ok, err
		}
		// removed since it was listed: try the one before
	}
	return Summary{}, false, nil
}
