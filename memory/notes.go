package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// AppendNote appends line and a newline to notes/YYYY-MM-DD.md of date d,
// creating the file if needed, and fsyncs it. Trailing newlines are
// stripped from line; an empty (or all-space) line is refused. If the file
// does not end with a newline (a hand edit), one is added before line.
// Notes are only ever appended to.
func (f *Folder) AppendNote(d Date, line string) error {
	line = strings.TrimRight(line, "\r\n")
	path, err := f.dateFile(NotesDir, d)
	if err != nil {
		return fmt.Errorf("append note: %w", err)
	}
	if strings.TrimSpace(line) == "" {
		return fmt.Errorf("append note %s: empty line", path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	file, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, filePerm)
	if err != nil {
		return fmt.Errorf("append note %s: %w", path, err)
	}
	defer file.Close()
	buf := make([]byte, 0, len(line)+2)
	fi, err := file.Stat()
	if err != nil {
		return fmt.Errorf("append note %s: %w", path, err)
	}
	if size := fi.Size(); size > 0 {
		last := make([]byte, 1)
		if _, err := file.ReadAt(last, size-1); err != nil {
			return fmt.Errorf("append note %s: %w", path, err)
		}
		if last[0] != '\n' {
			buf = append(buf, '\n')
		}
	}
	buf = append(buf, line...)
	buf = append(buf, '\n')
	if _, err := file.Write(buf); err != nil {
		return fmt.Errorf("append note %s: %w", path, err)
	}
	if err := file.Sync(); err != nil {
		return fmt.Errorf("append note %s: %w", path, err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("append note %s: %w", path, err)
	}
	if created {
		if err := syncDir(f.Path(NotesDir)); err != nil {
			return fmt.Errorf("append note %s: %w", path, err)
		}
	}
	return nil
}

// ReadNotes returns the notes of date d; ok is false if there are none.
func (f *Folder) ReadNotes(d Date) (text string, ok bool, err error) {
	path, err := f.dateFile(NotesDir, d)
	if err != nil {
		return "", false, fmt.Errorf("read notes: %w", err)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read notes %s: %w", path, err)
	}
	return string(b), true, nil
}

// NoteDates returns the dates that have a notes file, sorted ascending.
// Files not named YYYY-MM-DD.md are ignored.
func (f *Folder) NoteDates() ([]Date, error) {
	dates, err := listDates(f.Path(NotesDir))
	if err != nil {
		return nil, fmt.Errorf("list notes %s: %w", f.Path(NotesDir), err)
	}
	return dates, nil
}
