package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/deskd/deskd/memory/durable"
)

// Replicas is the durable.FS through which every durable write of a desk
// folder, <desksDir>/<desk>/..., is replicated to the desk's WAL, so that
// memory/durable's callers do not change. Paths outside the desk folders
// pass through to the inner FS untouched; so do those below an entry of
// desksDir whose name begins with '.', which no desk's does.
//
// A desk's folder is written only while a Writer is attached for it (the
// host owns the desk): without one (a standby, or a desk detached) every
// write there fails with an error wrapping ErrFenced and writes nothing.
// Once the attached Writer has stopped (fenced, its lease lost, a publish
// unanswered), every later write there fails with its error.
//
// Inside an attached desk's folder:
//   - bytes written to a file are replicated at its Sync: the local
//     fsync and the publish of the bytes since the file's last
//     replicated offset (OpAppend) run in parallel, and Sync returns only
//     once both succeeded. If the publish fails, the file is cut back to
//     its last replicated offset before Sync returns the error;
//   - a temporary file (durable.IsTemp) is not replicated; renamed over a
//     desk file it publishes OpReplace with its content (the bytes
//     written to it through Replicas), linked under a free name OpLink;
//   - Truncate below the replicated offset publishes OpTruncate; Remove
//     OpRemove, a Rename inside the folder OpRename, Mkdir OpMkdir.
//
// A file created and never synced holds nothing durable and is not in
// the WAL (its Remove publishes nothing).
//
// Each of these publishes first and changes the local folder after (a
// Link and a Mkdir are undone when their publish fails), so that a
// failed publish leaves the folder as Rebuild gives it. Only appends
// (O_APPEND, or writes at the end of a file opened empty) are
// replicated; a write elsewhere is refused. A move into, out of or
// between desk folders is refused too.
//
// When the inner FS is a *durable.Group, a file's local fsync joins the
// Group's shared flushes. Replicas is safe for concurrent use.
type Replicas struct {
	inner    durable.FS
	group    *durable.Group
	desksDir string // absolute and clean when it could be made so

	mu    sync.Mutex
	desks map[string]*deskRepl
}

var _ durable.FS = (*Replicas)(nil)

// NewReplicas returns the Replicas of the desk folders below desksDir,
// over inner (nil: the operating system's), with no desk attached.
func NewReplicas(inner durable.FS, desksDir string) *Replicas {
	inner = durable.Or(inner)
	g, _ := inner.(*durable.Group)
	return &Replicas{inner: inner, group: g, desksDir: absClean(desksDir), desks: map[string]*deskRepl{}}
}

// Attach lets Replicas write desk's folder, replicating through w (the
// desk's writer from Fence, whose folder is as its WAL has it: rebuilt,
// or seeded). It replaces a writer attached before.
func (r *Replicas) Attach(desk string, w *Writer) {
	d := &deskRepl{name: desk, w: w, files: map[string]*fileRepl{}, temps: map[string]*tempFile{}}
	if w != nil && w.desk != desk {
		d.bad = fmt.Errorf("the writer attached is desk %s's: %w", w.desk, ErrFenced)
	}
	r.mu.Lock()
	old := r.desks[desk]
	r.desks[desk] = d
	r.mu.Unlock()
	old.detach()
}

// Detach stops Replicas writing desk's folder: later writes there, also
// through files opened before, are refused (ErrFenced).
func (r *Replicas) Detach(desk string) {
	r.mu.Lock()
	d := r.desks[desk]
	delete(r.desks, desk)
	r.mu.Unlock()
	d.detach()
}

// absClean is p made absolute (when it can be) and clean.
func absClean(p string) string {
	if !filepath.IsAbs(p) {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
	}
	return filepath.Clean(p)
}

// place is where a path is: outside every desk folder (d nil, desk ""),
// or in desk's folder at rel ("" for the folder itself).
type place struct {
	desk string
	rel  string
	d    *deskRepl // nil when the desk is not attached
}

func (p place) inside() bool { return p.desk != "" }

