package memory_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
)

// BenchmarkPromptFilesUnchanged: what a model call's prompt costs of the
// folder when nothing changed: ReadMemory and Skills over a Memory.md of
// 8 KiB and 10 skills, all settled (not modified for an hour).
func BenchmarkPromptFilesUnchanged(b *testing.B) {
	f, err := memory.OpenFolder(filepath.Join(b.TempDir(), "main"), "main", time.Now)
	if err != nil {
		b.Fatal(err)
	}
	text := make([]byte, 8<<10)
	for i := range text {
		text[i] = 'a' + byte(i%26)
	}
	if _, err := f.WriteMemory(string(text)); err != nil {
		b.Fatal(err)
	}
	paths := []string{f.Path(memory.MemoryFile), f.Path(memory.SkillsDir)}
	for i := range 10 {
		name := fmt.Sprintf("skill-%d", i)
		if _, err := f.WriteSkill(name, "---\nname: "+name+"\ndescription: what skill "+name+" is for\n---\n\n"+string(text[:2000])); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, f.Path(filepath.Join(memory.SkillsDir, name)), f.Path(filepath.Join(memory.SkillsDir, name, memory.SkillFile)))
	}
	old := time.Now().Add(-time.Hour)
	for _, p := range paths {
		if err := os.Chtimes(p, old, old); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.ReadMemory(); err != nil {
			b.Fatal(err)
		}
		if s, err := f.Skills(); err != nil || len(s) != 10 {
			b.Fatal(len(s), err)
		}
	}
}
