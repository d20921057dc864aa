package memory

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/deskd/deskd/memory/durable"
)

// Names of the files and folders inside a desk folder.
const (
	MemoryFile   = "Memory.md" // lasting lessons
	NotesDir     = "notes"     // notes/YYYY-MM-DD.md
	SummariesDir = "summaries" // summaries/YYYY-MM-DD.md
	SessionsDir  = "sessions"  // sessions/<id>.jsonl
	SkillsDir    = "skills"    // skills/<name>/SKILL.md
	HistoryDir   = "history"   // earlier versions of replaced files
)

const (
	filePerm = 0o640
	dirPerm  = 0o750
)

// HistoryStampLayout names the files kept under history/ (and deskd's
// config snapshots): the UTC instant of the replacement, to the
// nanosecond, as a time layout. ParseHistoryName reads such a name back.
const HistoryStampLayout = "20060102T150405.000000000Z"

// Folder is the folder of one desk, <state_dir>/desks/<desk>. It is safe for
// concurrent use by the goroutines of one process; a Folder must not be
// copied after OpenFolder.
type Folder struct {
	// Now is the clock. Required: OpenFolder refuses a nil one. It names
	// the files kept under history/ and stamps session records that have
	// no time of their own.
	Now func() time.Time
	// FS is the file layer every write of the folder goes through; nil is
	// the operating system's. Tests set a fault-injecting one
	// (memory/durable/faultfs) before the first write.
	FS durable.FS

	dir  string
	desk string
	mu   sync.Mutex // serialises replacements and note appends

	// prompts keeps Memory.md and the skills as last read (promptCache).
	prompts promptCache
}

// OpenFolder opens the folder of desk desk at dir (= <state_dir>/desks/<desk>),
// creating it as needed. now is the clock (see Folder.Now) and must not be
// nil.
//
// Its notes/, summaries/, sessions/, skills/ and history/ folders are
// created by the first write into each (and fsynced into the desk folder
// then), not here: an idle desk's start makes none of them, and every
// reader takes a missing one for an empty one.
func OpenFolder(dir, desk string, now func() time.Time) (*Folder, error) {
	if dir == "" {
		return nil, errors.New("open desk folder: empty path")
	}
	if now == nil {
		return nil, fmt.Errorf("open desk folder %s: nil clock", dir)
	}
	// durable.MkdirAll fsyncs the parent of each folder it creates, so
	// that a folder found whole needs no fsync: a desk's restart makes
	// none here.
	if err := durable.MkdirAll(nil, dir, dirPerm); err != nil {
		return nil, fmt.Errorf("open desk folder %s: %w", dir, err)
	}
	return &Folder{Now: now, dir: dir, desk: desk}, nil
}

// OpenFolderLazily is OpenFolder without creating dir: a missing folder
// reads as an empty one, and the first write into it creates it (durably,
// fsynced into its parent, through FS), so that an idle desk's start
// creates and fsyncs nothing. A path that is there and is not a folder is
// refused.
func OpenFolderLazily(dir, desk string, now func() time.Time) (*Folder, error) {
	if dir == "" {
		return nil, errors.New("open desk folder: empty path")
	}
	if now == nil {
		return nil, fmt.Errorf("open desk folder %s: nil clock", dir)
	}
	switch fi, err := os.Stat(dir); {
	case err == nil && !fi.IsDir():
		return nil, fmt.Errorf("open desk folder: %w", &fs.PathError{Op: "open", Path: dir, Err: syscall.ENOTDIR})
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open desk folder %s: %w", dir, err)
	}
	return &Folder{Now: now, dir: dir, desk: desk}, nil
}

// Dir returns the folder's path.
func (f *Folder) Dir() string { return f.dir }

// Desk returns the desk's name.
func (f *Folder) Desk() string { return f.desk }

// Path returns filepath.Join(f.Dir(), rel).
func (f *Folder) Path(rel string) string { return filepath.Join(f.dir, rel) }

