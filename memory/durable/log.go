package durable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Log is an append-only file of records, one per line. It never keeps a
// torn record: when a write or its fsync fails, the file is cut back to
// the end of its last good record before Append returns, and if even that
// fails, every later Append first tries the cut again and refuses to write
// until it has succeeded. So a record acknowledged after a failure (a full
// disk that freed up) is never glued onto half of an earlier one. A Log is
// safe for concurrent use.
type Log struct {
	fsys FS
	path string

	mu sync.Mutex
	f  File  // nil once closed
	at int64 // the end of the last good record
	// broken is the failure that left bytes after at that could not be
	// cut off yet; nil when the file ends at at.
	broken error
	// unlisted is set while the file, created by the open, may not be
	// durably in its folder yet: the first fsync of the file (a synced
	// Append, Sync) fsyncs the folder first.
	unlisted bool
	// lazy is set while the file, missing at OpenLogAt, is not created
	// yet: the first Append (or Replace) creates it with perm.
	lazy bool
	perm fs.FileMode
	// dirty is set while bytes written to f are not fsynced; since is
	// the Group's generation before the first of them (see Group.sync).
	dirty bool
	since uint64
	// dev is the device of f's file system (devOf), 0 until a synced
	// Append through a Group needs it: a file's device does not change
	// while it is open. Each new f sets it back to 0.
	dev uint64
}

// Scan is what OpenLog found in the file.
type Scan struct {
	// Records are the good records, in order, without their '\n'.
	Records [][]byte
	// Offsets[i] is where Records[i] begins in the file.
	Offsets []int64
	// Torn is the damaged tail found and set aside, or nil.
	Torn *Torn
	// Skipped are the bad lines before the last good record. They stay in
	// the file; a record glued onto the end of one (the write that failed
	// before it left half a record) is recovered into Records.
	Skipped []Skipped
}

// Torn is a damaged last line: the bytes of a write a crash or a failure
// cut short. OpenLog copies them to SavedTo and cuts the file back to
// Offset.
type Torn struct {
	Path    string // the file
	Offset  int64  // where the damaged line began; the file now ends here
	Bytes   int    // how many bytes were removed
	SavedTo string // the file that keeps them: <file>.torn-<Offset>
}

// Skipped is a bad line in the middle of a file.
type Skipped struct {
	Offset int64 // where it begins
	Bytes  int   // its length, without the '\n'
}

// Valid says whether a line is a good record. OpenLog and ScanRecords call
// it on the lines in file order, and each line (or part of a line) it
// accepts becomes the next of Scan.Records: a Valid may decode and keep
// what it accepts, so that a file is decoded once.
type Valid func(line []byte) bool

// OpenLog opens the log at path, creating it (and its folder) with perm
// if it does not exist, and reads it. The entry of a file it creates is
// made durable in its folder by the log's first fsync (a synced Append, or
// Sync), not by the open: until then the file holds nothing durable, and
// a crash that loses it loses nothing, so that opening a log that is never
// written costs no fsync. valid decides which lines are good
// records; blank lines are ignored. A last line that is not a good record,
// or lacks its '\n', is torn: it is copied to <path>.torn-<offset>, and the
// file is cut back to where it began and fsynced, so that the next open
// finds a clean file; the caller reports Scan.Torn. (A good last record
// that lacks only its '\n' is kept, and the '\n' added.) Bad lines before
// the last good record are reported in Scan.Skipped and left in place.
func OpenLog(fsys FS, path string, perm fs.FileMode, valid Valid) (*Log, Scan, error) {
	fsys = Or(fsys)
	f, created, err := openLogFile(fsys, path, perm, 0)
	if err != nil {
		return nil, Scan{}, err
	}
	fail := func(err error) (*Log, Scan, error) {
		_ = f.Close()
		return nil, Scan{}, err
	}
	data, err := readAll(f)
	if err != nil {
		return fail(err)
	}
	sc, end, terminated := ScanRecords(data, valid)
	if err := mendTail(fsys, f, path, perm, &sc, end, int64(len(data)), terminated, func() ([]byte, error) { return data[end:], nil }); err != nil {
		return fail(err)
	}
	if !terminated {
		end++
	}
	return &Log{fsys: fsys, path: path, f: f, at: end, unlisted: created}, sc, nil
}

