package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The kept versions of Memory.md by the names an operator gives them: a
// version's id (its file name without .md), or any prefix of one that no
// other id shares. A prefix may be written as a time, 2026-03-02T10:00
// for 20260302T1000: its dashes and colons are dropped. Errors meant for
// an operator name the version, never a file's path.

// ErrUnknownVersion is the error of a name that names no kept version.
var ErrUnknownVersion = errors.New("no such version of Memory.md")

// ErrBadVersionName is the error of a name that cannot name a version:
// empty, or with a slash or a leading dot.
var ErrBadVersionName = errors.New("not a version id")

// ErrAmbiguousVersion is the error of a prefix that several kept versions
// share.
var ErrAmbiguousVersion = errors.New("more than one version of Memory.md matches")

// MinShortID is the fewest characters ShortIDs gives an id: its date, hour
// and minute (20260302T1000).
const MinShortID = len("20060102T1504")

// VersionError is the error of a version name that names no kept version
// or several (Unwrap: ErrUnknownVersion or ErrAmbiguousVersion).
type VersionError struct {
	// Name is the name given.
	Name string
	// Candidates are the first ids that share the prefix (at most 5), and
	// More how many others do.
	Candidates []string
	More       int
	kind       error
}

func (e *VersionError) Error() string {
	if e.kind == ErrUnknownVersion {
		return fmt.Sprintf("version %q of Memory.md: there is none (deskd memory DESK --history lists them)", e.Name)
	}
	msg := fmt.Sprintf("version %q of Memory.md: it is a prefix of %s", e.Name, strings.Join(e.Candidates, ", "))
	if e.More > 0 {
		msg += fmt.Sprintf(" and %d more", e.More)
	}
	return msg + "; give more of the id"
}

// Unwrap returns ErrUnknownVersion or ErrAmbiguousVersion.
func (e *VersionError) Unwrap() error { return e.kind }

// ResolveMemoryVersion returns the kept version that name names: the one
// whose id it is, else the one whose id it is a unique prefix of. A name
// that names none or several is a *VersionError.
func (f *Folder) ResolveMemoryVersion(name string) (MemoryVersion, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return MemoryVersion{}, fmt.Errorf("version %q of Memory.md: %w", name, ErrBadVersionName)
	}
	path := filepath.Join(f.Path(HistoryDir), "memory", name+".md")
	if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() && !isTempName(info.Name()) {
		at, seq, _ := ParseHistoryName(info.Name(), ".md")
		return MemoryVersion{ID: name, Path: path, Size: info.Size(), At: at, Seq: seq}, nil // a whole id: no listing
	}
	versions, err := f.MemoryHistory()
	if err != nil {
		return MemoryVersion{}, fmt.Errorf("find version %s of Memory.md: %w", name, withoutPath(err))
	}
	matches := ByID(versions, normalVersion(name), MemoryVersion.id)
	switch len(matches) {
	case 0:
		return MemoryVersion{}, &VersionError{Name: name, kind: ErrUnknownVersion}
	case 1:
		return matches[0], nil
	}
	e := &VersionError{Name: name, kind: ErrAmbiguousVersion}
	e.Candidates, e.More = Candidates(matches, MemoryVersion.id)
	return MemoryVersion{}, e
}

func (v MemoryVersion) id() string { return v.ID }

// normalVersion drops the dashes and colons of a name written as a time
// (2026-03-02T10:00): the part before its Z, so that a -2 after it stays.
func normalVersion(name string) string {
	head, tail, found := strings.Cut(name, "Z")
	head = strings.NewReplacer("-", "", ":", "").Replace(head)
	if found {
		return head + "Z" + tail
	}
	return head
}

// ReadMemoryVersion returns the text of the kept version that name names
// (see ResolveMemoryVersion).
func (f *Folder) ReadMemoryVersion(name string) (string, error) {
	v, err := f.ResolveMemoryVersion(name)
	if err != nil {
		return "", err
	}
	b, err := f.readVersion(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (f *Folder) readVersion(v MemoryVersion) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(f.Path(HistoryDir), "memory", v.ID+".md"))
	if err != nil {
		return nil, fmt.Errorf("read version %s of Memory.md: %w", v.ID, withoutPath(err))
	}
	return b, nil
}

// RestoreMemory makes the kept version that name names the current
// Memory.md (see ResolveMemoryVersion), and returns it and the id of the
// version the replaced text is now kept as ("" when there was no
// Memory.md): the current text is kept first, so a restore can itself be
// undone.
func (f *Folder) RestoreMemory(name string) (restored MemoryVersion, keptAs string, err error) {
	v, err := f.ResolveMemoryVersion(name) // its errors name the version and Memory.md
	if err != nil {
		return MemoryVersion{}, "", err
	}
	text, err := f.readVersion(v)
	if err != nil {
		return MemoryVersion{}, "", err
	}
	hist, err := f.WriteMemory(string(text))
	if err != nil {
		return MemoryVersion{}, "", fmt.Errorf("restore version %s of Memory.md: %w", v.ID, withoutPath(err))
	}
	if hist != "" {
		keptAs = strings.TrimSuffix(filepath.Base(hist), ".md")
	}
	return v, keptAs, nil
}

// ShortIDs returns, for each version, the shortest prefix of its id that
// no other version's id shares, and at least MinShortID characters long
// (the whole id when it is shorter).
func ShortIDs(versions []MemoryVersion) []string {
	out := make([]string, len(versions))
	for i, v := range versions {
		n := min(MinShortID, len(v.ID))
		for _, w := range versions {
			if w.ID != v.ID {
				n = max(n, commonPrefix(v.ID, w.ID)+1)
			}
		}
		out[i] = v.ID[:min(n, len(v.ID))]
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// withoutPath returns err with the paths of its *fs.PathError and
// *os.LinkError taken out, keeping what failed and why (and errors.Is of
// the cause): what an operator reads names the version, not the file.
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &pathless{op: pe.Op, err: pe.Err}
	}
	return err
}

type pathless struct {
	op  string
	err error
}

func (e *pathless) Error() string { return e.op + ": " + e.err.Error() }
func (e *pathless) Unwrap() error { return e.err }
