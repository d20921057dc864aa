package router_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// settled sets the modification times of paths an hour back, as of a
// file that nobody has touched for a while: their stat keys can vouch for
// what was read of them (a file modified within the last two seconds is
// read again at every look, git's racy-clean rule).
func settled(t *testing.T, paths ...string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	for _, p := range paths {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// promptDesk is a provDesk whose folder holds a Memory.md and one skill,
// settled.
func promptDesk(t *testing.T) *provDesk {
	d := newProvDesk(t)
	if _, err := d.folder.WriteMemory("# Memory\n- alpha\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.folder.WriteSkill("vwap", "---\nname: vwap\ndescription: VWAP entries\n---\n\nBody.\n"); err != nil {
		t.Fatal(err)
	}
	skills := d.folder.Path(memory.SkillsDir)
	settled(t, d.folder.Path(memory.MemoryFile), skills, filepath.Join(skills, "vwap"), filepath.Join(skills, "vwap", memory.SkillFile))
	return d
}

// TestTurnRereadsNothingUnchanged: a turn over an unchanged Memory.md and
// skills folder reads neither file and lists no folder; it looks at each
// (one stat of Memory.md, of skills/, of the skill's folder and of its
// SKILL.md) once, though it builds its system prompt for several requests
// (the budget's estimate, the compaction's, the call's).
func TestTurnRereadsNothingUnchanged(t *testing.T) {
	d := promptDesk(t)
	r := d.router()
	d.send(r, "t1", triggers.Manual, "Check the tape.")
	first := d.folder.PromptStats()
	if first.Reads == 0 || first.Lists == 0 {
		t.Fatalf("after the first turn PromptStats = %+v: Memory.md and the skills were never read", first)
	}
	d.send(r, "t2", triggers.Manual, "Again.")
	second := d.folder.PromptStats()
	if second.Reads != first.Reads || second.Lists != first.Lists {
		t.Errorf("the second turn read %d files and listed the skills folder %d times, though nothing changed (before %+v, after %+v)",
			second.Reads-first.Reads, second.Lists-first.Lists, first, second)
	}
	if looks := second.Looks - first.Looks; looks != 4 {
		t.Errorf("the second turn made %d stats of the prompt's files, want 4 (each of Memory.md, skills/, skills/vwap, its SKILL.md once)", looks)
	}
	if s := d.model.lastSystem(t); !strings.Contains(s, "- alpha") || !strings.Contains(s, "- vwap: VWAP entries") {
		t.Errorf("the second turn's prompt lacks Memory.md or the skills:\n%s", s)
	}
}

// TestOperatorsEditIsInTheNextTurn: an operator's edit of Memory.md
// between two turns, outside deskd, of the same size and with its
// modification time set back to what it was, and a skill they add, are in
// the next turn's prompt.
func TestOperatorsEditIsInTheNextTurn(t *testing.T) {
	d := promptDesk(t)
	r := d.router()
	d.send(r, "t1", triggers.Manual, "Check the tape.")
	if s := d.model.lastSystem(t); !strings.Contains(s, "- alpha") {
		t.Fatalf("the first prompt lacks Memory.md:\n%s", s)
	}
	path := d.folder.Path(memory.MemoryFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("# Memory\n- bravo\n"), 0o640); err != nil { // in place, same size
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	skill := d.folder.Path(filepath.Join(memory.SkillsDir, "gaps", memory.SkillFile))
	if err := os.MkdirAll(filepath.Dir(skill), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skill, []byte("---\nname: gaps\ndescription: Opening gaps\n---\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	d.send(r, "t2", triggers.Manual, "Again.")
	s := d.model.lastSystem(t)
	if !strings.Contains(s, "- bravo") || strings.Contains(s, "- alpha") {
		t.Errorf("the turn after the operator's edit does not carry it:\n%s", s)
	}
	if !strings.Contains(s, "- gaps: Opening gaps") {
		t.Errorf("the turn after the operator added a skill does not list it:\n%s", s)
	}
}
