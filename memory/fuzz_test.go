package memory_test

// Fuzz targets of the memory package's readers, through a Folder: a
// session file (ReadSession, OpenSession) and a skill's SKILL.md (Skills,
// ReadSkill) of fuzzed bytes. The seed corpora are in
// testdata/fuzz/<FuzzName>/; `go test` runs them.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
)

func fzFolder(t *testing.T) *memory.Folder {
	t.Helper()
	now := time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC)
	f, err := memory.OpenFolder(filepath.Join(t.TempDir(), "main"), "main", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// fzFromLines fails unless every record is what some line of data (or the
// end of a line, for a record glued onto a damaged one) decodes to, one
// record a line, in the order of the lines.
func fzFromLines(t *testing.T, what string, data []byte, records []memory.Record) {
	t.Helper()
	lines := bytes.Split(data, []byte("\n"))
	i := 0
	for n, r := range records {
		for ; i < len(lines); i++ {
			if fzLineHolds(lines[i], r) {
				break
			}
		}
		if i == len(lines) {
			t.Fatalf("%s: record %d, %+v, is not in the file, or not in order:\n%q", what, n, r, data)
		}
		i++
	}
}

// fzLineHolds reports whether line, or a tail of it from a '{', is the
// JSON of r.
func fzLineHolds(line []byte, r memory.Record) bool {
	for off := 0; off < len(line); {
		var got memory.Record
		if json.Unmarshal(line[off:], &got) == nil && reflect.DeepEqual(got, r) {
			return true
		}
		next := bytes.IndexByte(line[off+1:], '{')
		if next < 0 {
			return false
		}
		off += next + 1
	}
	return false
}

// FuzzSessionFile: on a session file of any bytes, ReadSession never
// panics and changes nothing; its records come from the file's lines, in
// order. OpenSession returns the same records and leaves a clean file: a
// reopen finds no torn tail and the same records, the torn bytes it cut
// are saved, and a record appended after it is read back last, after the
// same records (no damaged tail glued to it).
func FuzzSessionFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		folder := fzFolder(t)
		path := folder.SessionPath("s1")
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil { // made by a session's first write
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o640); err != nil {
			t.Fatal(err)
		}
		read, err := folder.ReadSession("s1")
		if err != nil {
			t.Fatalf("ReadSession: %v", err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
			t.Fatalf("ReadSession changed the file:\nbefore %q\nafter  %q", data, after)
		}
		fzFromLines(t, "ReadSession", data, read)

		log, opened, torn, err := folder.OpenSession("s1")
		if err != nil {
			t.Fatalf("OpenSession: %v", err)
		}
		if err := log.Close(); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(opened, read) {
			t.Fatalf("OpenSession's records differ from ReadSession's:\nopen %+v\nread %+v", opened, read)
		}
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if torn != nil {
			if torn.Path != path || torn.Offset < 0 || torn.Offset > int64(len(data)) || torn.Bytes <= 0 ||
				torn.Offset+int64(torn.Bytes) > int64(len(data)) {
				t.Fatalf("torn tail %+v of a %d-byte file", torn, len(data))
			}
			saved, err := os.ReadFile(torn.SavedTo)
			if want := data[torn.Offset : torn.Offset+int64(torn.Bytes)]; err != nil || !bytes.Equal(saved, want) {
				t.Fatalf("the torn tail was saved as %q (%v), want %q", saved, err, want)
			}
			if !bytes.HasPrefix(after, data[:torn.Offset]) || int64(len(after)) > torn.Offset+1 {
				t.Fatalf("after cutting the torn tail %+v, the file is %q; it was %q", torn, after, data)
			}
		} else if !bytes.Equal(after, data) && !bytes.Equal(after, append(bytes.Clone(data), '\n')) {
			t.Fatalf("OpenSession changed the file without a torn tail:\nbefore %q\nafter  %q", data, after)
		}

		log, again, torn2, err := folder.OpenSession("s1")
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		if torn2 != nil {
			t.Fatalf("the reopen found a torn tail again: %+v (the first open found %+v)\nfile %q\nwas  %q", torn2, torn, after, data)
		}
		if !reflect.DeepEqual(again, opened) {
			t.Fatalf("the reopen's records differ:\nfirst  %+v\nsecond %+v", opened, again)
		}
		probe := memory.Record{Type: memory.RecordMessage, Role: "user", Text: "probe", Trigger: "fuzz-probe", At: folder.Now()}
		if err := log.Append(probe); err != nil {
			t.Fatalf("Append: %v", err)
		}
		if err := log.Close(); err != nil {
			t.Fatal(err)
		}
		final, err := folder.ReadSession("s1")
		if err != nil {
			t.Fatal(err)
		}
		if len(final) != len(opened)+1 || len(opened) > 0 && !reflect.DeepEqual(final[:len(opened)], opened) || !reflect.DeepEqual(final[len(opened)], probe) {
			b, _ := os.ReadFile(path)
			t.Fatalf("after an Append, the records are not the old ones and the appended one:\n got %+v\nwant %+v then %+v\nfile %q", final, opened, probe, b)
		}
	})
}

// FuzzSkillFile: a SKILL.md of any bytes never makes Skills panic and
// gives exactly one skill, with its size and hash; a front matter it
// cannot read leaves the folder name and a problem; one it reads gives a
// name and description that survive being written back as quoted YAML
// scalars. ReadSkill returns the bytes unchanged.
func FuzzSkillFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		folder := fzFolder(t)
		path := folder.Path(filepath.Join(memory.SkillsDir, "s", memory.SkillFile))
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o640); err != nil {
			t.Fatal(err)
		}
		skills, err := folder.Skills()
		if err != nil {
			t.Fatalf("Skills: %v", err)
		}
		if len(skills) != 1 {
			t.Fatalf("Skills = %+v, want one", skills)
		}
		s := skills[0]
		sum := sha256.Sum256(data)
		if s.Dir != "s" || s.Path != path || s.Size != int64(len(data)) || s.Hash != hex.EncodeToString(sum[:]) {
			t.Fatalf("skill %+v: wrong folder, path, size or hash", s)
		}
		if content, err := folder.ReadSkill("s"); err != nil || content != string(data) {
			t.Fatalf("ReadSkill = %q, %v; want the file", content, err)
		}
		if s.Problem != "" {
			if s.Name != "s" || s.Description != "" || s.Pinned {
				t.Fatalf("a skill with a bad front matter (%s) has name %q, description %q, pinned %v", s.Problem, s.Name, s.Description, s.Pinned)
			}
			return
		}
		if s.Name == "" {
			t.Fatalf("a skill has an empty name: %+v", s)
		}
		// written back, quoted, the front matter reads the same
		pinned := ""
		if s.Pinned {
			pinned = "pinned: true\n"
		}
		back := "---\nname: " + strconv.Quote(s.Name) + "\ndescription: " + strconv.Quote(s.Description) + "\n" + pinned + "---\nbody\n"
		if err := os.RemoveAll(filepath.Dir(path)); err != nil {
			t.Fatal(err)
		}
		if _, err := folder.WriteSkill("t", back); err != nil {
			t.Fatal(err)
		}
		skills, err = folder.Skills()
		if err != nil || len(skills) != 1 {
			t.Fatalf("Skills = %+v, %v", skills, err)
		}
		if r := skills[0]; r.Problem != "" || r.Name != s.Name || r.Description != s.Description || r.Pinned != s.Pinned {
			t.Fatalf("written back as\n%s\nthe skill reads %+v, want name %q, description %q, pinned %v", back, r, s.Name, s.Description, s.Pinned)
		}
	})
}