// where finds name's place.
func (r *Replicas) where(name string) place {
	rel, err := filepath.Rel(r.desksDir, absClean(name))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return place{}
	}
	desk, rest, _ := strings.Cut(filepath.ToSlash(rel), "/")
	if strings.HasPrefix(desk, ".") {
		return place{} // no desk's name: the daemon's own (a folder being rebuilt, ...)
	}
	r.mu.Lock()
	d := r.desks[desk]
	r.mu.Unlock()
	return place{desk: desk, rel: rest, d: d}
}

// check refuses a write (op) at p when the desk's folder may not be
// written: no writer attached, or the writer stopped.
func (p place) check(op string) error {
	if !p.inside() {
		return nil
	}
	what := p.rel
	if what == "" {
		what = "its folder"
	}
	if p.d == nil {
		return fmt.Errorf("cluster: desk %s: %s %s: this host does not own the desk (no writer attached): %w", p.desk, op, what, ErrFenced)
	}
	if err := p.d.err(); err != nil {
		return fmt.Errorf("cluster: desk %s: %s %s: %w", p.desk, op, what, err)
	}
	return nil
}

// deskPath finds name's place for a write (op) and refuses it when the
// desk's folder may not be written; in reports a path inside a desk's
// folder (not the folder itself), whose write is replicated.
func (r *Replicas) deskPath(op, name string) (p place, in bool, err error) {
	p = r.where(name)
	if err := p.check(op); err != nil {
		return p, false, err
	}
	return p, p.inside() && p.rel != "", nil
}

// writes reports whether flag opens a file for writing.
func writes(flag int) bool {
	return flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0
}

// OpenFile is os.OpenFile through the inner FS; a file of a desk's
// folder opened for writing is replicated (see Replicas).
func (r *Replicas) OpenFile(name string, flag int, perm fs.FileMode) (durable.File, error) {
	if !writes(flag) {
		return r.inner.OpenFile(name, flag, perm)
	}
	p, in, err := r.deskPath("open", name)
	if err != nil {
		return nil, err
	}
	if !in {
		f, err := r.inner.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return r.local(f), nil
	}
	if durable.IsTemp(filepath.Base(name)) {
		f, err := r.inner.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return p.d.temp(r.local(f), p, flag&os.O_TRUNC == 0), nil
	}
	return p.d.open(r, p, name, flag, perm)
}

// CreateTemp is os.CreateTemp through the inner FS; a temporary file in
// a desk's folder is not replicated, but its content is kept for the
// Rename or Link that publishes it.
func (r *Replicas) CreateTemp(dir, pattern string) (durable.File, error) {
	p := r.where(dir)
	if err := p.check("create " + pattern + " in"); err != nil {
		return nil, err
	}
	f, err := r.inner.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	lf := r.local(f)
	if !p.inside() {
		return lf, nil
	}
	p = r.where(f.Name())
	if !durable.IsTemp(filepath.Base(f.Name())) {
		return p.d.handle(p, lf, p.d.state(p.rel, 0, false), true), nil // an ordinary file, new and empty
	}
	return p.d.temp(lf, p, false), nil
}

