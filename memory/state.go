package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("parse state %s: %w", path, err)
	}
	return true, nil
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