// stamp returns the name stem of a history file written now.
func (f *Folder) stamp() string { return f.Now().UTC().Format(HistoryStampLayout) }

// RemoveStaleTemps removes the temporary files that an interrupted atomic
// write (a crash, kill -9) left anywhere in the folder, and returns their
// paths. Call it only while nothing else writes to the folder, e.g. at
// startup under the state-dir lock.
func (f *Folder) RemoveStaleTemps() ([]string, error) {
	var removed []string
	err := filepath.WalkDir(f.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == f.dir && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir // a folder not made yet holds nothing
			}
			return err
		}
		if !d.Type().IsRegular() || !isTempName(d.Name()) {
			return nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removed = append(removed, path)
		return nil
	})
	if err != nil {
		return removed, fmt.Errorf("remove stale temp files in %s: %w", f.dir, err)
	}
	return removed, nil
}

// ReadMemory returns the text of Memory.md, or "" and nil if there is none.
//
// Every model call reads it: it is read from disk again only when deskd
// wrote it since (WriteMemory, ReplaceMemory, RestoreMemory) or a stat
// of it shows it changed (an operator's edit), and anything but a
// regular file of at most MaxPromptFile bytes (a FIFO, say) is refused at
// once, never waited on.
func (f *Folder) ReadMemory() (string, error) {
	gen := f.prompts.gen.Load()
	if text, ok := getCached(&f.prompts, &f.prompts.memory, gen); ok {
		return text, nil
	}
	path := f.Path(MemoryFile)
	l, vouches := f.prompts.look(path)
	if l.missing {
		setCached(&f.prompts, &f.prompts.memory, gen, []look{l}, "")
		return "", nil
	}
	f.prompts.reads.Add(1)
	data, err := durable.ReadRegular(path, MaxPromptFile, durable.Follow)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	var refused *durable.RefusedError
	if errors.As(err, &refused) {
		return "", fmt.Errorf("read memory: %w", err) // it names the file
	}
	if err != nil {
		return "", fmt.Errorf("read memory %s: %w", path, err)
	}
	text := string(data)
	if vouches {
		setCached(&f.prompts, &f.prompts.memory, gen, []look{l}, text)
	}
	return text, nil
}

// PromptStats returns what ReadMemory and Skills did so far: the files
// they read, the listings of the skills folder, the stats that checked
// for a change, and the calls answered from what they read before.
func (f *Folder) PromptStats() PromptStats { return f.prompts.stats() }

// HoldPromptFiles makes ReadMemory and Skills check Memory.md and the
// skills for an operator's change once until release is called (at the
// first call of each), however many prompts are built meanwhile: a
// turn holds them for its requests. deskd's own writes (the Folder's, and
// PromptFilesChanged) are read at once still.
func (f *Folder) HoldPromptFiles() (release func()) { return f.prompts.hold() }

// PromptFilesChanged tells the folder that Memory.md or a skill changed
// through another way than its own writes (the curator's move of a
// skill's folder to the archive and back): the next ReadMemory and Skills
// read them again. The Folder's writes call it themselves.
func (f *Folder) PromptFilesChanged() { f.prompts.changed() }

// WriteMemory replaces Memory.md with text. The current Memory.md, if any,
// is first copied to history/memory/<UTC now as 20060102T150405.000000000Z>.md
// (atomically; a name already taken gets a -2, -3, ... suffix), whose path
// is returned; historyPath is "" if there was no previous file. When the
// newest file there already holds exactly the current Memory.md (a crash
// came between the copy and the rename), that file is the copy and its
// path is returned. Memory.md keeps its permissions.
func (f *Folder) WriteMemory(text string) (historyPath string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.prompts.changed()
	hist, err := f.swapMemoryLocked(text)
	if err != nil {
		return hist, fmt.Errorf("write memory: %w", err)
	}
	return hist, nil
}

