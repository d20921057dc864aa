package memory

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tempInfix marks the temporary files WriteFileAtomic creates:
// "." + base + tempInfix + random, in the destination directory.
const tempInfix = ".tmp-"

// WriteFileAtomic writes data to path atomically: it writes a temporary file
// in the same directory, fsyncs it, renames it over path and fsyncs the
// directory. Readers see the old content or the new, never a mix. perm
// (e.g. 0o640) is applied exactly, without the umask. On error, path is
// unchanged and the temporary file is removed.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := writeAtomic(path, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeAtomic is WriteFileAtomic without the error context, for callers
// that add their own.
func writeAtomic(path string, data []byte, perm os.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := writeTemp(dir, base, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// writeTemp writes data to a new temporary file in dir, named after base,
// fsyncs and closes it, and returns its path.
func writeTemp(dir, base string, data []byte, perm os.FileMode) (name string, err error) {
	f, err := os.CreateTemp(dir, "."+base+tempInfix+"*")
	if err != nil {
		return "", err
	}
	name = f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(name)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return "", err
	}
	if err = f.Chmod(perm); err != nil {
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

// writeFileKeep writes data atomically to dir/stem+ext without ever
// replacing an existing file: when that name is taken by different content
// it tries stem-2+ext, stem-3+ext, ... A file that already holds exactly
// data is reused. It returns the path written (or reused).
func writeFileKeep(dir, stem, ext string, data []byte, perm os.FileMode) (string, error) {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return "", err
	}
	tmp, err := writeTemp(dir, stem+ext, data, perm)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp) // the data lives on under its final name
	for i := 1; ; i++ {
		name := stem + ext
		if i > 1 {
			name = stem + "-" + strconv.Itoa(i) + ext
		}
		path := filepath.Join(dir, name)
		// link(2) publishes the complete file under its name, or fails
		// when the name exists: atomic and exclusive.
		err := os.Link(tmp, path)
		if err == nil {
			return path, syncDir(dir)
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		if old, rerr := os.ReadFile(path); rerr == nil && bytes.Equal(old, data) {
			return path, nil
		}
	}
}

// syncDir fsyncs directory dir, making renames and creations in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// isTempName reports whether name looks like a temporary file of
// WriteFileAtomic.
func isTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempInfix)
}
