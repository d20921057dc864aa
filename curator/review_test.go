package curator_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/curator"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable"
)

// answer is a fake model that gives a canned reply and keeps the prompt.
type answer struct {
	reply  string
	err    error
	prompt string
}

func (a *answer) Ask(_ context.Context, prompt string) (string, error) {
	a.prompt = prompt
	return a.reply, a.err
}

var day = memory.Date{Year: 2026, Month: 3, Day: 2}

func skill(name, desc, extra string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n" + extra + "---\n\nBody of " + name + ".\n"
}

// setup makes a folder with four skills: gap (pinned), open-range (named by
// a schedule), vwap and twap.
func setup(t *testing.T, reply string) (*curator.Reviewer, *memory.Folder, *answer) {
	t.Helper()
	now := time.Date(2026, 3, 2, 18, 30, 0, 0, time.UTC)
	f, err := memory.OpenFolder(t.TempDir(), "main", func() time.Time { now = now.Add(time.Millisecond); return now })
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"gap":        skill("gap", "Opening gaps", "pinned: true\n"),
		"open-range": skill("open-range", "Opening range", ""),
		"vwap":       skill("vwap", "VWAP entries", ""),
		"twap":       skill("twap", "TWAP entries", ""),
	} {
		if _, err := f.WriteSkill(name, text); err != nil {
			t.Fatal(err)
		}
	}
	model := &answer{reply: reply}
	return &curator.Reviewer{Folder: f, Model: model, Now: f.Now, MaxChanges: 2,
		ScheduleTexts: []string{"Before the open, use open-range."}}, f, model
}

// reviewChanges sets up the folder (setup), runs a review the model answers
// with reply, and checks that it made the changes want (joined with "; ").
func reviewChanges(t *testing.T, reply, want string) (*curator.Reviewer, *memory.Folder, *answer) {
	t.Helper()
	r, f, model := setup(t, reply)
	got, err := r.Review(context.Background(), day, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if changes := strings.Join(got.Changes, "; "); changes != want {
		t.Errorf("changes = %q, want %q", changes, want)
	}
	return r, f, model
}

func TestReviewAppliesAndRecords(t *testing.T) {
	reply := `{"operations": [
		{"op": "keep", "skill": "gap", "reason": "fine"},
		{"op": "patch", "skill": "vwap", "content": "---\nname: vwap\ndescription: VWAP entries, fixed\n---\n\nBetter.\n", "reason": "clearer"},
		{"op": "retire", "skill": "twap", "reason": "unused"}]}`
	r, f, model := reviewChanges(t, reply, "keep gap; patch vwap; retire twap")
	if !strings.Contains(model.prompt, `"pinned": true`) || !strings.Contains(model.prompt, `"named_by_a_schedule": true`) {
		t.Errorf("the prompt does not tell the model what is protected:\n%s", model.prompt)
	}
	if text, _ := f.ReadSkill("vwap"); !strings.Contains(text, "Better.") {
		t.Errorf("vwap not patched: %q", text)
	}
	if _, err := f.ReadSkill("twap"); err == nil {
		t.Error("twap is still a live skill after retire")
	}
	entries, err := curator.ReadLedger(f)
	if err != nil || len(entries) != 2 {
		t.Fatalf("ledger = %+v, %v; want 2 entries", entries, err)
	}
	retired := entries[1]
	if retired.Action != "retire" || retired.Before == "" || retired.ArchivedTo == "" {
		t.Fatalf("retire entry = %+v", retired)
	}
	if _, err := os.Stat(f.Path(retired.ArchivedTo + "/SKILL.md")); err != nil {
		t.Fatalf("the retired skill was not archived: %v", err)
	}
	if entries[0].Before == entries[0].After || entries[0].Before == "" {
		t.Errorf("patch entry hashes = %+v", entries[0])
	}

	// Undo both: the patch's old text and the retired skill come back.
	if _, err := r.Undo(entries[0].ID); err != nil {
		t.Fatal(err)
	}
	if text, _ := f.ReadSkill("vwap"); text != skill("vwap", "VWAP entries", "") {
		t.Errorf("undo of the patch left %q", text)
	}
	if _, err := r.Undo(entries[1].ID); err != nil {
		t.Fatal(err)
	}
	if text, err := f.ReadSkill("twap"); err != nil || text != skill("twap", "TWAP entries", "") {
		t.Errorf("undo of the retire: %q, %v", text, err)
	}
	if _, err := r.Undo(entries[1].ID); err == nil {
		t.Error("an entry was undone twice")
	}
}

func TestReviewNeverTouchesPinnedOrScheduledSkills(t *testing.T) {
	reply := `{"operations": [
		{"op": "retire", "skill": "gap", "reason": "old"},
		{"op": "patch", "skill": "open-range", "content": "---\nname: open-range\n---\nx\n", "reason": "r"}]}`
	_, f, _ := reviewChanges(t, reply, "refused retire gap: pinned; refused patch open-range: named by a schedule")
	if text, _ := f.ReadSkill("open-range"); text != skill("open-range", "Opening range", "") {
		t.Errorf("a scheduled skill was changed: %q", text)
	}
	if entries, _ := curator.ReadLedger(f); len(entries) != 0 {
		t.Errorf("refusals wrote ledger entries: %+v", entries)
	}
}

func TestBadRepliesChangeNothing(t *testing.T) {
	tests := []struct{ name, reply, why string }{
		{"malformed", `{"operations": [`, "malformed"},
		{"prose", "I would retire twap.", "malformed"},
		{"unknown skill", `{"operations": [{"op": "retire", "skill": "nope", "reason": "r"}]}`, "unknown skill"},
		{"unknown op", `{"operations": [{"op": "delete", "skill": "twap", "reason": "r"}]}`, "unknown op"},
		{"unknown field", `{"operations": [], "delete_all": true}`, "malformed"},
		{"too many changes", `{"operations": [{"op": "retire", "skill": "twap", "reason": "r"}, {"op": "retire", "skill": "vwap", "reason": "r"},
			{"op": "merge", "skills": ["vwap", "twap"], "into": "xwap", "content": "---\nname: xwap\n---\n", "reason": "r"}]}`, "too many changes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, f, _ := setup(t, tt.reply)
			before, _ := f.Skills()
			_, err := r.Review(context.Background(), day, "s1")
			if err == nil || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("Review = %v, want an error saying %q", err, tt.why)
			}
			after, _ := f.Skills()
			if len(after) != len(before) {
				t.Fatalf("skills %d -> %d after a bad reply", len(before), len(after))
			}
			for i := range after {
				if after[i].Hash != before[i].Hash {
					t.Errorf("skill %s changed after a bad reply", after[i].Name)
				}
			}
		})
	}
}