// Rename is os.Rename through the inner FS. A temporary file renamed
// over a file of a desk's folder publishes OpReplace; another rename in
// the folder OpRename.
func (r *Replicas) Rename(oldpath, newpath string) error {
	from, to := r.where(oldpath), r.where(newpath)
	if !from.inside() && !to.inside() {
		return r.inner.Rename(oldpath, newpath)
	}
	if err := errors.Join(from.check("rename"), to.check("rename over")); err != nil {
		return err
	}
	if from.desk != to.desk || from.rel == "" || to.rel == "" {
		return fmt.Errorf("cluster: rename %s to %s: a move into, out of or between desk folders is not replicated", oldpath, newpath)
	}
	if _, err := os.Lstat(oldpath); err != nil {
		return r.inner.Rename(oldpath, newpath) // its own error, nothing to publish
	}
	d := to.d
	ctx := context.Background()
	switch {
	case durable.IsTemp(baseOf(to.rel)):
		return r.inner.Rename(oldpath, newpath) // one temporary file over another: not replicated
	case durable.IsTemp(baseOf(from.rel)):
		data, err := d.content(oldpath)
		if err != nil {
			return fmt.Errorf("cluster: desk %s: replace %s: %w", to.desk, to.rel, err)
		}
		if err := d.w.Replace(ctx, to.rel, data); err != nil {
			return err
		}
		if err := r.inner.Rename(oldpath, newpath); err != nil {
			return err
		}
		d.replaced(to.rel, newFileRepl(int64(len(data)), true))
		d.dropTemp(oldpath)
		return nil
	default:
		if err := d.w.Rename(ctx, from.rel, to.rel); err != nil {
			return err
		}
		if err := r.inner.Rename(oldpath, newpath); err != nil {
			return err
		}
		d.moved(from.rel, to.rel)
		return nil
	}
}

// baseOf is the base name of a path in a desk's folder.
func baseOf(rel string) string { return rel[strings.LastIndexByte(rel, '/')+1:] }

// Link is os.Link through the inner FS. A link that makes a new file in
// a desk's folder publishes OpLink with its content.
func (r *Replicas) Link(oldname, newname string) error {
	to := r.where(newname)
	if err := to.check("link"); err != nil {
		return err
	}
	if !to.inside() || to.rel == "" || durable.IsTemp(baseOf(to.rel)) {
		return r.inner.Link(oldname, newname)
	}
	if _, err := os.Lstat(newname); err == nil {
		return r.inner.Link(oldname, newname) // taken: its own error, nothing to publish
	}
	d := to.d
	data, err := d.content(oldname)
	if err != nil {
		return r.inner.Link(oldname, newname) // nothing to read: its own error
	}
	if err := r.inner.Link(oldname, newname); err != nil {
		return err
	}
	if err := d.w.Link(context.Background(), to.rel, data); err != nil {
		_ = r.inner.Remove(newname) // never replicated: undo
		return err
	}
	d.replaced(to.rel, newFileRepl(int64(len(data)), true))
	return nil
}

// Remove is os.Remove through the inner FS; in a desk's folder it
// publishes OpRemove (not for a temporary file).
func (r *Replicas) Remove(name string) error {
	p, in, err := r.deskPath("remove", name)
	if err != nil {
		return err
	}
	if !in {
		return r.inner.Remove(name)
	}
	if durable.IsTemp(baseOf(p.rel)) {
		p.d.dropTemp(name)
		return r.inner.Remove(name)
	}
	if _, err := os.Lstat(name); err != nil {
		return r.inner.Remove(name) // its own error, nothing to publish
	}
	if p.d.unlisted(p.rel) { // created here and never synced: the WAL never had it
		if err := r.inner.Remove(name); err != nil {
			return err
		}
		p.d.replaced(p.rel, nil)
		return nil
	}
	if err := p.d.w.Remove(context.Background(), p.rel); err != nil {
		return err
	}
	if err := r.inner.Remove(name); err != nil {
		return err
	}
	p.d.replaced(p.rel, nil)
	return nil
}

// Mkdir is os.Mkdir through the inner FS; in a desk's folder it
// publishes OpMkdir (the desk's folder itself is made by Rebuild).
func (r *Replicas) Mkdir(name string, perm fs.FileMode) error {
	p, in, err := r.deskPath("mkdir", name)
	if err != nil {
		return err
	}
	if !in {
		return r.inner.Mkdir(name, perm)
	}
	if err := r.inner.Mkdir(name, perm); err != nil {
		return err
	}
	if err := p.d.w.Mkdir(context.Background(), p.rel); err != nil {
		_ = r.inner.Remove(name) // never replicated: undo
		return err
	}
	return nil
}

// Chown is os.Lchown through the inner FS (an owner is not replicated).
func (r *Replicas) Chown(name string, uid, gid int) error {
	if err := r.where(name).check("chown"); err != nil {
		return err
	}
	return r.inner.Chown(name, uid, gid)
}

