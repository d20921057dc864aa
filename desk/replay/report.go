package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/memory"
)

// The files a replay writes in its output folder.
const (
	ReportJSON = "report.json"
	ReportHTML = "report.html"
)

// Report is what a replay found: report.json.
type Report struct {
	Desk string `json:"desk"`
	Date string `json:"trading_date"`
	// Generated is when the replay ran, on deskd's clock; Version is
	// deskd's.
	Generated time.Time `json:"generated"`
	Version   string    `json:"version,omitempty"`
	// Candidate is the desk the day was replayed against.
	Candidate Candidate `json:"candidate"`
	// Start is what the sandbox was rebuilt from.
	Start Start `json:"start"`
	// MaxCost is the bound on the candidate's cost (0: none); Stopped says
	// why the replay stopped before the day's last trigger ("" when it
	// ran them all).
	MaxCost float64 `json:"max_cost,omitempty"`
	Stopped string  `json:"stopped,omitempty"`
	// Triggers are the day's triggers, each with both sides; a trigger
	// the replay did not reach has no candidate side.
	Triggers []Row `json:"triggers"`
	// Approvals are the calls of tools under approve that the candidate
	// made: never run, never queued.
	Approvals []Approval `json:"approvals"`
	Totals    Totals     `json:"totals"`
}

// Candidate describes the candidate desk.
type Candidate struct {
	// Source is how it was given ("--with candidate.yaml", "--model KEY",
	// "the desk's own file").
	Source string `json:"source"`
	// File is its desk file.
	File string `json:"file,omitempty"`
	// Route is its model route: the model, then its fallbacks.
	Route []string `json:"route"`
	// Scripted is true when its model is deskd's offline scripted model:
	// its replies are not a real model's.
	Scripted bool `json:"scripted,omitempty"`
	// AllowTools are the tools that could run for real.
	AllowTools []string `json:"allow_tools,omitempty"`
}

// Row is one trigger and both sides of it.
type Row struct {
	Trigger
	Original  Side  `json:"original"`
	Candidate *Side `json:"candidate,omitempty"`
	// Differs is true when the candidate's reply is not the original's
	// (leading and trailing white space aside).
	Differs bool `json:"differs"`
}

