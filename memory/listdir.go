package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ListDir returns the entries of dir, sorted by name (os.ReadDir). A
// missing dir has none: nil, and no error. Any other error is wrapped as
// "list <what> <dir>: ...".
func ListDir(dir, what string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s %s: %w", what, dir, err)
	}
	return entries, nil
}