// openLogFile opens (creating it and its folder durably, with the
// folder's owner, if needed) the log file at path for appending, and
// checks that it is a regular file of at least from bytes (errors.Is
// ErrShort otherwise; from < 0 is refused too). Nothing is created when a
// check fails on an existing file. created says the file was created: its
// entry in its folder is not fsynced yet (see Log.unlisted).
func openLogFile(fsys FS, path string, perm fs.FileMode, from int64) (_ File, created bool, _ error) {
	if err := MkdirAll(fsys, filepath.Dir(path), 0o750); err != nil {
		return nil, false, err
	}
	_, statErr := os.Lstat(path)
	created = errors.Is(statErr, fs.ErrNotExist)
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return nil, false, err
	}
	fail := func(err error) (File, bool, error) {
		_ = f.Close()
		return nil, false, err
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if !fi.Mode().IsRegular() {
		return fail(fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type()))
	}
	if fi.Size() < from || from < 0 {
		return fail(fmt.Errorf("open %s at %d: %w (%d bytes)", path, from, ErrShort, fi.Size()))
	}
	if created {
		if err := inherit(f, path, true); err != nil {
			return fail(err)
		}
	}
	return f, created, nil
}

// readAll reads f, just opened, into a buffer sized once from its Stat (and
// grown only if the file grew meanwhile), not by io.ReadAll's doubling.
func readAll(f File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 0, max(fi.Size(), 0)+1) // +1: EOF is seen without a regrowth
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// mendTail sets aside and cuts off the torn tail a scan found in f, whose
// good part ends at end and which holds size bytes; or ends the last good
// record with its missing '\n'. frag returns the torn bytes.
func mendTail(fsys FS, f File, path string, perm fs.FileMode, sc *Scan, end, size int64, terminated bool, frag func() ([]byte, error)) error {
	switch {
	case end < size:
		b, err := frag()
		if err != nil {
			return fmt.Errorf("read the torn tail of %s: %w", path, err)
		}
		saved, err := WriteFileKeep(fsys, filepath.Dir(path), filepath.Base(path)+".torn-"+strconv.FormatInt(end, 10), "", b, perm)
		if err != nil {
			return fmt.Errorf("save the torn tail of %s: %w", path, err)
		}
		if err := cut(f, end); err != nil {
			return fmt.Errorf("cut the torn tail of %s: %w", path, err)
		}
		sc.Torn = &Torn{Path: path, Offset: end, Bytes: len(b), SavedTo: saved}
	case !terminated:
		if _, err := f.Write([]byte{'\n'}); err != nil {
			return fmt.Errorf("end the last line of %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("end the last line of %s: %w", path, err)
		}
	}
	return nil
}

// ValidAt is a Valid that is also told where the line begins in the file.
type ValidAt func(line []byte, offset int64) bool

// ErrShort: the file is shorter than where OpenLogAt was told to begin.
var ErrShort = errors.New("shorter than the offset to read from")

// OpenLogAt is OpenLog for a caller that knows the file up to from (the
// end of a good record, or 0) already, as a persisted index of it does,
// and that keeps what it needs of each record itself: it reads the file
// from from on, in chunks (its memory is bounded by the chunk and the
// longest line, not by the file), and calls valid with each line and its
// offset in the file. The Scan it returns has no Records or Offsets; its
// Torn and Skipped are those of the part it read, at their offsets in the
// file. It handles a torn tail as OpenLog does. A file shorter than from
// is refused (errors.Is ErrShort) before anything is changed.
//
// Unlike OpenLog, OpenLogAt does not create a missing file (from 0): the
// log is empty, holds no descriptor, and its first Append creates the
// file (durably, in its folder, which it makes too when it is missing,
// each folder fsynced into its parent). A log that is never written (an
// idle desk's trigger ledger, in a desk folder not made yet) costs no
// file and no folder at all.
func OpenLogAt(fsys FS, path string, perm fs.FileMode, from int64, valid ValidAt) (*Log, Scan, error) {
	fsys = Or(fsys)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) && from == 0 {
		return &Log{fsys: fsys, path: path, lazy: true, perm: perm}, Scan{}, nil
	}
	f, created, err := openLogFile(fsys, path, perm, from)
	if err != nil {
		return nil, Scan{}, err
	}
	fail := func(err error) (*Log, Scan, error) {
		_ = f.Close()
		return nil, Scan{}, err
	}
	sc, end, size, terminated, err := ScanFile(f, from, valid)
	if err != nil {
		return fail(fmt.Errorf("read %s: %w", path, err))
	}
	frag := func() ([]byte, error) {
		b := make([]byte, size-end)
		_, err := f.ReadAt(b, end)
		return b, err
	}
	if err := mendTail(fsys, f, path, perm, &sc, end, size, terminated, frag); err != nil {
		return fail(err)
	}
	if !terminated {
		end++
	}
	return &Log{fsys: fsys, path: path, f: f, at: end, unlisted: created}, sc, nil
}