// local wraps f so that its fsync joins the Group's flushes.
func (r *Replicas) local(f durable.File) *localFile {
	return &localFile{File: f, group: r.group, dir: filepath.Dir(f.Name())}
}

// localFile is a file of the inner FS whose Sync goes through the Group
// when there is one (a Log over Replicas cannot see it).
type localFile struct {
	durable.File
	group *durable.Group
	dir   string
	dirty bool
	since uint64
}

// Write writes to the file, noting the Group's generation first.
func (l *localFile) Write(b []byte) (int, error) {
	l.note()
	return l.File.Write(b)
}

func (l *localFile) note() {
	if l.group != nil && !l.dirty {
		l.since, l.dirty = l.group.Generation(), true
	}
}

// Sync fsyncs the file, through the Group's shared flush if any.
func (l *localFile) Sync() error {
	if l.group == nil {
		return l.File.Sync()
	}
	l.note()
	err := l.group.SyncFile(l.File, l.dir, l.since)
	if err == nil {
		l.dirty = false
	}
	return err
}

// deskRepl is an attached desk: its writer and its files.
type deskRepl struct {
	name string
	w    *Writer
	bad  error // the writer cannot be this desk's

	mu    sync.Mutex
	gone  bool                 // detached
	files map[string]*fileRepl // by path in the folder
	temps map[string]*tempFile // by path
}

// err is why the desk's folder may not be written, or nil.
func (d *deskRepl) err() error {
	d.mu.Lock()
	gone := d.gone
	d.mu.Unlock()
	switch {
	case gone:
		return fmt.Errorf("the desk's writer is detached: %w", ErrFenced)
	case d.bad != nil:
		return d.bad
	case d.w == nil:
		return fmt.Errorf("no writer: %w", ErrFenced)
	}
	return d.w.Err()
}

func (d *deskRepl) detach() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.gone = true
	d.mu.Unlock()
}

// fileRepl is what is replicated of one file of the folder, shared by
// the files open on it.
type fileRepl struct {
	syncing sync.Mutex // one Sync at a time

	mu      sync.Mutex
	at      int64  // the file's last replicated offset
	pending []byte // the bytes written after it
	listed  bool   // the WAL has the file (else: created here, never published)
	stale   bool   // replaced, removed or moved: its handles may write no more
}

func newFileRepl(at int64, listed bool) *fileRepl { return &fileRepl{at: at, listed: listed} }

// state returns the file rel's state, made from a file of size bytes
// (listed: it existed) when there is none, or when the one there does
// not end where the file does (it was changed other than through
// Replicas: what follows goes on from the file as it is).
func (d *deskRepl) state(rel string, size int64, listed bool) *fileRepl {
	d.mu.Lock()
	defer d.mu.Unlock()
	fr := d.files[rel]
	if fr != nil {
		fr.mu.Lock()
		end := fr.at + int64(len(fr.pending))
		fr.mu.Unlock()
		if end != size {
			d.staleLocked(fr)
			fr = nil
		}
	}
	if fr == nil {
		fr = newFileRepl(size, listed)
		d.files[rel] = fr
	}
	return fr
}

// unlisted reports whether the file rel was created here and never
// published.
func (d *deskRepl) unlisted(rel string) bool {
	d.mu.Lock()
	fr := d.files[rel]
	d.mu.Unlock()
	if fr == nil {
		return false
	}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return !fr.listed
}

// replaced makes fr (nil: none) rel's state; the old one's handles are
// stale.
func (d *deskRepl) replaced(rel string, fr *fileRepl) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.staleLocked(d.files[rel])
	if fr == nil {
		delete(d.files, rel)
	} else {
		d.files[rel] = fr
	}
}

func (d *deskRepl) staleLocked(fr *fileRepl) {
	if fr != nil {
		fr.mu.Lock()
		fr.stale = true
		fr.mu.Unlock()
	}
}