// swapMemoryLocked keeps the current Memory.md in history and writes text
// in its place, with its permissions; it returns the kept copy's path.
// f.mu is held.
func (f *Folder) swapMemoryLocked(text string) (historyPath string, err error) {
	path := f.Path(MemoryFile)
	hist, perm, err := f.keepOld(path, filepath.Join(HistoryDir, "memory"), ".md")
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if err := f.writeAtomic(path, []byte(text), perm); err != nil {
		return hist, fmt.Errorf("%s: %w", path, err)
	}
	return hist, nil
}

// readIfThere returns the bytes of the file at path; ok is false, with no
// error, when there is no such file.
func readIfThere(path string) (b []byte, ok bool, err error) {
	b, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// keepOld copies the file at path, if there is one, to a new file in
// histRel named after the clock (<stamp><ext>), and returns that file's path ("" if there
// was nothing to keep) and the permissions a replacement should get.
// f.mu must be held.
//
// Keeping is idempotent across a crash: a crash after the copy but before
// the caller's rename leaves the old text both at path and as the newest
// file of histRel, and the retry reuses that file (and returns its path)
// instead of keeping a second identical copy. Only the newest file is
// compared, so that history still reads in order: text that comes back
// after other versions (A, B, then A again) is kept again.
func (f *Folder) keepOld(path, histRel, ext string) (string, os.FileMode, error) {
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", filePerm, nil
	}
	if err != nil {
		return "", 0, err
	}
	perm := os.FileMode(filePerm)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	if kept, same, err := newestKeptHolds(f.Path(histRel), ext, old); err != nil {
		return "", 0, fmt.Errorf("keep previous version: %w", err)
	} else if same {
		return kept, perm, nil
	}
	hist, err := f.writeFileKeep(f.Path(histRel), f.stamp(), ext, old, perm)
	if err != nil {
		return "", 0, fmt.Errorf("keep previous version: %w", err)
	}
	return hist, perm, nil
}

// newestKeptHolds returns the newest file in history folder dir and whether
// it holds exactly data. Files are named <stamp><ext> or <stamp>-<n><ext>
// (see writeFileKeep) and ordered by stamp, then n; temporary files and
// other names are ignored. A missing or empty dir has no newest file.
func newestKeptHolds(dir, ext string, data []byte) (path string, same bool, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var newest, newestStem string
	newestN := 0
	for _, e := range entries {
		name := e.Name()
		base, ok := strings.CutSuffix(name, ext)
		if !ok || base == "" || !e.Type().IsRegular() || isTempName(name) {
			continue
		}
		stem, n := base, 1
		if i := strings.LastIndexByte(base, '-'); i > 0 {
			if k, err := strconv.Atoi(base[i+1:]); err == nil && k > 1 {
				stem, n = base[:i], k
			}
		}
		if newest == "" || stem > newestStem || stem == newestStem && n > newestN {
			newest, newestStem, newestN = name, stem, n
		}
	}
	if newest == "" {
		return "", false, nil
	}
	path = filepath.Join(dir, newest)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false, err
	}
	return path, bytes.Equal(b, data), nil
}

// listDates returns the dates of the files YYYY-MM-DD.md in dir, sorted
// ascending; other names are ignored. A missing dir has no dates.
func listDates(dir string) ([]Date, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var dates []Date
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		stem, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok {
			continue
		}
		d, err := ParseDate(stem)
		if err != nil || d.String() != stem {
			continue
		}
		dates = append(dates, d)
	}
	sort.Slice(dates, func(i, j int) bool { return dates[i].Before(dates[j]) })
	return dates, nil
}

// dateFile returns the path of sub/YYYY-MM-DD.md, refusing dates that do
// not name a real calendar day.
func (f *Folder) dateFile(sub string, d Date) (string, error) {
	if !d.Valid() {
		return "", fmt.Errorf("invalid date %04d-%02d-%02d", d.Year, int(d.Month), d.Day)
	}
	return f.Path(filepath.Join(sub, d.String()+".md")), nil
}
