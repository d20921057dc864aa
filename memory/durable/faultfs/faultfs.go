// Package faultfs is a durable.FS for tests that fails the writes and
// fsyncs it is told to, the way a full or failing disk does: a failed
// write may leave part of its bytes in the file, as a real short write
// does, so that a test sees what a torn record does to the reader.
package faultfs

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/deskd/deskd/memory/durable"
)

// Op is a kind of operation that can fail.
type Op string

// The operations FS counts and can fail.
const (
	Write  Op = "write"  // File.Write: the data of an append or of a temp file
	Sync   Op = "sync"   // File.Sync, of a file or a folder
	Create Op = "create" // OpenFile with O_CREATE, CreateTemp, Mkdir, Link
	Rename Op = "rename" // Rename
	// Truncate is File.Truncate. Fill never fails it (cutting a file back
	// frees space); FailAt can.
	Truncate Op = "truncate"
)

// ErrNoSpace is the error of a full disk.
const ErrNoSpace = syscall.ENOSPC

// ErrIO is the error of a failing disk.
const ErrIO = syscall.EIO

// FS wraps a durable.FS (the operating system's when Base is nil) and
// fails operations as it is told. It counts every operation under a path
// that contains Under (all of them when Under is empty). It is safe for
// concurrent use.
type FS struct {
	// Base is the file system underneath; nil is durable.OS.
	Base durable.FS
	// Under, if set, limits counting and failing to paths that contain it.
	Under string

	mu     sync.Mutex
	counts map[Op]int
	fail   map[Op]map[int]error // op -> 1-based count -> error
	full   error                // every Write, Sync and Create fails while set
}

var _ durable.FS = (*FS)(nil)

// FailAt makes the nth operation op from now on (1 is the next one) fail
// with err.
func (f *FS) FailAt(op Op, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		f.fail = map[Op]map[int]error{}
	}
	if f.fail[op] == nil {
		f.fail[op] = map[int]error{}
	}
	f.fail[op][f.counts[op]+n] = err
}

// Fill makes every write, fsync and creation fail with err (ErrNoSpace,
// say) until Free.
func (f *FS) Fill(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.full = err
}

// Free ends Fill and cancels failures set with FailAt that have not come.
func (f *FS) Free() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.full, f.fail = nil, nil
}

// Count returns how many operations op have been made (under Under).
func (f *FS) Count(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

// hit counts one op on path and returns the error it must fail with.
func (f *FS) hit(op Op, path string) error {
	if f.Under != "" && !strings.Contains(path, f.Under) {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts = map[Op]int{}
	}
	f.counts[op]++
	if err := f.fail[op][f.counts[op]]; err != nil {
		delete(f.fail[op], f.counts[op])
		return err
	}
	if f.full != nil && op != Rename && op != Truncate {
		return f.full
	}
	return nil
}

func (f *FS) base() durable.FS { return durable.Or(f.Base) }

func pathErr(op, path string, err error) error { return &fs.PathError{Op: op, Path: path, Err: err} }

// OpenFile opens through Base; with O_CREATE it counts as a Create, and
// when it fails that way no file is created.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (durable.File, error) {
	if flag&os.O_CREATE != 0 {
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			if err := f.hit(Create, name); err != nil {
				return nil, pathErr("open", name, err)
			}
		}
	}
	file, err := f.base().OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &File{File: file, fs: f}, nil
}

// CreateTemp counts as a Create.
func (f *FS) CreateTemp(dir, pattern string) (durable.File, error) {
	if err := f.hit(Create, dir+"/"+pattern); err != nil {
		return nil, pathErr("createtemp", dir+"/"+pattern, err)
	}
	file, err := f.base().CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &File{File: file, fs: f}, nil
}

// Rename counts as a Rename.
func (f *FS) Rename(oldpath, newpath string) error {
	if err := f.hit(Rename, newpath); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return f.base().Rename(oldpath, newpath)
}

// Link counts as a Create.
func (f *FS) Link(oldname, newname string) error {
	if err := f.hit(Create, newname); err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	return f.base().Link(oldname, newname)
}

// Remove never fails on its own: a full disk still removes files.
func (f *FS) Remove(name string) error { return f.base().Remove(name) }

// Mkdir counts as a Create.
func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	if err := f.hit(Create, name); err != nil {
		return pathErr("mkdir", name, err)
	}
	return f.base().Mkdir(name, perm)
}

// Chown never fails on its own.
func (f *FS) Chown(name string, uid, gid int) error { return f.base().Chown(name, uid, gid) }

// File is a file opened through FS.
type File struct {
	durable.File
	fs *FS
}

// Write counts as a Write. When it fails, the first half of p is written
// first, as a short write on a full disk leaves it.
func (f *File) Write(p []byte) (int, error) {
	if err := f.fs.hit(Write, f.Name()); err != nil {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, pathErr("write", f.Name(), err)
	}
	return f.File.Write(p)
}

// Sync counts as a Sync.
func (f *File) Sync() error {
	if err := f.fs.hit(Sync, f.Name()); err != nil {
		return pathErr("sync", f.Name(), err)
	}
	return f.File.Sync()
}

// Truncate counts as a Truncate.
func (f *File) Truncate(size int64) error {
	if err := f.fs.hit(Truncate, f.Name()); err != nil {
		return pathErr("truncate", f.Name(), err)
	}
	return f.File.Truncate(size)
}

var _ durable.FSSyncer = (*FS)(nil)

// SyncFS counts as a Sync of dir (a folder opened through f) and, unless
// told to fail, is the base's syncfs of its file system (an fsync of dir
// when the base cannot syncfs).
func (f *FS) SyncFS(dir durable.File) error {
	if err := f.fs(dir); err != nil {
		return err
	}
	inner := dir
	if ff, ok := dir.(*File); ok {
		inner = ff.File
	}
	if s, ok := f.base().(durable.FSSyncer); ok {
		return s.SyncFS(inner)
	}
	return inner.Sync()
}

// fs counts a syncfs through dir and returns the error it must fail with.
func (f *FS) fs(dir durable.File) error {
	if err := f.hit(Sync, dir.Name()); err != nil {
		return pathErr("syncfs", dir.Name(), err)
	}
	return nil
}