// scanChunk is how much ScanFile reads at a time.
const scanChunk = 256 << 10

// ScanFile is ScanRecords of the bytes of r from offset from to its end,
// read in chunks: the lines are the same, found the same way, but valid
// is told each line's offset and the Scan keeps no Records or Offsets (a
// line's bytes are valid only during the call). It also returns where the
// bytes ended (size).
func ScanFile(r io.ReaderAt, from int64, valid ValidAt) (sc Scan, end, size int64, terminated bool, err error) {
	s := lineScan{valid: valid, end: from, terminated: true}
	// The buffer starts small (a log's unread tail is often short) and
	// doubles while reads fill it, up to scanChunk; past that only for a
	// line longer than it.
	buf := make([]byte, 16<<10)
	base, n := from, 0 // buf[:n] holds the bytes from base on
	filled := false
	for eof := false; !eof; {
		if n == len(buf) || filled && len(buf) < scanChunk {
			buf = append(buf[:n], make([]byte, len(buf))...)
			buf = buf[:cap(buf)]
		}
		m, rerr := r.ReadAt(buf[n:], base+int64(n))
		filled = n+m == len(buf)
		n += m
		switch {
		case errors.Is(rerr, io.EOF):
			eof = true
		case rerr != nil:
			return Scan{}, 0, 0, false, rerr
		}
		pos := 0
		for {
			i := bytes.IndexByte(buf[pos:n], '\n')
			if i < 0 {
				break
			}
			s.line(buf[pos:pos+i], base+int64(pos), true)
			pos += i + 1
		}
		if eof && pos < n {
			s.line(buf[pos:n], base+int64(pos), false)
			pos = n
		}
		copy(buf, buf[pos:n])
		base, n = base+int64(pos), n-pos
	}
	return s.sc, s.finish(base), base, s.terminated, nil
}

// CreateLog creates the log at path, which must not exist (the error then
// satisfies errors.Is(err, fs.ErrExist)), with first as its first record,
// fsynced with the folder. On failure no file is left.
func CreateLog(fsys FS, path string, perm fs.FileMode, first []byte) (*Log, error) {
	fsys = Or(fsys)
	if bytes.IndexByte(first, '\n') >= 0 {
		return nil, fmt.Errorf("create %s: the record holds a newline", path)
	}
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, perm)
	if err != nil {
		return nil, err
	}
	line := append(append([]byte(nil), first...), '\n')
	_, err = f.Write(line)
	if err == nil {
		err = inherit(f, path, true)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = SyncDir(fsys, filepath.Dir(path))
	}
	if err != nil {
		_ = f.Close()
		_ = fsys.Remove(path)
		return nil, err
	}
	return &Log{fsys: fsys, path: path, f: f, at: int64(len(line))}, nil
}

// EachRecord is ScanRecords for a reader whose valid keeps what it needs
// of each record itself: it keeps no Records or Offsets, and returns
// where the good part of data ends and whether its last good record has
// its '\n', as ScanRecords does.
func EachRecord(data []byte, valid Valid) (end int64, terminated bool) {
	s := lineScan{terminated: true}
	s.valid = func(line []byte, _ int64) bool { return valid(line) }
	s.lines(data)
	return s.finish(int64(len(data))), s.terminated
}

// ScanRecords parses the lines of data. It returns the good records, the
// offset where the good part of the file ends (after the '\n' of the last
// good record; everything after it is torn), and whether the last good
// record has its '\n' (when not, end is the end of data).
func ScanRecords(data []byte, valid Valid) (sc Scan, end int64, terminated bool) {
	s := lineScan{terminated: true, keep: true}
	s.valid = func(line []byte, _ int64) bool { return valid(line) }
	s.lines(data)
	return s.sc, s.finish(int64(len(data))), s.terminated
}

// lines reads data line by line.
func (s *lineScan) lines(data []byte) {
	for pos := 0; pos < len(data); {
		stop, next := len(data), len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			stop, next = pos+i, pos+i+1
		}
		s.line(data[pos:stop], int64(pos), stop < len(data))
		pos = next
	}
}

// lineScan is ScanRecords's reading of one line after another.
type lineScan struct {
	valid      ValidAt
	keep       bool // keep the records in sc.Records (their bytes must stay valid)
	sc         Scan
	end        int64
	terminated bool
	pendingBad []Skipped // bad lines after the last good record so far
}

