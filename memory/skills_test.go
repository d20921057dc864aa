package memory_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
)

func TestSkills(t *testing.T) {
	f := newFolder(t)
	files := map[string]string{ // skill folder -> SKILL.md
		"momentum":  "---\nname: momentum\ndescription: Ride strong opening moves.\n---\n# Momentum\nbody\n",
		"hedge":     "---\r\nname: \"hedging\"\r\ndescription: 'Hedge when VIX > 20, don''t wait'\r\npinned: true\r\n---\r\nbody\r\n",
		"pinned-no": "---\nname: b-unpinned\ndescription: plain # a comment\npinned: false\n---\n",
		"folded":    "---\nname: folded\ndescription: >\n  Spans two\n  lines.\nmetadata:\n  author: desk\npinned: yes\n---\n",
		"continued": "---\nname: continued\ndescription: starts here\n  and goes on\n---\n",
		"no-front":  "# Just a heading\nno front matter\n",
		"unclosed":  "---\nname: unclosed\ndescription: never closed\n",
		"bad-quote": "---\nname: \"bad\ndescription: x\n---\n",
		"no-name":   "---\ndescription: the folder names it\n---\n",
	}
	for dir, content := range files {
		writeFile(t, f.Path(filepath.Join("skills", dir, "SKILL.md")), content)
	}
	// Skipped: no SKILL.md, a dot folder, a plain file.
	if err := os.MkdirAll(f.Path("skills/empty"), 0o750); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.Path("skills/.trash/SKILL.md"), "---\nname: trash\n---\n")
	writeFile(t, f.Path("skills/README.md"), "not a skill")

	skills, err := f.Skills()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name, dir, desc string
		pinned, problem bool
	}{
		{"b-unpinned", "pinned-no", "plain", false, false},
		{"bad-quote", "bad-quote", "", false, true},
		{"continued", "continued", "starts here and goes on", false, false},
		{"folded", "folded", "Spans two lines.", true, false},
		{"hedging", "hedge", "Hedge when VIX > 20, don't wait", true, false},
		{"momentum", "momentum", "Ride strong opening moves.", false, false},
		{"no-front", "no-front", "", false, true},
		{"no-name", "no-name", "the folder names it", false, false},
		{"unclosed", "unclosed", "", false, true},
	}
	if len(skills) != len(want) {
		for _, s := range skills {
			t.Logf("%+v", s)
		}
		t.Fatalf("got %d skills, want %d", len(skills), len(want))
	}
	for i, w := range want {
		s := skills[i]
		if s.Name != w.name || s.Dir != w.dir || s.Description != w.desc || s.Pinned != w.pinned || (s.Problem != "") != w.problem {
			t.Errorf("skill %d = %+v, want %+v", i, s, w)
		}
		content := files[w.dir]
		sum := sha256.Sum256([]byte(content))
		if s.Hash != hex.EncodeToString(sum[:]) || s.Size != int64(len(content)) {
			t.Errorf("skill %s: hash %s size %d", s.Name, s.Hash, s.Size)
		}
		if s.Path != f.Path(filepath.Join("skills", w.dir, "SKILL.md")) || s.ModTime.IsZero() {
			t.Errorf("skill %s: path %s modtime %v", s.Name, s.Path, s.ModTime)
		}
	}
}

func TestSkillsNone(t *testing.T) {
	f := newFolder(t)
	skills, err := f.Skills()
	if err != nil || len(skills) != 0 {
		t.Errorf("Skills of an empty folder = %v, %v", skills, err)
	}
	if err := os.RemoveAll(f.Path("skills")); err != nil {
		t.Fatal(err)
	}
	skills, err = f.Skills()
	if err != nil || len(skills) != 0 {
		t.Errorf("Skills without skills/ = %v, %v", skills, err)
	}
}

func TestWriteSkillRefusesAPinnedSkill(t *testing.T) {
	f := newFolder(t)
	pinned := "---\nname: hedging\ndescription: Hedge when VIX > 20\npinned: true\n---\n\nThe operator's rule.\n"
	writeFile(t, f.Path("skills/hedge/SKILL.md"), pinned)
	writeFile(t, f.Path("skills/plain/SKILL.md"), "---\nname: plain\ndescription: x\n---\n")
	replace := "---\nname: hedge\ndescription: never hedge\n---\n\nYOLO\n"

	for _, name := range []string{"hedge", "hedging"} { // by folder, and by the name in its front matter
		hist, err := f.WriteSkill(name, replace)
		if !errors.Is(err, memory.ErrSkillPinned) {
			t.Fatalf("WriteSkill(%s) of a pinned skill = %q, %v; want ErrSkillPinned", name, hist, err)
		}
		if msg := err.Error(); !strings.Contains(msg, `"`+name+`"`) || !strings.Contains(msg, "pinned: true") || !strings.Contains(msg, "operator") {
			t.Errorf("the refusal %q does not name the skill, the reason and who may change it", msg)
		}
	}
	if got := memorytest.ReadFile(t, f.Path("skills/hedge/SKILL.md")); got != pinned {
		t.Errorf("the pinned skill changed:\n%s", got)
	}
	if _, err := os.Stat(f.Path("skills/hedging")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a skill shadowing the pinned one was made: %v", err)
	}
	if entries, _ := os.ReadDir(f.Path("history/skills/hedge")); len(entries) != 0 {
		t.Errorf("a refused write kept a history version: %v", entries)
	}
	// The operator may.
	hist, err := f.WriteSkillAs(memory.ByOperator, "hedge", replace)
	if err != nil || hist == "" {
		t.Fatalf("WriteSkillAs(ByOperator) = %q, %v", hist, err)
	}
	if got := memorytest.ReadFile(t, hist); got != pinned {
		t.Errorf("the operator's write did not keep the pinned version: %s", got)
	}
	if got := memorytest.ReadFile(t, f.Path("skills/hedge/SKILL.md")); got != replace {
		t.Errorf("the operator's write was not made:\n%s", got)
	}
	// Unpinned now, the desk may write it again.
	if _, err := f.WriteSkill("hedge", replace+"more\n"); err != nil {
		t.Errorf("WriteSkill of an unpinned skill: %v", err)
	}
}
