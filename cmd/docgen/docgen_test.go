package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPagesAreCurrent: every generated page in docs/ is what the code
// renders now; a stale one fails with the command that mends it.
func TestPagesAreCurrent(t *testing.T) {
	stale, err := generate("../..", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range stale {
		t.Errorf("%s is stale: the code that defines it changed; run go run ./cmd/docgen and commit the page", p)
	}
}

// TestEventsPageHasEveryTopic: the events page lists each topic the
// catalogue declares with its payload's fields, and notices a change.
func TestEventsPageHasEveryTopic(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "desk", "event")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := `package event

import "time"

// Header is what every event carries.
type Header struct {
	At time.Time ` + "`json:\"at\"`" + `
}

// DeskStarted: a desk's loop is running.
type DeskStarted struct {
	Header
	// Model is the desk's model.
	Model string ` + "`json:\"model\"`" + `
	Scripted bool ` + "`json:\"scripted,omitempty\"`" + `
}

// Topic returns "desk.started".
func (DeskStarted) Topic() string { return "desk.started" }
`
	if err := os.WriteFile(filepath.Join(dir, "catalogue.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	page, err := renderEvents(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### desk.started", "a desk's loop is running.", "| `model` | string | Model is the desk's model. |", "| `scripted` (when set) | boolean |", "| `at` | string (RFC 3339 time) |", "1 topics."} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the events page lacks %q:\n%s", want, page)
		}
	}
}
