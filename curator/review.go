package curator

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
)

// DefaultMaxChanges caps the changes of one review.
const DefaultMaxChanges = 5

// Model is what the curator needs of the desk's model: an answer to one
// prompt, asked as the last user message after the desk's conversation
// (which the answer does not join), so that the call shares the turns'
// prefix in the service's prompt cache.
type Model interface {
	Ask(ctx context.Context, prompt string) (string, error)
}

// Reviewer is the model-driven skill curator. After the day's summary it
// gives the model every skill with its use, asks for operations (keep,
// patch, merge, retire) as JSON, and applies at most MaxChanges of them. It
// never touches a pinned skill or one a schedule names; a retired skill is
// archived, never deleted; every change goes to the ledger with the hashes
// before and after, and can be undone. A bad reply changes nothing.
type Reviewer struct {
	Folder *memory.Folder
	Model  Model
	Now    func() time.Time
	// MaxChanges caps the changes applied in one review (default 5).
	MaxChanges int
	// ScheduleTexts are the texts of the desk's schedules: a skill whose
	// name appears in one as a word is in use by a schedule and protected.
	ScheduleTexts []string
	// OnTorn, if set, is told of a torn tail found (and set aside) in the
	// change ledger before an append.
	OnTorn func(durable.Torn)
}

// Operation is one change the model proposes.
type Operation struct {
	Op      string   `json:"op"`                // keep, patch, merge, retire
	Skill   string   `json:"skill,omitempty"`   // keep, patch, retire
	Skills  []string `json:"skills,omitempty"`  // merge: the skills merged
	Into    string   `json:"into,omitempty"`    // merge: the new skill's name
	Content string   `json:"content,omitempty"` // patch, merge: the whole new SKILL.md
	Reason  string   `json:"reason"`
}

// plan is the reply the model must give.
type plan struct {
	Operations []Operation `json:"operations"`
}

// LedgerEntry is one change in the curator's ledger.
type LedgerEntry struct {
	ID      string      `json:"id"`
	At      time.Time   `json:"at"`
	Date    memory.Date `json:"trading_date"`
	Session string      `json:"session,omitempty"`
	// Action is patch, create (a merge's new skill), retire, or undo.
	Action string `json:"action"`
	Skill  string `json:"skill"`
	Reason string `json:"reason"`
	// Before and After are sha256 of SKILL.md ("" when absent); their
	// contents are kept under curator/blobs/.
	Before     string `json:"before"`
	After      string `json:"after"`
	ArchivedTo string `json:"archived_to,omitempty"`
	// Undoes names the entry an undo reverses.
	Undoes string `json:"undoes,omitempty"`
}

// Review asks the model for operations on the desk's skills and applies them.
func (c *Reviewer) Review(ctx context.Context, date memory.Date, session string) (memory.SkillReview, error) {
	r, err := (&Inventory{Folder: c.Folder, Now: c.Now, OnTorn: c.OnTorn}).Review(ctx, date, session)
	if err != nil || len(r.Skills) == 0 {
		return r, err
	}
	skills, err := c.Folder.Skills()
	if err != nil {
		return r, fmt.Errorf("review skills of %s: %w", c.Folder.Desk(), err)
	}
	used, err := c.usedOn(date)
	if err != nil {
		return r, fmt.Errorf("review skills of %s: %w", c.Folder.Desk(), err)
	}
	prompt, err := c.prompt(skills, used)
	if err != nil {
		return r, err
	}
	reply, err := c.Model.Ask(ctx, prompt)
	if err != nil {
		return r, fmt.Errorf("review skills of %s: ask the model: %w", c.Folder.Desk(), err)
	}
	ops, err := c.parse(reply, skills)
	if err != nil {
		return r, fmt.Errorf("review skills of %s: the model's reply changes nothing: %w", c.Folder.Desk(), err)
	}
	byName := map[string]memory.Skill{}
	for _, s := range skills {
		byName[s.Name] = s
	}
	for _, op := range ops {
		if refusal := c.refuse(op, byName); refusal != "" {
			r.Changes = append(r.Changes, refusal)
			continue
		}
		line, err := c.apply(op, byName, date, session)
		if err != nil {
			return r, fmt.Errorf("review skills of %s: %w", c.Folder.Desk(), err)
		}
		r.Changes = append(r.Changes, line)
	}
	return r, nil
}