// Approval is a call of a tool under approve that the candidate made.
type Approval struct {
	Trigger   string          `json:"trigger"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Outcome is how it was answered: refused, or replayed (the original
	// made the same call, and an operator let it run).
	Outcome string `json:"outcome"`
}

// Totals sum the report.
type Totals struct {
	// Triggers counts the day's triggers; Replayed those the candidate
	// ran; Differing those whose replies differ.
	Triggers  int `json:"triggers"`
	Replayed  int `json:"replayed"`
	Differing int `json:"differing"`
	// Refused counts the tool calls the candidate wanted that were not run
	// (nor answered from the record).
	Refused int `json:"refused"`
	// OriginalCost and CandidateCost are each side's estimated cost (of
	// the triggers the candidate ran, and the original's of all).
	OriginalCost    float64      `json:"original_cost"`
	CandidateCost   float64      `json:"candidate_cost"`
	OriginalTokens  memory.Usage `json:"original_tokens"`
	CandidateTokens memory.Usage `json:"candidate_tokens"`
}

// newReport starts the report of a replay.
func newReport(o Options, day Day, start Start, dc *config.Desk) *Report {
	source := o.Source
	if source == "" {
		source = "the desk's own file"
	}
	c := Candidate{Source: source, File: dc.Path, Route: append([]string{dc.Model}, dc.Fallbacks...), AllowTools: o.AllowTools}
	if m, ok := o.Config.Models[dc.Model]; ok && m.Provider == "scripted" {
		c.Scripted = true
	}
	return &Report{Desk: day.Desk, Date: day.Date.String(), Generated: o.Clock.Now(), Version: o.Version, Candidate: c,
		Start: start, MaxCost: o.MaxCost, Triggers: []Row{}, Approvals: []Approval{}}
}

// add adds a row the candidate ran.
func (r *Report) add(row Row) {
	r.Triggers = append(r.Triggers, row)
	for _, c := range row.Candidate.ToolCalls {
		if c.Approval {
			r.Approvals = append(r.Approvals, Approval{Trigger: row.ID, Tool: c.Tool, Arguments: c.Arguments, Outcome: c.Outcome})
		}
	}
}

// finish adds the triggers the replay did not reach, and the totals.
func (r *Report) finish(recs []recorded) {
	for _, rec := range recs[len(r.Triggers):] {
		r.Triggers = append(r.Triggers, Row{Trigger: rec.Trigger, Original: rec.original})
	}
	t := Totals{Triggers: len(r.Triggers)}
	for i := range r.Triggers {
		row := &r.Triggers[i]
		if row.Original.ToolCalls == nil {
			row.Original.ToolCalls = []Call{}
		}
		t.OriginalCost += row.Original.Cost
		t.OriginalTokens = addUsage(t.OriginalTokens, row.Original.Tokens)
		if row.Candidate == nil {
			continue
		}
		t.Replayed++
		if row.Differs {
			t.Differing++
		}
		t.CandidateCost += row.Candidate.Cost
		t.CandidateTokens = addUsage(t.CandidateTokens, row.Candidate.Tokens)
		for _, c := range row.Candidate.ToolCalls {
			if c.Outcome == CallRefused {
				t.Refused++
			}
		}
	}
	r.Totals = t
}

// WriteReport writes rep into folder dir as report.json and report.html,
// each atomically.
func WriteReport(dir string, rep *Report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("write replay report: %w", err)
	}
	if err := memory.WriteFileAtomic(filepath.Join(dir, ReportJSON), append(data, '\n'), 0o640); err != nil {
		return fmt.Errorf("write replay report: %w", err)
	}
	page, err := HTML(rep)
	if err != nil {
		return err
	}
	if err := memory.WriteFileAtomic(filepath.Join(dir, ReportHTML), page, 0o640); err != nil {
		return fmt.Errorf("write replay report: %w", err)
	}
	return nil
}

// ReadReport reads the report.json of output folder dir.
func ReadReport(dir string) (*Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err != nil {
		return nil, fmt.Errorf("read replay report: %w", err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("read replay report %s: %w", filepath.Join(dir, ReportJSON), err)
	}
	return &rep, nil
}

// Dir is where the reports of desk's replays run without --out go, below
// the state folder (outside the desk's folder): replays/<desk>/.
func Dir(stateDir, desk string) string { return filepath.Join(stateDir, "replays", desk) }

// NextOut returns the output folder of a new replay of date under the
// desk's replays folder (Dir): <date>-<n>, n the first number not taken.
func NextOut(stateDir, desk string, date memory.Date) (string, error) {
	base := Dir(stateDir, desk)
	for n := 1; n < 10000; n++ {
		dir := filepath.Join(base, fmt.Sprintf("%s-%d", date, n))
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			return dir, nil
		} else if err != nil {
			return "", fmt.Errorf("replay folder %s: %w", dir, err)
		}
	}
	return "", fmt.Errorf("replay folder %s: 9999 replays of %s already", base, date)
}

// Summary is a past replay as the console lists it.
type Summary struct {
	// ID names it: its folder's name under the desk's replays folder.
	ID        string    `json:"id"`
	Date      string    `json:"trading_date"`
	Generated time.Time `json:"generated"`
	Candidate Candidate `json:"candidate"`
	Stopped   string    `json:"stopped,omitempty"`
	Totals    Totals    `json:"totals"`
}

// List returns the reports of the desk's past replays found in its
// replays folder (Dir), newest first; a folder without a readable report
// is passed over. None is no error.
func List(stateDir, desk string) ([]Summary, error) {
	base := Dir(stateDir, desk)
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return []Summary{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list replays of %s: %w", desk, err)
	}
	out := []Summary{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		rep, err := ReadReport(filepath.Join(base, e.Name()))
		if err != nil {
			continue
		}
		out = append(out, Summary{ID: e.Name(), Date: rep.Date, Generated: rep.Generated, Candidate: rep.Candidate, Stopped: rep.Stopped, Totals: rep.Totals})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Generated.After(out[j].Generated) })
	return out, nil
}

// ValidID reports whether id may name a past replay: a folder name of the
// desk's replays folder, no path.
func ValidID(id string) bool {
	return id != "" && filepath.Base(id) == id && filepath.IsLocal(id) && id[0] != '.'
}
