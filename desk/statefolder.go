package desk

// A desk's state folder as the operator's commands find it: beside a
// running deskd, to read (and change only what a command names).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/memory"
)

// ErrNoSuchDesk is the error of a desk name that names neither a desk of
// the config nor a state folder (errors.Is).
var ErrNoSuchDesk = errors.New("no such desk")

// ErrNeverRan is the error of a desk of the config that has no state
// folder yet: it has not run (errors.Is).
var ErrNeverRan = errors.New("the desk has not run")

// OpenStateFolder opens the state folder of desk name under cfg's
// state_dir, with now as the folder's clock. A desk no longer in the
// config is still found by its state folder, when name is a plain folder
// name (no path, no leading dot). A name that names neither is an error
// satisfying errors.Is(err, ErrNoSuchDesk), a desk of the config without
// a folder one satisfying errors.Is(err, ErrNeverRan); each says what was
// looked for and where.
func OpenStateFolder(cfg *config.Config, name string, now func() time.Time) (*memory.Folder, error) {
	_, inConfig := cfg.Desks[name]
	if !inConfig && (!filepath.IsLocal(name) || filepath.Base(name) != name || strings.HasPrefix(name, ".")) {
		return nil, kindError{ErrNoSuchDesk, fmt.Errorf("no desk %q in %s", name, cfg.DesksDir)}
	}
	dir := folderOf(cfg, name)
	if _, err := os.Stat(dir); err != nil {
		if inConfig && errors.Is(err, fs.ErrNotExist) {
			return nil, kindError{ErrNeverRan, fmt.Errorf("desk %s has no state folder yet (%s): it has not run", name, dir)}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, kindError{ErrNoSuchDesk, fmt.Errorf("no desk %q in %s and no state folder %s", name, cfg.DesksDir, dir)}
		}
		return nil, fmt.Errorf("open state of desk %s: %w", name, err)
	}
	folder, err := memory.OpenFolder(dir, name, now)
	if err != nil {
		return nil, fmt.Errorf("open state of desk %s: %w", name, err)
	}
	return folder, nil
}

// kindError is an error of kind (a sentinel, for errors.Is) whose
// message is err's alone.
type kindError struct{ kind, err error }

func (e kindError) Error() string   { return e.err.Error() }
func (e kindError) Unwrap() []error { return []error{e.kind, e.err} }