// prompt describes every skill and its use, and the reply's shape.
func (c *Reviewer) prompt(skills []memory.Skill, used map[string]bool) (string, error) {
	type view struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Pinned      bool   `json:"pinned,omitempty"`
		Scheduled   bool   `json:"named_by_a_schedule,omitempty"`
		UsedToday   bool   `json:"used_today"`
		Modified    string `json:"last_modified"`
		Body        string `json:"body"`
	}
	var views []view
	for _, s := range skills {
		body, err := c.Folder.ReadSkill(s.Name)
		if err != nil {
			body = "(unreadable: " + err.Error() + ")"
		}
		if len(body) > 4000 {
			body = body[:4000] + "\n[cut]"
		}
		views = append(views, view{s.Name, s.Description, s.Pinned, c.scheduled(s.Name), used[s.Name], s.ModTime.UTC().Format(time.DateOnly), body})
	}
	b, err := json.MarshalIndent(views, "", "  ")
	if err != nil {
		return "", err
	}
	max := c.maxChanges()
	return fmt.Sprintf(`You curate your own skills. Below is every skill, with whether you used it today.
Propose operations that make the skills more useful: patch a skill that is wrong or unclear, merge overlapping
skills into one, retire a skill that is no longer useful (it is archived, not deleted), or keep it.
Never change a pinned skill or one named by a schedule. At most %d changes (keep is not a change).
Answer with JSON only, no prose:
{"operations": [{"op": "keep|patch|merge|retire", "skill": "name", "skills": ["a", "b"], "into": "new-name",
"content": "the whole new SKILL.md, front matter included", "reason": "why"}]}

Skills:
%s
`, max, b), nil
}

func (c *Reviewer) maxChanges() int {
	if c.MaxChanges <= 0 {
		return DefaultMaxChanges
	}
	return c.MaxChanges
}

// parse reads the reply strictly: JSON of the plan's shape (a fenced code
// block is accepted), known operations on known skills, within the cap.
func (c *Reviewer) parse(reply string, skills []memory.Skill) ([]Operation, error) {
	text := strings.TrimSpace(reply)
	if i := strings.Index(text, "{"); i > 0 && strings.HasPrefix(text, "```") {
		text = strings.TrimSuffix(strings.TrimSpace(text[i:]), "```")
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var p plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("malformed reply: %v", err)
	}
	known := map[string]bool{}
	for _, s := range skills {
		known[s.Name] = true
	}
	changes := 0
	for i, op := range p.Operations {
		switch op.Op {
		case "keep", "patch", "retire":
			if !known[op.Skill] {
				return nil, fmt.Errorf("operation %d: unknown skill %q", i, op.Skill)
			}
		case "merge":
			if len(op.Skills) < 2 {
				return nil, fmt.Errorf("operation %d: merge needs two or more skills", i)
			}
			for _, s := range op.Skills {
				if !known[s] {
					return nil, fmt.Errorf("operation %d: unknown skill %q", i, s)
				}
			}
			if !memory.ValidSkillName(op.Into) {
				return nil, fmt.Errorf("operation %d: merge into %q: not a skill name", i, op.Into)
			}
		default:
			return nil, fmt.Errorf("operation %d: unknown op %q", i, op.Op)
		}
		if (op.Op == "patch" || op.Op == "merge") && !strings.HasPrefix(strings.TrimSpace(op.Content), "---") {
			return nil, fmt.Errorf("operation %d: %s needs the whole SKILL.md, front matter first", i, op.Op)
		}
		if op.Op != "keep" {
			changes++
		}
	}
	if changes > c.maxChanges() {
		return nil, fmt.Errorf("too many changes: %d, the cap is %d", changes, c.maxChanges())
	}
	return p.Operations, nil
}

// refuse returns why op may not be applied, or "".
func (c *Reviewer) refuse(op Operation, skills map[string]memory.Skill) string {
	if op.Op == "keep" {
		return ""
	}
	targets := op.Skills
	if op.Skill != "" {
		targets = []string{op.Skill}
	}
	for _, name := range targets {
		if skills[name].Pinned {
			return fmt.Sprintf("refused %s %s: pinned", op.Op, name)
		}
		if c.scheduled(name) {
			return fmt.Sprintf("refused %s %s: named by a schedule", op.Op, name)
		}
	}
	if op.Op == "merge" {
		if _, exists := skills[op.Into]; exists && !contains(op.Skills, op.Into) {
			return fmt.Sprintf("refused merge into %s: a skill of that name exists", op.Into)
		}
	}
	return ""
}

// scheduled reports whether a schedule's text names the skill as a word.
func (c *Reviewer) scheduled(name string) bool {
	re := regexp.MustCompile(`(^|[^a-z0-9_-])` + regexp.QuoteMeta(name) + `($|[^a-z0-9_-])`)
	for _, t := range c.ScheduleTexts {
		if re.MatchString(strings.ToLower(t)) {
			return true
		}
	}
	return false
}

