package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/triggers"
)

// SandboxDir is the folder, inside a replay's output folder, that holds
// the candidate desk's folder: desks/<desk>/ below it.
const SandboxDir = "sandbox"

// Start is what the sandbox was rebuilt from: the desk as it stood when
// the trading date began.
type Start struct {
	// Memory says where Memory.md's text came from (a kept version, the
	// current file, or none).
	Memory string `json:"memory"`
	// Skills are the skills as they were, by name.
	Skills []string `json:"skills"`
	// Summary is the date of the summary the day's first message carried
	// ("" when it carried none).
	Summary string `json:"summary,omitempty"`
}

// buildSandbox makes dir (which must not exist) the candidate desk's
// folder as live stood at instant start: the Memory.md in force then, the
// skills as they were, and the summary that first (the day's first
// message, as the model saw it) carried. Nothing of live is written.
func buildSandbox(live *memory.Folder, dir string, start time.Time, first string, now func() time.Time) (*memory.Folder, Start, error) {
	st := Start{Skills: []string{}}
	if _, err := os.Lstat(dir); err == nil {
		return nil, st, fmt.Errorf("sandbox %s already exists: give the replay a new output folder", dir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, st, fmt.Errorf("sandbox %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, st, fmt.Errorf("make sandbox %s: %w", dir, err)
	}
	sb, err := memory.OpenFolder(dir, live.Desk(), now)
	if err != nil {
		return nil, st, fmt.Errorf("open sandbox %s: %w", dir, err)
	}
	text, source, err := memoryAt(live, start)
	if err != nil {
		return nil, st, err
	}
	st.Memory = source
	if text != "" {
		if _, err := sb.WriteMemory(text); err != nil {
			return nil, st, fmt.Errorf("sandbox Memory.md: %w", err)
		}
	}
	skills, err := skillsAt(live, start)
	if err != nil {
		return nil, st, err
	}
	for _, name := range sortedKeys(skills) {
		if _, err := sb.WriteSkillAs(memory.ByOperator, name, skills[name]); err != nil {
			return nil, st, fmt.Errorf("sandbox skill %s: %w", name, err)
		}
		st.Skills = append(st.Skills, name)
	}
	if date, summary, ok := carriedSummary(first); ok {
		if d, err := memory.ParseDate(date); err == nil {
			if s, found, err := live.ReadSummary(d); err == nil && found {
				summary = s.Text
			}
			if _, err := sb.WriteSummary(d, summary); err != nil {
				return nil, st, fmt.Errorf("sandbox summary %s: %w", date, err)
			}
			st.Summary = date
		}
	}
	return sb, st, nil
}

// memoryAt returns the text Memory.md had at instant t, and where it was
// found: the first kept version replaced at or after t (it held until
// then), else the current file ("" and "none" when there is no file).
func memoryAt(live *memory.Folder, t time.Time) (text, source string, err error) {
	versions, err := live.MemoryHistory()
	if err != nil {
		return "", "", fmt.Errorf("Memory.md at %s: %w", t.Format(time.RFC3339), err)
	}
	sort.SliceStable(versions, func(i, j int) bool {
		if !versions[i].At.Equal(versions[j].At) {
			return versions[i].At.Before(versions[j].At)
		}
		return versions[i].Seq < versions[j].Seq
	})
	for _, v := range versions {
		if v.At.IsZero() || v.At.Before(t) {
			continue
		}
		b, err := os.ReadFile(v.Path)
		if err != nil {
			return "", "", fmt.Errorf("Memory.md at %s: kept version %s: %w", t.Format(time.RFC3339), v.ID, err)
		}
		return string(b), "kept version " + v.ID, nil
	}
	if _, err := os.Stat(live.Path(memory.MemoryFile)); errors.Is(err, fs.ErrNotExist) {
		return "", "none", nil
	}
	text, err = live.ReadMemory()
	if err != nil {
		return "", "", fmt.Errorf("Memory.md at %s: %w", t.Format(time.RFC3339), err)
	}
	return text, "the current Memory.md", nil
}

// skillsAt returns the desk's skills as they were at instant t, by
// folder name: each skill's first kept version replaced at or after t,
// else its current SKILL.md if it was written before t; a skill the
// curator retired after t is taken from its archive. A skill made after
// t is left out.
func skillsAt(live *memory.Folder, t time.Time) (map[string]string, error) {
	out := map[string]string{}
	fail := func(err error) (map[string]string, error) {
		return nil, fmt.Errorf("skills at %s: %w", t.Format(time.RFC3339), err)
	}
	// The current file, or an archived one retired after t, of each name.
	current := map[string]string{} // name -> SKILL.md path
	entries, err := os.ReadDir(live.Path(memory.SkillsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && memory.ValidSkillName(e.Name()) {
			current[e.Name()] = live.Path(filepath.Join(memory.SkillsDir, e.Name(), memory.SkillFile))
		}
	}
	archive, err := os.ReadDir(live.Path(filepath.Join(memory.SkillsDir, ".archive")))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	for _, e := range archive {
		i := strings.LastIndex(e.Name(), "-")
		if !e.IsDir() || i <= 0 {
			continue
		}
		name := e.Name()[:i]
		at, err := time.Parse(memory.HistoryStampLayout, e.Name()[i+1:])
		if err != nil || at.Before(t) || !memory.ValidSkillName(name) {
			continue // retired before t, or not an archive's name
		}
		if _, taken := current[name]; !taken {
			current[name] = live.Path(filepath.Join(memory.SkillsDir, ".archive", e.Name(), memory.SkillFile))
		}
	}
	for name, path := range current {
		text, found, err := keptAt(live.Path(filepath.Join(memory.HistoryDir, memory.SkillsDir, name)), t)
		if err != nil {
			return fail(err)
		}
		if found {
			out[name] = text
			continue
		}
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fail(err)
		}
		if !fi.ModTime().Before(t) && !strings.Contains(path, ".archive") {
			continue // written after t, and no older version kept: made after t
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fail(err)
		}
		out[name] = string(b)
	}
	return out, nil
}

// keptAt returns the first version in history folder dir replaced at or
// after t; found is false when there is none.
func keptAt(dir string, t time.Time) (text string, found bool, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	type kept struct {
		at   time.Time
		seq  int
		path string
	}
	var ks []kept
	for _, e := range entries {
		at, seq, ok := memory.ParseHistoryName(e.Name(), ".md")
		if ok && e.Type().IsRegular() && !at.Before(t) {
			ks = append(ks, kept{at, seq, filepath.Join(dir, e.Name())})
		}
	}
	if len(ks) == 0 {
		return "", false, nil
	}
	sort.Slice(ks, func(i, j int) bool {
		if !ks[i].at.Equal(ks[j].at) {
			return ks[i].at.Before(ks[j].at)
		}
		return ks[i].seq < ks[j].seq
	})
	b, err := os.ReadFile(ks[0].path)
	if err != nil {
		return "", false, err
	}
	return string(b), true, nil
}

// carriedSummary returns the date and text of the summary a new
// session's first message carries in front of its own text.
func carriedSummary(text string) (date, summary string, ok bool) {
	own := triggers.OwnText(text)
	if own == text {
		return "", "", false
	}
	head, rest, found := strings.Cut(text, "\n")
	if !found {
		return "", "", false
	}
	i := strings.LastIndex(head, "from ")
	if i < 0 || !strings.HasSuffix(head, ":]") {
		return "", "", false
	}
	date = head[i+len("from ") : len(head)-len(":]")]
	body := strings.TrimSuffix(rest, own)
	if j := strings.LastIndex(body, "\n[End of the summary"); j >= 0 {
		body = body[:j]
	}
	return date, body, true
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
