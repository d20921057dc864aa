package metrics_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAlertRulesNameServedMetrics: every deskd_ metric the shipped
// alerting rules (systemd/deskd.rules.yml) use is one this package
// serves, so that a renamed or misspelt metric cannot leave an alert that
// never fires. promtool, in CI, checks the rules' syntax and behaviour.
func TestAlertRulesNameServedMetrics(t *testing.T) {
	rules, err := os.ReadFile("../../systemd/deskd.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	literal := regexp.MustCompile(`"(deskd_[a-z_]+)"`)
	for _, p := range sources {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllSubmatch(b, -1) {
			served[string(m[1])] = true
		}
	}
	used := regexp.MustCompile(`\bdeskd_[a-z_]+\b`).FindAllString(string(rules), -1)
	if len(used) < 10 {
		t.Fatalf("the rules name %d deskd_ metrics, want the dozen alerts' worth", len(used))
	}
	for _, name := range used {
		if !served[name] {
			t.Errorf("systemd/deskd.rules.yml uses %s, which desk/metrics does not serve", name)
		}
	}
}