// apply carries out one operation and records it in the ledger.
func (c *Reviewer) apply(op Operation, skills map[string]memory.Skill, date memory.Date, session string) (string, error) {
	base := LedgerEntry{Date: date, Session: session, Reason: op.Reason}
	switch op.Op {
	case "keep":
		return "keep " + op.Skill, nil
	case "patch":
		if err := c.write(base, "patch", op.Skill, op.Content); err != nil {
			return "", err
		}
		return "patch " + op.Skill, nil
	case "retire":
		if err := c.retire(base, op.Skill); err != nil {
			return "", err
		}
		return "retire " + op.Skill, nil
	default: // merge
		if err := c.write(base, "create", op.Into, op.Content); err != nil {
			return "", err
		}
		for _, s := range op.Skills {
			if s == op.Into {
				continue
			}
			if err := c.retire(base, s); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("merge %s into %s", strings.Join(op.Skills, ", "), op.Into), nil
	}
}

// write replaces (or creates) a skill's SKILL.md, keeping both versions as blobs.
func (c *Reviewer) write(e LedgerEntry, action, name, content string) error {
	before, _ := c.Folder.ReadSkill(name) // "" for a new skill
	e.Action, e.Skill = action, name
	var err error
	if e.Before, err = c.keepBlob(before); err != nil {
		return err
	}
	if e.After, err = c.keepBlob(content); err != nil {
		return err
	}
	if _, err := c.Folder.WriteSkill(name, content); err != nil {
		return err
	}
	return c.record(e)
}

// retire moves a skill's folder to skills/.archive/, never deleting it.
func (c *Reviewer) retire(e LedgerEntry, name string) error {
	before, err := c.Folder.ReadSkill(name)
	if err != nil {
		return err
	}
	e.Action, e.Skill = "retire", name
	if e.Before, err = c.keepBlob(before); err != nil {
		return err
	}
	rel := filepath.Join(memory.SkillsDir, ".archive", name+"-"+c.Now().UTC().Format(memory.HistoryStampLayout))
	if err := durable.MkdirAll(c.Folder.FS, filepath.Dir(c.Folder.Path(rel)), 0o750); err != nil {
		return fmt.Errorf("archive skill %s: %w", name, err)
	}
	err = durable.Or(c.Folder.FS).Rename(c.Folder.Path(filepath.Join(memory.SkillsDir, name)), c.Folder.Path(rel))
	c.Folder.PromptFilesChanged()
	if err != nil {
		return fmt.Errorf("archive skill %s: %w", name, err)
	}
	e.ArchivedTo = rel
	return c.record(e)
}

// The errors of Undo, for errors.Is.
var (
	// ErrNoSuchChange: the ledger has no entry of that id.
	ErrNoSuchChange = errors.New("no such ledger entry")
	// ErrAlreadyUndone: a later entry undid it already.
	ErrAlreadyUndone = errors.New("already undone")
	// ErrCannotUndo: the change is of a kind that cannot be undone (an
	// undo), or what it would restore is in the way.
	ErrCannotUndo = errors.New("cannot be undone")
)

// Undo reverses ledger entry id: a patch or create gets its previous
// content back (a created skill is archived), a retired skill comes back
// from the archive. The undo is itself recorded.
func (c *Reviewer) Undo(id string) (LedgerEntry, error) {
	entries, err := ReadLedger(c.Folder)
	if err != nil {
		return LedgerEntry{}, err
	}
	var target *LedgerEntry
	for i := range entries {
		if entries[i].ID == id {
			target = &entries[i]
		}
		if entries[i].Undoes == id {
			return LedgerEntry{}, fmt.Errorf("undo %s: %w by %s", id, ErrAlreadyUndone, entries[i].ID)
		}
	}
	if target == nil {
		return LedgerEntry{}, fmt.Errorf("undo %s: %w", id, ErrNoSuchChange)
	}
	e := LedgerEntry{Date: target.Date, Action: "undo", Skill: target.Skill, Reason: "undo " + target.Action + " " + id, Undoes: id}
	switch target.Action {
	case "patch":
		before, err := c.readBlob(target.Before)
		if err != nil {
			return LedgerEntry{}, fmt.Errorf("undo %s: %w", id, err)
		}
		cur, _ := c.Folder.ReadSkill(target.Skill)
		e.Before, _ = c.keepBlob(cur)
		e.After = target.Before
		// An undo is the operator's act (deskd skills --undo): it may
		// restore a skill that was pinned since.
		if _, err := c.Folder.WriteSkillAs(memory.ByOperator, target.Skill, before); err != nil {
			return LedgerEntry{}, fmt.Errorf("undo %s: %w", id, err)
		}
	case "create":
		if err := c.retire(LedgerEntry{Date: target.Date, Reason: "undo create " + id, Undoes: id}, target.Skill); err != nil {
			return LedgerEntry{}, fmt.Errorf("undo %s: %w", id, err)
		}
		return c.last()
	case "retire":
		dst := c.Folder.Path(filepath.Join(memory.SkillsDir, target.Skill))
		if _, err := os.Stat(dst); err == nil {
			return LedgerEntry{}, fmt.Errorf("undo %s: it %w now: a skill %s exists again; move it away first", id, ErrCannotUndo, target.Skill)
		}
		err := durable.Or(c.Folder.FS).Rename(c.Folder.Path(target.ArchivedTo), dst)
		c.Folder.PromptFilesChanged()
		if err != nil {
			return LedgerEntry{}, fmt.Errorf("undo %s: %w", id, err)
		}
		e.After = target.Before
	default:
		return LedgerEntry{}, fmt.Errorf("undo %s: a %s %w", id, target.Action, ErrCannotUndo)
	}
	if err := c.record(e); err != nil {
		return LedgerEntry{}, err
	}
	return c.last()
}

func (c *Reviewer) last() (LedgerEntry, error) {
	entries, err := ReadLedger(c.Folder)
	if err != nil || len(entries) == 0 {
		return LedgerEntry{}, err
	}
	return entries[len(entries)-1], nil
}

// record appends e to the ledger with a fresh id.
func (c *Reviewer) record(e LedgerEntry) error {
	entries, err := ReadLedger(c.Folder)
	if err != nil {
		return err
	}
	e.At = c.Now()
	e.ID = fmt.Sprintf("c%d", len(entries)+1)
	return appendLine(c.Folder, LedgerFile, e, c.OnTorn)
}

// keepBlob stores content under curator/blobs/<sha256>.md and returns the
// hash ("" for empty content).
func (c *Reviewer) keepBlob(content string) (string, error) {
	if content == "" {
		return "", nil
	}
	sum := sha256.Sum256([]byte(content))
	h := hex.EncodeToString(sum[:])
	path := c.Folder.Path(filepath.Join("curator", "blobs", h+".md"))
	if _, err := os.Stat(path); err == nil {
		return h, nil
	}
	if err := durable.MkdirAll(c.Folder.FS, filepath.Dir(path), 0o750); err != nil {
		return "", fmt.Errorf("keep skill version: %w", err)
	}
	if err := durable.WriteFile(c.Folder.FS, path, []byte(content), 0o640); err != nil {
		return "", fmt.Errorf("keep skill version: %w", err)
	}
	return h, nil
}

func (c *Reviewer) readBlob(hash string) (string, error) {
	if hash == "" {
		return "", errors.New("no earlier version")
	}
	b, err := os.ReadFile(c.Folder.Path(filepath.Join("curator", "blobs", hash+".md")))
	return string(b), err
}

// usedOn returns the skills read or written in the sessions of date.
func (c *Reviewer) usedOn(date memory.Date) (map[string]bool, error) {
	ids, err := c.Folder.SessionIDs()
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, id := range ids {
		records, err := c.Folder.ReadSession(id)
		if err != nil {
			return nil, err
		}
		if len(records) == 0 || records[0].Date != date.String() {
			continue
		}
		for _, rec := range records {
			calls, _ := rec.Calls()
			for _, call := range calls {
				if call.Name != "skill_read" && call.Name != "skill_write" {
					continue
				}
				var a struct{ Name string }
				if json.Unmarshal(call.Arguments, &a) == nil && a.Name != "" {
					used[a.Name] = true
				}
			}
		}
	}
	return used, nil
}

// LedgerFile is the ledger of the curator's changes: one JSON line each,
// with the skill's hashes before and after.
const LedgerFile = "curator/ledger.jsonl"

// ReadLedger returns the curator's change ledger, oldest first.
func ReadLedger(folder *memory.Folder) ([]LedgerEntry, error) {
	f, err := os.Open(folder.Path(LedgerFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read curator ledger: %w", err)
	}
	defer f.Close()
	var out []LedgerEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e LedgerEntry
		if err := json.Unmarshal(line, &e); err != nil {
			continue // a torn last line from a crash; the good entries stand
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, sc.Err()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
