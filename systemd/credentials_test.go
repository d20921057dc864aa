package systemd_test

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCredentialNamesMatchTheUnit: every ${CREDENTIALS_DIRECTORY}/NAME that
// the guides and examples tell an operator to write names a credential the
// shipped unit loads (LoadCredential=NAME), so that following an example
// under the unit never gives a key file that does not exist.
func TestCredentialNamesMatchTheUnit(t *testing.T) {
	unit, err := os.ReadFile("deskd.service")
	if err != nil {
		t.Fatal(err)
	}
	loaded := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^LoadCredential=([^:\s]+)`).FindAllSubmatch(unit, -1) {
		loaded[string(m[1])] = true
	}
	if !loaded["deskd.openai_api_key"] {
		t.Fatalf("the unit loads %v, want deskd.openai_api_key among them", loaded)
	}

	use := regexp.MustCompile(`\$\{?CREDENTIALS_DIRECTORY\}?/([A-Za-z0-9._-]+)`)
	checked := 0
	check := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range use.FindAllStringSubmatch(line, -1) {
				checked++
				if !loaded[m[1]] {
					t.Errorf("%s:%d names credential %q, which systemd/deskd.service does not load (it loads %v)", path, i+1, m[1], slices.Sorted(maps.Keys(loaded)))
				}
			}
		}
	}
	for _, root := range []string{"../README.md", "README.md", "deskd.service", "../docs", "../examples"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && d.Name() == "node_modules":
				return filepath.SkipDir
			case d.IsDir():
				return nil
			case strings.HasSuffix(p, ".md"), strings.HasSuffix(p, ".yaml"), strings.HasSuffix(p, ".service"):
				check(p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 4 {
		t.Errorf("found %d uses of ${CREDENTIALS_DIRECTORY} in the guides and examples, want at least 4: has the pattern gone stale?", checked)
	}
}
