package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// skillName is what a skill's folder may be called.
var skillName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidSkillName reports whether name may name a skill folder.
func ValidSkillName(name string) bool { return skillName.MatchString(name) }

// ReadSkill returns the content of skills/<name>/SKILL.md.
func (f *Folder) ReadSkill(name string) (string, error) {
	if !ValidSkillName(name) {
		return "", fmt.Errorf("read skill %q: a skill name is lowercase letters, digits, '-' and '_'", name)
	}
	b, err := os.ReadFile(f.Path(filepath.Join(SkillsDir, name, SkillFile)))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read skill %q: no such skill: %w", name, err)
	}
	if err != nil {
		return "", fmt.Errorf("read skill %q: %w", name, err)
	}
	return string(b), nil
}

// WriteSkill replaces skills/<name>/SKILL.md atomically with content,
// keeping the previous version under history/skills/<name>/ first. It
// returns the history path ("" for a new skill).
func (f *Folder) WriteSkill(name, content string) (historyPath string, err error) {
	if !ValidSkillName(name) {
		return "", fmt.Errorf("write skill %q: a skill name is lowercase letters, digits, '-' and '_'", name)
	}
	dir := f.Path(filepath.Join(SkillsDir, name))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("write skill %q: %w", name, err)
	}
	path := filepath.Join(dir, SkillFile)
	f.mu.Lock()
	defer f.mu.Unlock()
	hist, perm, err := f.keepOld(path, filepath.Join(HistoryDir, SkillsDir, name), ".md")
	if err != nil {
		return "", fmt.Errorf("write skill %q: %w", name, err)
	}
	if err := WriteFileAtomic(path, []byte(content), perm); err != nil {
		return "", fmt.Errorf("write skill %q: %w", name, err)
	}
	return hist, nil
}
