package memory

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// statePath returns the path of the JSON state file name, which must be a
// local path inside the desk folder (e.g. "state.json").
func (f *Folder) statePath(name string) (string, error) {
	if name == "" || !filepath.IsLocal(name) {
		return "", fmt.Errorf("state file name %q is not a path inside the desk folder", name)
	}
	return f.Path(name), nil
}

// ReadJSON decodes the JSON file name (e.g. "state.json") of the desk folder
// into v. ok is false, with no error, if the file does not exist. A file
// that does not parse is an error naming the file; ReadJSON never changes
// the file.
func (f *Folder) ReadJSON(name string, v any) (ok bool, err error) {
	path, err := f.statePath(name)
	if err != nil {
		return false, fmt.Errorf("read state: %w", err)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read state %s: %w", path, err)
	}
	if len(b) == 0 {
		return false, &DamagedError{Path: path, Err: errEmpty}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, &DamagedError{Path: path, Err: err}
	}
	return true, nil
}

// errEmpty is the damage of a file of 0 bytes, as some file systems leave
// after a power cut.
var errEmpty = errors.New("the file is empty (0 bytes)")

// DamagedError is a desk file that is there but cannot be what it should
// be: empty, cut short, or not of its form. Path is the file; Err says
// what is wrong with it.
type DamagedError struct {
	Path string
	Err  error
}

// Error reads "parse state <path>: <what is wrong>".
func (e *DamagedError) Error() string { return fmt.Sprintf("parse state %s: %v", e.Path, e.Err) }

// Unwrap returns what is wrong with the file.
func (e *DamagedError) Unwrap() error { return e.Err }

// DamagedSuffix is put, with the UTC instant (HistoryStampLayout), after
// the name of a damaged file that SetAside moves out of the way:
// state.json.damaged-20260302T043000.000000000Z.
const DamagedSuffix = ".damaged-"

// SetAside moves the desk folder's file name (e.g. "state.json") out of the
// way, to <name>.damaged-<UTC now> beside it, and returns that path: the
// file is kept, never deleted, for an operator to look at, and a file
// rebuilt in its place does not overwrite it.
func (f *Folder) SetAside(name string) (string, error) {
	path, err := f.statePath(name)
	if err != nil {
		return "", fmt.Errorf("set aside: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	to := path + DamagedSuffix + f.stamp()
	if err := f.fs().Rename(path, to); err != nil {
		return "", fmt.Errorf("set aside %s: %w", path, err)
	}
	if err := f.syncDir(filepath.Dir(path)); err != nil {
		return to, fmt.Errorf("set aside %s as %s: %w", path, to, err)
	}
	return to, nil
}

// RebuildState writes StateFile anew from the session files, for a state
// file that was lost or damaged (set it aside first): the current session
// is the one whose header began last (by its time, then its id), with its
// trading date and parent. The state written is as of the session file's
// start (a mark, "as_of", at offset 0 with nothing counted), so that the
// router, which keeps its counts and spend as of a point of the session
// file, counts every record of it at its restore: the session's exchanges
// and its spend (that of earlier sessions of the same day is lost with the
// damaged file). ok is false, and nothing is written, when the desk has no
// session with a readable header: its next start begins its first session.
func (f *Folder) RebuildState() (st State, ok bool, err error) {
	ids, err := f.SessionIDs()
	if err != nil {
		return State{}, false, fmt.Errorf("rebuild %s: %w", f.Path(StateFile), err)
	}
	var at time.Time
	for _, id := range ids {
		h, ok := f.sessionHeader(id)
		if !ok {
			continue
		}
		date, err := ParseDate(h.Date)
		if err != nil {
			continue
		}
		if st.Session != "" && (h.At.Before(at) || h.At.Equal(at) && id < st.Session) {
			continue
		}
		st, at = State{Session: id, Date: date, Parent: h.Parent}, h.At
	}
	if st.Session == "" {
		return State{}, false, nil
	}
	if err := f.WriteJSON(StateFile, rebuiltState{State: st, AsOf: startMark{}}); err != nil {
		return State{}, false, fmt.Errorf("rebuild: %w", err)
	}
	return st, true, nil
}

// rebuiltState is the StateFile RebuildState writes.
type rebuiltState struct {
	State
	AsOf startMark `json:"as_of"`
}

// startMark is a mark at the start of the session file, before any record.
type startMark struct {
	Offset    int64 `json:"offset"`
	Exchanges int   `json:"exchanges"`
}

// sessionHeader returns the header of session id, read from the first
// line of its file; ok is false when the file has no readable header.
func (f *Folder) sessionHeader(id string) (Record, bool) {
	file, err := os.Open(f.SessionPath(id))
	if err != nil {
		return Record{}, false
	}
	defer file.Close()
	line, err := bufio.NewReaderSize(file, 4096).ReadSlice('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return Record{}, false
	}
	var h Record
	if json.Unmarshal(line, &h) != nil || h.Type != RecordHeader || h.Session != id {
		return Record{}, false
	}
	return h, true
}

// WriteJSON writes v as indented JSON to the file name of the desk folder,
// atomically, creating parent folders as needed. If the file there now is
// not valid JSON (damaged, or a bad hand edit), it is first kept under
// history/state/<name>/<UTC now><ext of name> rather than lost.
func (f *Folder) WriteJSON(name string, v any) error {
	path, err := f.statePath(name)
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	b = append(b, '\n')
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, err := os.ReadFile(path); err == nil && !json.Valid(old) {
		if _, _, err := f.keepOld(path, filepath.Join(HistoryDir, "state", name), filepath.Ext(name)); err != nil {
			return fmt.Errorf("write state %s: %w", path, err)
		}
	}
	if err := f.mkdirAll(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	if err := f.writeAtomic(path, b, filePerm); err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	return nil
}
