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
// ErrSkillPinned is the error of a desk's write to a skill the operator
// pinned (pinned: true in its front matter).
var ErrSkillPinned = errors.New("the skill is pinned")

// SkillWriter says on whose behalf a skill is written.
type SkillWriter int

// The writers of a skill.
const (
	// ByDesk is the desk itself: its model's skill_write tool, its
	// curator. A pinned skill is refused, and so is a new skill that takes
	// the name of a pinned one.
	ByDesk SkillWriter = iota
	// ByOperator is a person at the desk: a pinned skill may be replaced.
	ByOperator
)

// WriteSkill is WriteSkillAs(ByDesk, name, content): it refuses to touch
// a pinned skill.
func (f *Folder) WriteSkill(name, content string) (historyPath string, err error) {
	return f.WriteSkillAs(ByDesk, name, content)
}

// WriteSkillAs replaces skills/<name>/SKILL.md atomically with content,
// keeping the previous version under history/skills/<name>/ first. It
// returns the history path ("" for a new skill). Written ByDesk, a skill
// that is pinned (pinned: true in its front matter), or whose front matter
// names a pinned skill of another folder, is refused with an error that
// satisfies errors.Is(err, ErrSkillPinned) and names the skill; nothing is
// written.
func (f *Folder) WriteSkillAs(by SkillWriter, name, content string) (historyPath string, err error) {
	if !ValidSkillName(name) {
		return "", fmt.Errorf("write skill %q: a skill name is lowercase letters, digits, '-' and '_'", name)
	}
	dir := f.Path(filepath.Join(SkillsDir, name))
	path := filepath.Join(dir, SkillFile)
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.prompts.changed()
	if by != ByOperator {
		if err := f.refusePinned(name, content); err != nil {
			return "", err
		}
	}
	if err := f.mkdirAll(dir); err != nil {
		return "", fmt.Errorf("write skill %q: %w", name, err)
	}
	hist, perm, err := f.keepOld(path, filepath.Join(HistoryDir, SkillsDir, name), ".md")
	if err != nil {
		return "", fmt.Errorf("write skill %q: %w", name, err)
	}
	if err := f.writeAtomic(path, []byte(content), perm); err != nil {
		return "", fmt.Errorf("write skill %q: %w", name, err)
	}
	return hist, nil
}

// refusePinned returns an ErrSkillPinned error if the desk may not write
// skill folder name with content: the skill there is pinned, or a pinned
// skill of another folder goes by the name (the folder's, or the one in
// content's front matter). A skill whose front matter cannot be read
// counts as not pinned, as the curator counts it. f.mu must be held.
func (f *Folder) refusePinned(name, content string) error {
	names := map[string]bool{name: true}
	if fm, err := parseFrontMatter(content); err == nil && fm["name"] != "" {
		names[fm["name"]] = true
	}
	skills, err := f.Skills()
	if err != nil {
		return fmt.Errorf("write skill %q: %w", name, err)
	}
	for _, s := range skills {
		switch {
		case !s.Pinned:
		case s.Dir == name:
			return fmt.Errorf("write skill %q: %w (pinned: true in its front matter): only an operator may change it", name, ErrSkillPinned)
		case names[s.Name]:
			return fmt.Errorf("write skill %q: %w: skills/%s is the pinned skill %q (pinned: true in its front matter), "+
				"and only an operator may change it or give another skill its name", name, ErrSkillPinned, s.Dir, s.Name)
		}
	}
	return nil
}