// line reads the line at pos (without its '\n'; nl says whether it had one).
func (s *lineScan) line(line []byte, pos int64, nl bool) {
	next := pos + int64(len(line))
	if nl {
		next++
	}
	switch {
	case len(bytes.TrimSpace(line)) == 0:
		if len(s.pendingBad) == 0 {
			// A blank last line without its '\n' (spaces, a '\v')
			// is kept, and the '\n' added: the next record must
			// not be glued onto it.
			s.end, s.terminated = next, nl
		}
	case s.valid(line, pos):
		s.good(line, pos, next, nl)
	default:
		if off, ok := glued(line, func(rec []byte) bool { return s.valid(rec, pos+int64(len(line)-len(rec))) }); ok {
			// Half a record, then a whole one: the failed write
			// before it was never cut off. Keep the whole one (a
			// Valid may have kept it already: never go back on it).
			s.pendingBad = append(s.pendingBad, Skipped{Offset: pos, Bytes: off})
			s.good(line[off:], pos+int64(off), next, nl)
			return
		}
		s.pendingBad = append(s.pendingBad, Skipped{Offset: pos, Bytes: len(line)})
	}
}

func (s *lineScan) good(rec []byte, at, next int64, nl bool) {
	s.sc.Skipped = append(s.sc.Skipped, s.pendingBad...)
	s.pendingBad = nil
	if s.keep {
		s.sc.Records = append(s.sc.Records, rec)
		s.sc.Offsets = append(s.sc.Offsets, at)
	}
	s.end, s.terminated = next, nl
}

// finish returns where the good part ends, given where the bytes end.
func (s *lineScan) finish(size int64) int64 {
	if !s.terminated {
		return size
	}
	return s.end
}

// maxGlueTries bounds the search for a record glued onto a torn one, so
// that a hostile line costs little. Only a '{' followed by '"' can begin a
// record (inside a JSON string a quote is escaped), so the count is of
// object starts in the torn half, not of every brace its text holds.
const maxGlueTries = 256

// glued finds a good record that begins inside a bad line (after its first
// byte) and runs to its end; it returns where it begins.
func glued(line []byte, valid Valid) (int, bool) {
	tries := 0
	for i := 1; i < len(line) && tries < maxGlueTries; i++ {
		j := bytes.Index(line[i:], []byte(`{"`))
		if j < 0 {
			return 0, false
		}
		i += j
		tries++
		if json.Valid(line[i:]) && valid(line[i:]) {
			return i, true
		}
	}
	return 0, false
}

// cut truncates f to size and fsyncs it.
func cut(f File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

// Path returns the file's path.
func (l *Log) Path() string { return l.path }

// Err returns the failure that left the file with bytes after its last
// good record that could not be cut off yet, or nil. While it is not nil,
// Append refuses to write unless the cut succeeds first.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.broken
}

// Mend cuts back the tail a failed write left, if Err says there is one.
func (l *Log) Mend() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken == nil || l.f == nil {
		return nil
	}
	if err := cut(l.f, l.at); err != nil {
		return fmt.Errorf("cut the tail of %s: %w", l.path, err)
	}
	l.broken = nil
	return nil
}

// Append writes record (one line, without '\n': Append adds it) in a
// single write and, when sync is set, fsyncs the file. A record written
// without sync becomes durable with the next synced one. On any failure
// the file is cut back to the end of the last good record, and the error
// is returned: the record is not in the log.
func (l *Log) Append(record []byte, sync bool) error {
	return l.AppendAll([][]byte{record}, sync)
}

// AppendAll is Append of several records in one write: all of them are in
// the log, or (on any failure) none.
func (l *Log) AppendAll(records [][]byte, sync bool) error {
	n := 0
	for _, r := range records {
		if bytes.IndexByte(r, '\n') >= 0 {
			return fmt.Errorf("append to %s: the record holds a newline", l.path)
		}
		n += len(r) + 1
	}
	line := make([]byte, 0, n)
	for _, r := range records {
		line = append(append(line, r...), '\n')
	}
	return l.write(line, sync)
}

// AppendLines is AppendAll of records that already end in their
// newlines (as json.Encoder writes them), one after another in lines,
// written as they are, without a copy: lines must hold exactly records
// newlines, none of them an empty record. The caller may reuse lines once
// it returns.
func (l *Log) AppendLines(lines []byte, records int, sync bool) error {
	if records < 1 || len(lines) == 0 || lines[0] == '\n' || lines[len(lines)-1] != '\n' ||
		bytes.Count(lines, []byte{'\n'}) != records || bytes.Contains(lines, []byte("\n\n")) {
		return fmt.Errorf("append to %s: not %d records each ending in a newline", l.path, records)
	}
	return l.write(lines, sync)
}

