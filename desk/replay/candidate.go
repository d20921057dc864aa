package replay

// What deskd replay sets up around Run: the candidate desk from its
// flags, and the line it prints of the report.

import (
	"fmt"

	"github.com/deskd/deskd/config"
)

// CandidateOf returns the desk a replay of desk runs against, and how it
// was given (Options.Source): the desk file with (else the desk's own in
// cfg), its model replaced by model (a key of cfg's models, the fallbacks
// dropped) when model is not empty. An unreadable file, a desk no longer
// in cfg without with, and a model cfg does not have are errors that
// satisfy errors.Is(err, ErrBadOptions); their message is "replay: " and
// what was wrong.
func CandidateOf(cfg *config.Config, desk, with, model string) (*config.Desk, string, error) {
	dc, source := cfg.Desks[desk], "the desk's own file"
	if with != "" {
		c, err := config.LoadDeskFile(cfg, with)
		if err != nil {
			return nil, "", refused{fmt.Errorf("replay: --with %s: %w", with, err)}
		}
		c.Name, dc, source = desk, c, "--with "+with
	}
	if dc == nil {
		return nil, "", refused{fmt.Errorf("replay: desk %s is no longer in %s: give its candidate file with --with", desk, cfg.DesksDir)}
	}
	if model != "" {
		if _, ok := cfg.Models[model]; !ok {
			return nil, "", refused{fmt.Errorf("replay: --model %q: no such model in %s", model, cfg.Path)}
		}
		c := *dc
		c.Model, c.Fallbacks = model, nil
		dc = &c
		source += ", --model " + model
	}
	return dc, source, nil
}

// refused is an error of options a replay cannot run with that says only
// what was wrong: it is ErrBadOptions (errors.Is) without naming it.
type refused struct{ err error }

func (r refused) Error() string   { return r.err.Error() }
func (r refused) Unwrap() []error { return []error{ErrBadOptions, r.err} }

// Line is the one line deskd replay prints of rep, whose report is in
// folder out: the triggers replayed, the replies that differ, the tool
// calls refused and those that need approval, both costs, a scripted
// candidate, why it stopped early, and where the HTML report is.
func (rep *Report) Line(out string) string {
	t := rep.Totals
	line := fmt.Sprintf("replayed %d of %d triggers of %s %s: %d replies differ, %d tool calls refused, %d need approval; cost original %.4f, candidate %.4f",
		t.Replayed, t.Triggers, rep.Desk, rep.Date, t.Differing, t.Refused, len(rep.Approvals), t.OriginalCost, t.CandidateCost)
	if rep.Candidate.Scripted {
		line += " (SCRIPTED candidate: not a real model)"
	}
	if rep.Stopped != "" {
		line += "; stopped: " + rep.Stopped
	}
	return line + "; report " + out + "/" + ReportHTML
}
