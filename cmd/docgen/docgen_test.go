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

// TestLinksResolve: every relative link of README.md and docs/*.md names
// a file that exists and, with an #anchor, a heading of that page.
func TestLinksResolve(t *testing.T) {
	bad, err := brokenLinks("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestLinksResolveNoticesABrokenLink: a link to a missing file, to a
// missing heading, and to a heading of the same page are told apart, and
// a link in a code block is not one.
func TestLinksResolveNoticesABrokenLink(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# deskd\n\n## The `deskd` command (CLI)\n\n"+
		"[ok](#the-deskd-command-cli) [ok](docs/A.md#http-api-listen) [ok](docs/A.md#x-1)\n"+
		"[gone](docs/B.md) [no heading](docs/A.md#nope) [no heading here](#nope)\n\n"+
		"```\n[in code](docs/C.md)\n```\n")
	write("docs/A.md", "# A\n\n## HTTP API (`listen`)\n\n## x\n\n## x\n\n[up](../README.md#deskd)\n")
	bad, err := brokenLinks(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:6: docs/B.md: no such file",
		"README.md:6: docs/A.md#nope: no heading of A.md has the anchor #nope",
		"README.md:6: #nope: no heading of README.md has the anchor #nope",
	}
	if strings.Join(bad, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(bad, "\n"), strings.Join(want, "\n"))
	}
}

// TestConfigReferenceHasEveryKey: every key the config loader accepts
// (its only(...) lists) is documented: in docs/CONFIG-REFERENCE.md, from
// the doc comments of package config, or, for a calendar file, in
// docs/CONFIGURATION.md.
func TestConfigReferenceHasEveryKey(t *testing.T) {
	page, err := renderConfigReference("../..")
	if err != nil {
		t.Fatal(err)
	}
	missing, err := missingConfigKeys("../..", page)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Errorf("config key %s", m)
	}
	if !strings.Contains(string(page), "| `schedules[].cron` | `Cron` |") {
		t.Errorf("the reference has no row of schedules[].cron:\n%s", page)
	}
}

// TestConfigReferenceNoticesAnUndocumentedKey: a key the loader accepts
// whose field's comment does not name it is reported, and so is a
// calendar key the hand-written page leaves out.
func TestConfigReferenceNoticesAnUndocumentedKey(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"config", "docs"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := "package config\n\n" +
		"// Config is the main file.\ntype Config struct {\n" +
		"\t// StateDir is the state folder (state_dir, required).\n\tStateDir string\n" +
		"\t// Listen is where the API listens.\n\tListen string\n}\n\n"
	for _, typ := range []string{"Log", "Model", "Prices", "MCPServer", "NATS", "NATSTLS", "NATSTriggers", "NATSEvents", "Cluster", "NotifyTarget", "Desk", "Schedule", "Curator", "MemoryGuard", "Budgets", "Tool", "DeskMCP"} {
		src += "// " + typ + " is a section.\ntype " + typ + " struct {\n\t// X is x (x).\n\tX string\n}\n\n"
	}
	src += "type node struct{}\n\nfunc (node) only(...string) {}\n\n" +
		"func loadMain(n node) { n.only(\"listen\", \"state_dir\", \"x\") }\n\n" +
		"func loadCalendar(n node) { n.only(\"through\", \"weekdays\") }\n"
	if err := os.WriteFile(filepath.Join(root, "config", "config.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "docs", "CONFIGURATION.md"), []byte("```yaml\nthrough: 2026-12-31\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	page, err := renderConfigReference(root)
	if err != nil {
		t.Fatal(err)
	}
	missing, err := missingConfigKeys(root, page)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"listen (checked by loadMain): no field of package config names it in its doc comment",
		"weekdays (checked by loadCalendar): not in docs/CONFIGURATION.md",
	}
	if strings.Join(missing, "\n") != strings.Join(want, "\n") {
		t.Errorf("missing keys:\n%s\nwant:\n%s\npage:\n%s", strings.Join(missing, "\n"), strings.Join(want, "\n"), page)
	}
}
