package durable

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Links says what ReadRegular does when the path's last element is a
// symbolic link.
type Links int

const (
	// NoFollow refuses a symbolic link without reading it or its target
	// (files that others drop in: the spool folder).
	NoFollow Links = iota
	// Follow reads the file the link leads to, which must be a regular
	// file itself (config files, which may be links by design).
	Follow
)

// Errors that a *RefusedError wraps.
var (
	// ErrNotRegular: the path is not a regular file (a FIFO, a device, a
	// socket, a folder, or a symbolic link that is not followed).
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file holds more bytes than the limit.
	ErrTooLarge = errors.New("too large")
)

// RefusedError is ReadRegular's error for a file it will not read. None
// of the file's content was read or kept, and Reason quotes none of it.
type RefusedError struct {
	// Path is the path given to ReadRegular.
	Path string
	// Reason says why, without the path, for a message that names the
	// file already: "a named pipe (FIFO), not a regular file".
	Reason string
	// Err is ErrNotRegular or ErrTooLarge.
	Err error
}

func (e *RefusedError) Error() string { return e.Path + ": " + e.Reason }

// Unwrap returns ErrNotRegular or ErrTooLarge.
func (e *RefusedError) Unwrap() error { return e.Err }

// ReadRegular reads the regular file at path, of at most limit bytes,
// without ever waiting on something that is not a file. It opens path
// non-blocking (O_NONBLOCK: the open of a FIFO with no writer returns at
// once; O_NOCTTY: a terminal does not become the process's) and, with
// NoFollow, without following a symbolic link at the last element
// (O_NOFOLLOW). It checks the opened file (fstat, so nothing can be
// swapped in between) before it reads a byte: anything but a regular file
// is refused, and so is a file larger than limit. It then reads through a
// limit of limit+1 bytes, so a file that grew since is refused too, and
// never more than limit+1 bytes are read.
//
// A refusal is a *RefusedError (errors.Is ErrNotRegular or ErrTooLarge);
// other errors are the *fs.PathError of the open, stat or read
// (errors.Is fs.ErrNotExist when there is no such file).
func ReadRegular(path string, limit int64, links Links) ([]byte, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	if links == NoFollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, openRefusal(path, links, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &RefusedError{Path: path, Reason: describe(fi.Mode()) + ", not a regular file", Err: ErrNotRegular}
	}
	if fi.Size() > limit {
		return nil, tooLarge(path, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, limit)
	}
	return data, nil
}

func tooLarge(path string, limit int64) error {
	return &RefusedError{Path: path, Reason: fmt.Sprintf("larger than %d bytes", limit), Err: ErrTooLarge}
}

// openRefusal turns the open errors that say what the path is into a
// refusal: ELOOP under O_NOFOLLOW (a symbolic link), ENXIO (a socket, or
// a device with nothing behind it). Lstat tells what it is; the link's
// target is never looked at.
func openRefusal(path string, links Links, err error) error {
	if !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENXIO) {
		return err
	}
	fi, lerr := os.Lstat(path)
	if lerr != nil {
		return err
	}
	m := fi.Mode()
	if m&fs.ModeSymlink != 0 && links == Follow {
		return err // a loop of links: the open's own error says so
	}
	if m.IsRegular() {
		return err
	}
	return &RefusedError{Path: path, Reason: describe(m) + ", not a regular file", Err: ErrNotRegular}
}

// describe names the type of a file that is not regular.
func describe(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link (not followed)"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a folder"
	}
	return "a special file"
}