// moved forgets the states at from or below it, and at to or below it:
// the next open reads them anew.
func (d *deskRepl) moved(from, to string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for rel, fr := range d.files {
		if rel == from || rel == to || strings.HasPrefix(rel, from+"/") || strings.HasPrefix(rel, to+"/") {
			d.staleLocked(fr)
			delete(d.files, rel)
		}
	}
}

// open opens the desk file name (at p) for writing.
func (d *deskRepl) open(r *Replicas, p place, name string, flag int, perm fs.FileMode) (durable.File, error) {
	_, statErr := os.Lstat(name)
	existed := statErr == nil
	f, err := r.inner.OpenFile(name, flag&^os.O_TRUNC, perm) // cut below, once the cut is replicated
	if err != nil {
		return nil, err
	}
	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	fr := d.state(p.rel, size, existed)
	if flag&os.O_TRUNC != 0 {
		if err := d.truncate(p.rel, fr, f, 0); err != nil {
			_ = f.Close()
			return nil, err
		}
		size = 0
	}
	return d.handle(p, r.local(f), fr, flag&os.O_APPEND != 0 || size == 0), nil
}

// truncate cuts the file rel (its state fr, open as f) to size: below its
// replicated offset, OpTruncate is published first.
func (d *deskRepl) truncate(rel string, fr *fileRepl, f durable.File, size int64) error {
	fr.mu.Lock()
	if size >= fr.at {
		k := size - fr.at
		if k <= int64(len(fr.pending)) {
			fr.pending = fr.pending[:k:k] // a later write must not reuse the bytes a Sync may be publishing
		} else {
			fr.pending = append(fr.pending, make([]byte, k-int64(len(fr.pending)))...)
		}
		fr.mu.Unlock()
		return f.Truncate(size)
	}
	fr.mu.Unlock()
	if err := d.w.Truncate(context.Background(), rel, size); err != nil {
		return err
	}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.at, fr.pending = size, nil
	return f.Truncate(size)
}

// handle returns the replicated handle of a desk file.
func (d *deskRepl) handle(p place, lf *localFile, fr *fileRepl, appends bool) *deskFile {
	f := &deskFile{p: p, fr: fr, appends: appends}
	f.guarded = guarded{localFile: lf, check: f.check}
	return f
}

// guarded is a file whose Chmod and Chown are refused when check
// refuses them (the folder may not be written).
type guarded struct {
	*localFile
	check func(op string) error
}

// Chmod is refused when the folder may not be written.
func (g guarded) Chmod(mode fs.FileMode) error {
	if err := g.check("chmod"); err != nil {
		return err
	}
	return g.localFile.Chmod(mode)
}

// Chown is refused when the folder may not be written.
func (g guarded) Chown(uid, gid int) error {
	if err := g.check("chown"); err != nil {
		return err
	}
	return g.localFile.Chown(uid, gid)
}

// deskFile is an open file of a desk's folder, replicated at its Sync.
type deskFile struct {
	guarded
	p  place
	fr *fileRepl
	// appends is set when every write goes to the end of the file:
	// opened with O_APPEND, or empty and written from its start.
	appends bool
	pos     int64 // where the next write goes, when not opened O_APPEND
}

// check refuses op on the file when the folder may not be written, or
// the file was replaced under it. fr.mu must not be held.
func (f *deskFile) check(op string) error {
	if err := f.p.check(op); err != nil {
		return err
	}
	f.fr.mu.Lock()
	stale := f.fr.stale
	f.fr.mu.Unlock()
	if stale {
		return fmt.Errorf("cluster: desk %s: %s %s: the file was replaced, removed or moved since it was opened", f.p.desk, op, f.p.rel)
	}
	return nil
}

// Write writes b at the end of the file; it is replicated at Sync.
func (f *deskFile) Write(b []byte) (int, error) {
	if err := f.check("write"); err != nil {
		return 0, err
	}
	f.fr.mu.Lock()
	defer f.fr.mu.Unlock()
	end := f.fr.at + int64(len(f.fr.pending))
	if !f.appends && f.pos != end {
		return 0, fmt.Errorf("cluster: desk %s: write %s at %d: only appends are replicated (the file ends at %d)", f.p.desk, f.p.rel, f.pos, end)
	}
	n, err := f.localFile.Write(b)
	f.fr.pending = append(f.fr.pending, b[:n]...)
	f.pos = end + int64(n)
	return n, err
}

