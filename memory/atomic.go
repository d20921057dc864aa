package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/deskd/deskd/memory/durable"
)

// WriteFileAtomic writes data to path atomically: it writes a temporary file
// in the same directory, fsyncs it, renames it over path and fsyncs the
// directory. Readers see the old content or the new, never a mix. perm
// (e.g. 0o640) is applied exactly, without the umask; run as root, it keeps
// the owner of the file it replaces (or takes its folder's). On error, path
// is unchanged and the temporary file is removed.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := durable.WriteFile(nil, path, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// fs returns the file layer the folder's writes go through.
func (f *Folder) fs() durable.FS { return durable.Or(f.FS) }

// writeAtomic is WriteFileAtomic through the folder's file layer, without
// the error context, for callers that add their own. The file's folder is
// created (and fsynced into its parent) when it is missing: the folders
// of a desk folder are made by their first write (see OpenFolder).
func (f *Folder) writeAtomic(path string, data []byte, perm os.FileMode) error {
	return f.inFolder(path, func() error { return durable.WriteFile(f.fs(), path, data, perm) })
}

// inFolder runs create, which creates a file at path; when it fails
// because path's folder is missing, it creates the folder (durably, see
// mkdirAll) and runs create again. A folder that is there costs nothing.
func (f *Folder) inFolder(path string, create func() error) error {
	err := create()
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, serr := os.Stat(filepath.Dir(path)); !errors.Is(serr, fs.ErrNotExist) {
		return err // the folder is there: something else is missing
	}
	if err := f.mkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	return create()
}

// writeFileKeep is durable.WriteFileKeep through the folder's file layer.
func (f *Folder) writeFileKeep(dir, stem, ext string, data []byte, perm os.FileMode) (string, error) {
	return durable.WriteFileKeep(f.fs(), dir, stem, ext, data, perm)
}

// syncDir fsyncs directory dir, making renames and creations in it durable.
func (f *Folder) syncDir(dir string) error { return durable.SyncDir(f.fs(), dir) }

// mkdirAll creates dir and its parents through the folder's file layer.
func (f *Folder) mkdirAll(dir string) error { return durable.MkdirAll(f.fs(), dir, dirPerm) }

// isTempName reports whether name looks like a temporary file of
// WriteFileAtomic.
func isTempName(name string) bool { return durable.IsTemp(name) }