func TestMergeArchivesSources(t *testing.T) {
	reply := `{"operations": [{"op": "merge", "skills": ["vwap", "twap"], "into": "execution", "content": "---\nname: execution\ndescription: both\n---\nMerged.\n", "reason": "overlap"}]}`
	_, f, _ := reviewChanges(t, reply, "merge vwap, twap into execution")
	skills, _ := f.Skills()
	var names []string
	for _, s := range skills {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "execution,gap,open-range" {
		t.Errorf("skills after merge = %v", names)
	}
}

func TestModelFailureIsReported(t *testing.T) {
	r, _, model := setup(t, "")
	model.err = errors.New("overloaded")
	if _, err := r.Review(context.Background(), day, "s1"); err == nil || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("Review = %v", err)
	}
}

// TestTornLedgerIsSetAsideAndReported: a torn tail a crash left in the
// curator's ledger is set aside and reported before the next entry is
// appended; the next entry is whole, and every line of the file parses.
func TestTornLedgerIsSetAsideAndReported(t *testing.T) {
	c, f, _ := setup(t, `{"operations":[{"op":"retire","skill":"twap","reason":"unused"}]}`)
	path := f.Path(curator.LedgerFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	const frag = `{"id":"c1","at":"2026-03-02T18:30:00Z","act`
	if err := os.WriteFile(path, []byte(frag), 0o640); err != nil {
		t.Fatal(err)
	}
	var torn []durable.Torn
	c.OnTorn = func(t durable.Torn) { torn = append(torn, t) }
	if _, err := c.Review(t.Context(), day, "s1"); err != nil {
		t.Fatal(err)
	}
	if len(torn) != 1 || torn[0].Path != path || torn[0].Bytes != len(frag) {
		t.Fatalf("OnTorn saw %+v, want the ledger's torn tail of %d bytes", torn, len(frag))
	}
	if b, err := os.ReadFile(torn[0].SavedTo); err != nil || string(b) != frag {
		t.Errorf("%s = %q (%v), want the fragment", torn[0].SavedTo, b, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("a ledger line does not parse: %q", line)
		}
	}
	entries, err := curator.ReadLedger(f)
	if err != nil || len(entries) != 1 || entries[0].Action != "retire" {
		t.Errorf("ReadLedger = %+v, %v; want the one retire", entries, err)
	}
}

// TestUndoRestoresASkillPinnedSince: an undo is the operator's act, so it
// restores a patched skill even when the skill was pinned after the patch;
// the curator itself still never touches a pinned skill.
func TestUndoRestoresASkillPinnedSince(t *testing.T) {
	c, f, _ := setup(t, `{"operations":[{"op":"patch","skill":"vwap","content":"---\nname: vwap\ndescription: VWAP v2\n---\n\nv2\n","reason":"sharper"}]}`)
	before, err := f.ReadSkill("vwap")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Review(t.Context(), day, "s1"); err != nil {
		t.Fatal(err)
	}
	pinned := "---\nname: vwap\ndescription: VWAP v2\npinned: true\n---\n\nv2\n"
	if _, err := f.WriteSkillAs(memory.ByOperator, "vwap", pinned); err != nil {
		t.Fatal(err)
	}
	entries, err := curator.ReadLedger(f)
	if err != nil || len(entries) == 0 {
		t.Fatalf("ReadLedger = %v, %v", entries, err)
	}
	if _, err := c.Undo(entries[0].ID); err != nil {
		t.Fatalf("Undo of the patch of a skill pinned since: %v", err)
	}
	if got, _ := f.ReadSkill("vwap"); got != before {
		t.Errorf("vwap after the undo = %q, want %q", got, before)
	}
}
