package durable

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TempInfix marks the temporary files WriteFile creates: "." + base +
// TempInfix + random, in the destination folder.
const TempInfix = ".tmp-"

// IsTemp reports whether name (a base name) looks like a temporary file of
// WriteFile, which a crash may have left behind.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, TempInfix)
}

// WriteFile replaces path with data atomically: it writes a temporary file
// in the same folder, fsyncs it, renames it over path and fsyncs the
// folder. Readers see the old content or the new, never a mix. perm is
// applied exactly, without the umask; as root, the file keeps the owner of
// the file it replaces (or takes its folder's). On error, path is
// unchanged and the temporary file is removed. The error is not wrapped
// with the path: callers add their own context.
func WriteFile(fsys FS, path string, data []byte, perm fs.FileMode) error {
	fsys = Or(fsys)
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := writeTemp(fsys, dir, base, path, data, perm)
	if err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	return SyncDir(fsys, dir)
}

// writeTemp writes data to a new temporary file in dir, named after base,
// with the owner a file at like should have; fsyncs and closes it, and
// returns its path.
func writeTemp(fsys FS, dir, base, like string, data []byte, perm fs.FileMode) (_ string, err error) {
	f, err := fsys.CreateTemp(dir, "."+base+TempInfix+"*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = fsys.Remove(name)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return "", err
	}
	if err = f.Chmod(perm); err != nil {
		return "", err
	}
	if err = inherit(f, like, false); err != nil {
		return "", err
	}
	if err = f.Sync(); err != nil {
		return "", err
	}
	if err = f.Close(); err != nil {
		return "", err
	}
	return name, nil
}

// WriteFileKeep writes data atomically to dir/stem+ext without ever
// replacing an existing file: when that name is taken by different content
// it tries stem-2+ext, stem-3+ext, ... A file that already holds exactly
// data is reused. It returns the path written (or reused). The folder is
// created if needed.
func WriteFileKeep(fsys FS, dir, stem, ext string, data []byte, perm fs.FileMode) (string, error) {
	fsys = Or(fsys)
	if err := MkdirAll(fsys, dir, 0o750); err != nil {
		return "", err
	}
	tmp, err := writeTemp(fsys, dir, stem+ext, filepath.Join(dir, stem+ext), data, perm)
	if err != nil {
		return "", err
	}
	defer fsys.Remove(tmp) // the data lives on under its final name
	for i := 1; ; i++ {
		name := stem + ext
		if i > 1 {
			name = stem + "-" + strconv.Itoa(i) + ext
		}
		path := filepath.Join(dir, name)
		// link(2) publishes the complete file under its name, or fails
		// when the name exists: atomic and exclusive.
		err := fsys.Link(tmp, path)
		if err == nil {
			return path, SyncDir(fsys, dir)
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		if old, rerr := os.ReadFile(path); rerr == nil && bytes.Equal(old, data) {
			return path, nil
		}
	}
}