// write writes line, whole records each ending in a newline, in one write
// and, when sync is set, makes it durable; on any failure it cuts the file
// back to the end of the last good record.
func (l *Log) write(line []byte, sync bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.create(); err != nil {
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	if l.f == nil {
		return fmt.Errorf("append to %s: %w", l.path, os.ErrClosed)
	}
	if l.broken != nil {
		if err := cut(l.f, l.at); err != nil {
			return fmt.Errorf("append to %s: refused until the tail a failed write left is cut off (%v): %w", l.path, l.broken, err)
		}
		l.broken = nil
	}
	if sync {
		if err := l.list(); err != nil {
			return fmt.Errorf("append to %s: %w", l.path, err)
		}
	}
	g, grouped := l.fsys.(*Group)
	if grouped && !l.dirty {
		l.since, l.dirty = g.generation(), true
	}
	_, err := l.f.Write(line)
	if err == nil && sync {
		if grouped {
			if l.dev == 0 {
				l.dev = devOf(l.f)
			}
			err = g.syncOn(l.f, l.dev, filepath.Dir(l.path), l.since)
		} else {
			err = l.f.Sync()
		}
		if err == nil {
			l.dirty = false
		}
	}
	if err != nil {
		// After a failed write or fsync the tail is unknown: cut it.
		if cerr := cut(l.f, l.at); cerr != nil {
			l.broken = err
		}
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	l.at += int64(len(line))
	return nil
}

// Sync fsyncs the file.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lazy {
		return nil // no file yet: nothing to make durable
	}
	if l.f == nil {
		return fmt.Errorf("sync %s: %w", l.path, os.ErrClosed)
	}
	if err := l.list(); err != nil {
		return fmt.Errorf("sync %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", l.path, err)
	}
	l.dirty = false
	return nil
}

// Replace rewrites the whole file atomically with records (each one line,
// without '\n'), as in a compaction, and goes on appending to the new
// file. A crash leaves the old file or the new one.
func (l *Log) Replace(records [][]byte, perm fs.FileMode) error {
	var buf bytes.Buffer
	for _, r := range records {
		if bytes.IndexByte(r, '\n') >= 0 {
			return fmt.Errorf("rewrite %s: a record holds a newline", l.path)
		}
		buf.Write(r)
		buf.WriteByte('\n')
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && !l.lazy {
		return fmt.Errorf("rewrite %s: %w", l.path, os.ErrClosed)
	}
	if err := WriteFile(l.fsys, l.path, buf.Bytes(), perm); err != nil {
		return fmt.Errorf("rewrite %s: %w", l.path, err)
	}
	f, err := l.fsys.OpenFile(l.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		// The new file is in place but cannot be opened: appending to the
		// old descriptor would write to the replaced file. Refuse.
		if l.f != nil {
			_ = l.f.Close()
		}
		l.f, l.lazy, l.dev = nil, false, 0
		return fmt.Errorf("rewrite %s: reopen: %w", l.path, err)
	}
	if l.f != nil {
		_ = l.f.Close()
	}
	l.f, l.at, l.broken, l.unlisted, l.lazy, l.dev = f, int64(buf.Len()), nil, false, false, 0 // WriteFile fsynced the folder
	l.dirty = false
	return nil
}

// create creates the file of a lazy log (see OpenLogAt), if it is one.
// l.mu must be held.
func (l *Log) create() error {
	if !l.lazy {
		return nil
	}
	f, _, err := openLogFile(l.fsys, l.path, l.perm, 0)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	// Unlisted even when the file was there: an earlier try may have
	// created it and failed after, before its folder was fsynced.
	l.f, l.at, l.unlisted, l.lazy, l.dev = f, fi.Size(), true, false, 0
	return nil
}

// list makes the file's entry in its folder durable, if it may not be
// yet (unlisted). l.mu must be held.
func (l *Log) list() error {
	if !l.unlisted {
		return nil
	}
	if err := SyncDir(l.fsys, filepath.Dir(l.path)); err != nil {
		return err
	}
	l.unlisted = false
	return nil
}

// Close closes the file; later Appends fail. A tail a failed write left
// (Err) is cut off first if it can be. Closing again does nothing.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lazy = false // a log never written stays without a file
	if l.f == nil {
		return nil
	}
	if l.broken != nil && cut(l.f, l.at) == nil {
		l.broken = nil
	}
	err := l.f.Close()
	l.f, l.dev = nil, 0
	if err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}