// Sync makes the bytes written durable: the local fsync and their
// publish in parallel. A failed publish cuts the file back to its last
// replicated offset.
func (f *deskFile) Sync() error {
	if err := f.check("sync"); err != nil {
		return err
	}
	fr := f.fr
	fr.syncing.Lock()
	defer fr.syncing.Unlock()
	fr.mu.Lock()
	at, data, listed := fr.at, fr.pending, fr.listed
	fr.mu.Unlock()
	if len(data) == 0 && listed {
		return f.localFile.Sync()
	}
	local := make(chan error, 1)
	go func() { local <- f.localFile.Sync() }()
	perr := f.p.d.w.Append(context.Background(), f.p.rel, at, data)
	lerr := <-local
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if perr != nil {
		cerr := f.File.Truncate(fr.at)
		if cerr == nil {
			cerr = f.File.Sync()
		}
		fr.pending = nil
		f.pos = fr.at
		if cerr != nil {
			return errors.Join(perr, fmt.Errorf("cluster: desk %s: cut %s back to %d, its last replicated offset: %w", f.p.desk, f.p.rel, fr.at, cerr))
		}
		return perr
	}
	fr.at += int64(len(data))
	fr.pending = fr.pending[min(len(data), len(fr.pending)):]
	fr.listed = true
	return lerr
}

// Truncate cuts the file to size: below its replicated offset, OpTruncate
// is published first.
func (f *deskFile) Truncate(size int64) error {
	if err := f.check("truncate"); err != nil {
		return err
	}
	if err := f.p.d.truncate(f.p.rel, f.fr, f.File, size); err != nil {
		return err
	}
	f.pos = size
	return nil
}

// tempFile is a temporary file of a desk's folder: not replicated, its
// content kept for the Rename or Link that publishes it.
type tempFile struct {
	guarded
	p place

	mu      sync.Mutex
	data    []byte
	unknown bool // opened with content not written through Replicas
}

// temp registers the temporary file lf (at p); unknown: it may hold
// bytes not written through Replicas.
func (d *deskRepl) temp(lf *localFile, p place, unknown bool) *tempFile {
	t := &tempFile{guarded: guarded{localFile: lf, check: p.check}, p: p, unknown: unknown}
	d.mu.Lock()
	d.temps[absClean(lf.Name())] = t
	d.mu.Unlock()
	return t
}

// dropTemp forgets the temporary file name.
func (d *deskRepl) dropTemp(name string) {
	d.mu.Lock()
	delete(d.temps, absClean(name))
	d.mu.Unlock()
}

// content is the content of the file at name: a temporary file's as
// written through Replicas, any other file's as read.
func (d *deskRepl) content(name string) ([]byte, error) {
	d.mu.Lock()
	t := d.temps[absClean(name)]
	d.mu.Unlock()
	if t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.unknown {
			return t.data, nil
		}
	}
	return os.ReadFile(name)
}

// Write writes b to the temporary file, keeping a copy.
func (t *tempFile) Write(b []byte) (int, error) {
	if err := t.p.check("write"); err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.localFile.Write(b)
	t.data = append(t.data, b[:n]...)
	return n, err
}

// Sync fsyncs the temporary file (not replicated).
func (t *tempFile) Sync() error {
	if err := t.p.check("sync"); err != nil {
		return err
	}
	return t.localFile.Sync()
}

// Truncate cuts the temporary file and its copy.
func (t *tempFile) Truncate(size int64) error {
	if err := t.p.check("truncate"); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if size <= int64(len(t.data)) {
		t.data = t.data[:size:size]
	} else {
		t.unknown = true
	}
	return t.localFile.Truncate(size)
}
