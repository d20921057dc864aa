package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/deskd/deskd/memory/durable"
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
	var file durable.File
	err = f.inFolder(path, func() (err error) {
		file, err = f.fs().OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, filePerm)
		return err
	})
	if err != nil {
		return fmt.Errorf("append note %s: %w", path, err)
	}
	defer file.Close()
	if created {
		if err := durable.Adopt(file, path); err != nil {
			return fmt.Errorf("append note %s: %w", path, err)
		}
	}
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
	_, err = file.Write(buf)
	if err == nil {
		err = file.Sync()
	}
	if err != nil {
		// No half note for the next one to follow: cut the file back.
		if cerr := file.Truncate(fi.Size()); cerr == nil {
			_ = file.Sync()
		}
		return fmt.Errorf("append note %s: %w", path, err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("append note %s: %w", path, err)
	}
	if created {
		if err := f.syncDir(f.Path(NotesDir)); err != nil {
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
	b, ok, err := readIfThere(path)
	if err != nil {
		return "", false, fmt.Errorf("read notes %s: %w", path, err)
	}
	return string(b), ok, nil
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

// NotesMark is how much of a notes file a reader (the keeper's fold) has
// taken in: its first Offset bytes, whose SHA-256 is Sum (lower-case hex).
// The zero mark is the start of a file. Notes are only ever appended to, so
// a mark stays good until someone edits the file by hand before it.
type NotesMark struct {
	Offset int64  `json:"offset"`
	Sum    string `json:"sha256,omitempty"`
}

// NotesTail is what a notes file holds beyond a mark.
type NotesTail struct {
	// Text is the file's bytes from From to To.
	Text string
	// From is where Text begins: the mark asked for, or the zero mark when
	// the file was rewritten.
	From NotesMark
	// To is the mark of the whole file as read: pass it to the next call to
	// read only what is appended after this one.
	To NotesMark
	// Rewritten is true when the file no longer begins with the bytes the
	// mark covers: it shrank below the mark, or was edited by hand before
	// it (or the mark is not one this package made). Text is then the
	// whole file, so that nothing in it is lost; the caller decides what
	// to do with what it took before.
	Rewritten bool
}

// ReadNotesFrom returns the notes of date d beyond mark: the bytes appended
// since the read that returned mark as To. ok is false, with no error, if d
// has no notes file. The read is consistent with AppendNote: it never sees
// half a note.
func (f *Folder) ReadNotesFrom(d Date, mark NotesMark) (tail NotesTail, ok bool, err error) {
	path, err := f.dateFile(NotesDir, d)
	if err != nil {
		return NotesTail{}, false, fmt.Errorf("read notes: %w", err)
	}
	f.mu.Lock()
	b, err := os.ReadFile(path)
	f.mu.Unlock()
	if errors.Is(err, fs.ErrNotExist) {
		return NotesTail{}, false, nil
	}
	if err != nil {
		return NotesTail{}, false, fmt.Errorf("read notes %s from offset %d: %w", path, mark.Offset, err)
	}
	tail = NotesTail{To: markOf(b)}
	switch {
	case mark.Offset == 0:
		tail.Text, tail.From = string(b), mark
	case mark.Offset > 0 && mark.Offset <= int64(len(b)) && markOf(b[:mark.Offset]) == mark:
		tail.Text, tail.From = string(b[mark.Offset:]), mark
	default:
		tail.Text, tail.Rewritten = string(b), true
	}
	return tail, true, nil
}

// markOf returns the mark of b as a whole.
func markOf(b []byte) NotesMark {
	sum := sha256.Sum256(b)
	return NotesMark{Offset: int64(len(b)), Sum: hex.EncodeToString(sum[:])}
}
