// Package durable is how deskd writes what it must not lose: whole files
// replaced atomically, and append-only files of records that never keep a
// torn record. Every write goes through an FS, the operating system's in
// the daemon and a fault-injecting one in tests (package faultfs), so that
// a test can fail any write or fsync and check what survives.
//
// Files a process running as root creates or replaces keep the owner and
// group of the file they replace, or else of the folder they are created
// in: an operator's `sudo deskd ...` never leaves a file the daemon, which
// runs as its own user, cannot read.
package durable

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// FS is the file system deskd's durable writes go through. Reads that
// change nothing may use package os directly.
type FS interface {
	// OpenFile is os.OpenFile.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// CreateTemp is os.CreateTemp.
	CreateTemp(dir, pattern string) (File, error)
	// Rename is os.Rename.
	Rename(oldpath, newpath string) error
	// Link is os.Link.
	Link(oldname, newname string) error
	// Remove is os.Remove.
	Remove(name string) error
	// Mkdir is os.Mkdir.
	Mkdir(name string, perm fs.FileMode) error
	// Chown is os.Lchown.
	Chown(name string, uid, gid int) error
}

// File is an open file of an FS.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	Name() string
	Stat() (fs.FileInfo, error)
	Sync() error
	Truncate(size int64) error
	Chmod(mode fs.FileMode) error
	Chown(uid, gid int) error
}

// OS is the operating system's file system.
type OS struct{}

var _ FS = OS{}

// OpenFile is os.OpenFile.
func (OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // a nil *os.File must not become a non-nil File
	}
	return f, nil
}

// CreateTemp is os.CreateTemp.
func (OS) CreateTemp(dir, pattern string) (File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Rename is os.Rename.
func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Link is os.Link.
func (OS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

// Remove is os.Remove.
func (OS) Remove(name string) error { return os.Remove(name) }

// Mkdir is os.Mkdir.
func (OS) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }

// Chown is os.Lchown.
func (OS) Chown(name string, uid, gid int) error { return os.Lchown(name, uid, gid) }

// Or returns fsys, or OS when fsys is nil.
func Or(fsys FS) FS {
	if fsys == nil {
		return OS{}
	}
	return fsys
}

// IsDiskFull reports whether err says the disk (or the user's quota) is
// full.
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// owner returns the uid and gid of path; ok is false when it cannot tell.
func owner(path string) (uid, gid int, ok bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

// like returns the owner a file written at path should have: that of the
// file there now or, when there is none (or fresh is set: the file at path
// was just created), that of its folder. ok is false when there is nothing
// to do: the process is not root (it cannot give files away, and what it
// creates is its own), the owner cannot be told, or it is root's.
func like(path string, fresh bool) (uid, gid int, ok bool) {
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	if !fresh {
		if uid, gid, ok := owner(path); ok {
			return uid, gid, uid != 0 || gid != 0
		}
	}
	uid, gid, ok = owner(filepath.Dir(path))
	return uid, gid, ok && (uid != 0 || gid != 0)
}

// inherit gives f, to be found at path, the owner like gives.
func inherit(f File, path string, fresh bool) error {
	uid, gid, ok := like(path, fresh)
	if !ok {
		return nil
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("give %s the owner of its folder: %w", path, err)
	}
	return nil
}

// Adopt gives f, a file just created at path, the owner of its folder
// when the process is root, as the other writes of this package do; it
// does nothing otherwise.
func Adopt(f File, path string) error { return inherit(f, path, true) }

// MkdirAll is os.MkdirAll through fsys: each folder it creates gets perm
// and, as root, the owner of the folder it is created in; the parent of
// each is fsynced so that the creation is durable.
func MkdirAll(fsys FS, path string, perm fs.FileMode) error {
	fsys = Or(fsys)
	path = filepath.Clean(path)
	if fi, err := os.Stat(path); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: path, Err: syscall.ENOTDIR}
		}
		return nil
	}
	parent := filepath.Dir(path)
	if parent != path {
		if err := MkdirAll(fsys, parent, perm); err != nil {
			return err
		}
	}
	if err := fsys.Mkdir(path, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	if uid, gid, ok := like(path, true); ok {
		if err := fsys.Chown(path, uid, gid); err != nil {
			return fmt.Errorf("give %s the owner of its folder: %w", path, err)
		}
	}
	return SyncDir(fsys, parent)
}

// SyncDir fsyncs folder dir, making creations and renames in it durable.
func SyncDir(fsys FS, dir string) error {
	d, err := Or(fsys).OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
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
