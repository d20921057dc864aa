package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/deskd/deskd/memory/durable"
)

// SkillFile is the file name of a skill inside skills/<name>/.
const SkillFile = "SKILL.md"

// Skill is one of the desk's own skills, skills/<dir>/SKILL.md.
type Skill struct {
	Name        string    // front matter name:, or Dir when that is missing or the front matter is bad
	Description string    // front matter description:
	Path        string    // the SKILL.md file
	Dir         string    // the skill's folder name under skills/
	Size        int64     // bytes in SKILL.md
	ModTime     time.Time // SKILL.md's modification time
	Hash        string    // sha256 of SKILL.md, lowercase hex
	Pinned      bool      // front matter pinned: true
	Problem     string    // why the front matter was not understood; "" when it was
}

// Skills returns the desk's skills sorted by name (then folder name). A
// skill folder without SKILL.md, and any folder whose name starts with ".",
// is skipped. A SKILL.md whose front matter (the lines between a first
// line "---" and the next "---") is missing or bad still gives a Skill,
// with Name the folder name, Description "" and Problem saying why.
//
// Every model call lists them: the folder is listed and its skills read
// again only when deskd wrote one since (WriteSkill, the curator) or a
// stat shows a change (an operator's edit, a skill added or removed);
// the Skills returned are the caller's own.
func (f *Folder) Skills() ([]Skill, error) {
	gen := f.prompts.gen.Load()
	if skills, ok := getCached(&f.prompts, &f.prompts.skills, gen); ok {
		return slices.Clone(skills), nil
	}
	skills, looks, vouch, err := f.readSkills()
	if err != nil {
		return nil, err
	}
	if vouch {
		setCached(&f.prompts, &f.prompts.skills, gen, looks, slices.Clone(skills))
	}
	return skills, nil
}

// readSkills lists and reads the skills, and returns with them the stats
// that vouch for them (the skills folder, each entry, each SKILL.md);
// vouch is false when one could not.
func (f *Folder) readSkills() (skills []Skill, looks []look, vouch bool, err error) {
	dir := f.Path(SkillsDir)
	l, vouch := f.prompts.look(dir)
	looks = append(looks, l)
	f.prompts.lists.Add(1)
	entries, err := ListDir(dir, "skills")
	if err != nil {
		return nil, nil, false, err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sub, ok := f.prompts.look(filepath.Join(dir, e.Name()))
		looks, vouch = append(looks, sub), vouch && ok
		if sub.missing || sub.info == nil || !sub.info.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name(), SkillFile)
		file, ok := f.prompts.look(path)
		looks, vouch = append(looks, file), vouch && ok
		if file.missing {
			continue
		}
		f.prompts.reads.Add(1)
		raw, err := durable.ReadRegular(path, MaxPromptFile, durable.Follow)
		if errors.Is(err, fs.ErrNotExist) {
			vouch = false
			continue
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("read skill %s: %w", path, err)
		}
		data := string(raw)
		fi := file.info
		if fi == nil { // the stat failed, the read did not
			if fi, err = os.Stat(path); err != nil {
				return nil, nil, false, fmt.Errorf("read skill %s: %w", path, err)
			}
		}
		sum := sha256.Sum256(raw)
		s := Skill{
			Name:    e.Name(),
			Path:    path,
			Dir:     e.Name(),
			Size:    int64(len(data)),
			ModTime: fi.ModTime(),
			Hash:    hex.EncodeToString(sum[:]),
		}
		fm, err := parseFrontMatter(data)
		if err != nil {
			s.Problem = err.Error()
		} else {
			if fm["name"] != "" {
				s.Name = fm["name"]
			}
			s.Description = fm["description"]
			switch strings.ToLower(fm["pinned"]) {
			case "true", "yes", "on":
				s.Pinned = true
			}
		}
		skills = append(skills, s)
	}
	sort.Slice(skills, func(i, j int) bool {
		if skills[i].Name != skills[j].Name {
			return skills[i].Name < skills[j].Name
		}
		return skills[i].Dir < skills[j].Dir
	})
	return skills, looks, vouch, nil
}

