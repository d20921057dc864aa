package termview_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/termview"
)

// TestStatusTurnsColumn: deskd status heads the session's count TURNS
// (not EXCHANGES, which reads as stock exchanges), and says "1
// interrupted trigger", "2 interrupted triggers".
func TestStatusTurnsColumn(t *testing.T) {
	var b strings.Builder
	termview.Status(&b, []desk.Status{
		{Name: "main", State: "idle", Exchanges: 7, Turns: 7, QueueLimit: 8,
			Interrupted: []desk.TriggerStatus{{ID: "t1"}}},
		{Name: "fx", State: "idle", Exchanges: 2, Turns: 2, QueueLimit: 8,
			Interrupted: []desk.TriggerStatus{{ID: "t2"}, {ID: "t3"}}},
	})
	out := b.String()
	head, rows, _ := strings.Cut(out, "\n")
	if !strings.Contains(head, "TURNS") || strings.Contains(head, "EXCHANGES") {
		t.Errorf("status header = %q, want TURNS", head)
	}
	col := strings.Index(head, "TURNS")
	if line, _, _ := strings.Cut(rows, "\n"); col < 0 || len(line) <= col || line[col] != '7' {
		t.Errorf("the TURNS column of desk main does not read 7:\n%s", out)
	}
	for _, want := range []string{"desk main: 1 interrupted trigger (", "desk fx: 2 interrupted triggers ("} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// TestStatusJSONTurns: a desk's status in JSON keeps "exchanges" and
// adds "turns", of the same value.
func TestStatusJSONTurns(t *testing.T) {
	var b bytes.Buffer
	if err := termview.JSON(&b, desk.Status{Name: "main", Exchanges: 3, Turns: 3}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["exchanges"] != 3.0 || m["turns"] != 3.0 {
		t.Errorf("status JSON exchanges %v turns %v, want 3 and 3: %s", m["exchanges"], m["turns"], b.String())
	}
}
