package termview

import (
	"fmt"
	"io"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termsafe"
)

// statusModel is a desk's MODEL cell: its configured model, marked
// "(scripted)" when it is the scripted one, then, when another model
// answered its last turn, that model, loudly: "gpt-4o -> FALLBACK offline
// (SCRIPTED)". The marks come from the status's flags, not the names.
func statusModel(s desk.Status) string {
	model := s.Model
	if s.Scripted {
		model += " (scripted)"
	}
	a := s.LastAnswer
	if a == nil || (!a.Fallback && a.Model == s.Model) {
		return model
	}
	model += " -> "
	if a.Fallback {
		model += "FALLBACK "
	}
	model += a.Model
	if a.Scripted {
		model += " (SCRIPTED)"
	}
	return model
}

// fallbackNotes prints a line for each desk whose last turn a fallback
// answered.
func fallbackNotes(w io.Writer, desks []desk.Status) {
	for _, s := range desks {
		a := s.LastAnswer
		if a == nil || !a.Fallback {
			continue
		}
		what := ""
		if a.Scripted {
			what = fmt.Sprintf(": %s is a SCRIPTED offline model, its replies are canned, not a model's", termsafe.Line(a.Model))
		}
		fmt.Fprintf(w, "\ndesk %s: its last turn (%s) was answered by FALLBACK %s, not by its primary %s%s\n",
			termsafe.Line(s.Name), a.At.UTC().Format(time.RFC3339), termsafe.Line(a.Model), termsafe.Line(s.Model), what)
	}
}

// scriptedCell is a session row's SCRIPTED cell.
func scriptedCell(scripted bool) string {
	if scripted {
		return "SCRIPTED"
	}
	return "-"
}

// contextModel is the model line's model: its name, marked "(scripted)"
// when the report says it is the scripted one.
func contextModel(name string, scripted bool) string {
	if scripted {
		return name + " (scripted)"
	}
	return name
}