// parseFrontMatter reads the top-level "key: value" pairs of the YAML-ish
// front matter at the start of text. It understands plain, 'single' and
// "double" quoted values, values continued on indented lines, block
// scalars (| and >), and # comments; nested mappings are kept as text.
func parseFrontMatter(text string) (map[string]string, error) {
	text = strings.TrimPrefix(text, "\ufeff")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if len(lines) == 0 || strings.TrimRight(lines[0], " \t") != "---" {
		return nil, errors.New("no front matter: the first line is not ---")
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if l := strings.TrimRight(lines[i], " \t"); l == "---" || l == "..." {
			end = i
			break
		}
	}
	if end < 0 {
		return nil, errors.New("front matter has no closing ---")
	}
	body := lines[1:end]
	fm := map[string]string{}
	for i := 0; i < len(body); i++ {
		line := body[i]
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, fmt.Errorf("front matter line %d: unexpected indentation", i+2)
		}
		key, val, ok := strings.Cut(line, ":")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("front matter line %d: want key: value", i+2)
		}
		val = strings.TrimSpace(val)
		// continuation lines: indented or blank, up to the next key
		var more []string
		for i+1 < len(body) {
			next := body[i+1]
			if strings.TrimSpace(next) != "" && next[0] != ' ' && next[0] != '\t' {
				break
			}
			more = append(more, next)
			i++
		}
		for len(more) > 0 && strings.TrimSpace(more[len(more)-1]) == "" {
			more = more[:len(more)-1]
		}
		v, err := scalar(val, more)
		if err != nil {
			return nil, fmt.Errorf("front matter key %s: %w", key, err)
		}
		fm[key] = v
	}
	return fm, nil
}

// scalar returns the value that starts as first on the key's line and goes
// on with the indented lines more.
func scalar(first string, more []string) (string, error) {
	if first != "" && (first[0] == '|' || first[0] == '>') {
		// block scalar: | keeps line breaks, > folds them into spaces
		indent := -1
		var out []string
		for _, l := range more {
			t := strings.TrimLeft(l, " \t")
			if t == "" {
				out = append(out, "")
				continue
			}
			if indent < 0 {
				indent = len(l) - len(t)
			}
			if len(l)-len(t) >= indent {
				out = append(out, l[indent:])
			} else {
				out = append(out, t)
			}
		}
		if first[0] == '|' {
			return strings.Join(out, "\n"), nil
		}
		return foldLines(out), nil
	}
	parts := []string{first}
	for _, l := range more {
		parts = append(parts, strings.TrimSpace(l))
	}
	v := foldLines(parts)
	if v != "" && (v[0] == '"' || v[0] == '\'') {
		return quoted(v)
	}
	if strings.HasPrefix(v, "#") {
		return "", nil
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v, nil
}

// quoted returns the value of the 'single' or "double" quoted scalar v,
// which may be followed by a # comment.
func quoted(v string) (string, error) {
	q := v[0]
	end := -1
	for i := 1; i < len(v); i++ {
		if q == '"' && v[i] == '\\' {
			i++
			continue
		}
		if v[i] == q {
			if q == '\'' && i+1 < len(v) && v[i+1] == '\'' {
				i++
				continue
			}
			end = i
			break
		}
	}
	if end < 0 {
		return "", fmt.Errorf("unterminated quote in %s", v)
	}
	if rest := strings.TrimSpace(v[end+1:]); rest != "" && !strings.HasPrefix(rest, "#") {
		return "", fmt.Errorf("text after the closing quote in %s", v)
	}
	inner := v[:end+1]
	if q == '\'' {
		return strings.ReplaceAll(inner[1:end], "''", "'"), nil
	}
	if u, err := strconv.Unquote(inner); err == nil {
		return u, nil
	}
	return inner[1:end], nil
}

// foldLines joins lines with spaces, an empty line becoming a line break.
func foldLines(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		switch {
		case l == "":
			b.WriteString("\n")
		case i > 0 && lines[i-1] != "" && b.Len() > 0:
			b.WriteString(" ")
			b.WriteString(l)
		default:
			b.WriteString(l)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
