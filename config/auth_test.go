package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskd/deskd/config"
)

// TestTokenFileKeys: feed_token_file and metrics_token_file are read
// beside auth_token_file (relative to the main file); both are optional.
func TestTokenFileKeys(t *testing.T) {
	c := mustLoad(t, setup(t, baseMain, map[string]string{"desks.d/main.yaml": baseDesk}))
	if c.FeedTokenFile != "" || c.MetricsTokenFile != "" {
		t.Errorf("defaults: feed_token_file %q, metrics_token_file %q; want both unset", c.FeedTokenFile, c.MetricsTokenFile)
	}
	path := setup(t, baseMain+"auth_token_file: op\nfeed_token_file: feed\nmetrics_token_file: scrape\n", map[string]string{
		"desks.d/main.yaml": baseDesk, "op": "operator-token\n", "feed": "feed-token\n", "scrape": "scrape-token\n",
	})
	c = mustLoad(t, path)
	dir := filepath.Dir(path)
	if c.FeedTokenFile != filepath.Join(dir, "feed") || c.MetricsTokenFile != filepath.Join(dir, "scrape") {
		t.Errorf("feed_token_file %q, metrics_token_file %q; want them beside the main file", c.FeedTokenFile, c.MetricsTokenFile)
	}
	for _, p := range []string{c.AuthTokenFile, c.FeedTokenFile, c.MetricsTokenFile} {
		if _, err := config.ReadAuthToken(p); err != nil {
			t.Errorf("ReadAuthToken(%s): %v", p, err)
		}
	}
}

// TestTokenFileProblems: a feed or metrics token file that cannot serve
// is a problem of the main file naming the field, and never the file's
// content; so is one without the operator's token, or one holding the
// same token as another credential.
func TestTokenFileProblems(t *testing.T) {
	const content = "s3cret-feed-token"
	tests := []struct {
		name, main string
		files      map[string]string
		field      string
		reason     []string
	}{
		{"white space", "feed_token_file: tok\n", map[string]string{"tok": " \n\t\n"}, "feed_token_file", []string{"only white space"}},
		{"empty", "metrics_token_file: tok\n", map[string]string{"tok": ""}, "metrics_token_file", []string{"is empty"}},
		{"token not on the first line", "feed_token_file: tok\n", map[string]string{"tok": "\n" + content + "\n"}, "feed_token_file", []string{"first line"}},
		{"missing", "feed_token_file: nope\n", nil, "feed_token_file", []string{"cannot read"}},
		{"a device", "feed_token_file: /dev/zero\n", nil, "feed_token_file", []string{"not a regular file"}},
		{"a folder", "metrics_token_file: sub\n", map[string]string{"sub/x": content}, "metrics_token_file", []string{"not a regular file"}},
		{"too large", "feed_token_file: tok\n", map[string]string{"tok": content + strings.Repeat("x", 64<<10)}, "feed_token_file", []string{"larger than"}},
		{"blank", "feed_token_file: \" \"\n", nil, "feed_token_file", []string{"must not be empty"}},
		{"same as the operator's", "feed_token_file: tok\n", map[string]string{"tok": "operator-token\n"}, "feed_token_file", []string{"same token as auth_token_file"}},
		{"metrics same as the feed's", "feed_token_file: tok\nmetrics_token_file: tok2\n", map[string]string{"tok": content, "tok2": content + "\n"},
			"metrics_token_file", []string{"same token as feed_token_file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"desks.d/main.yaml": baseDesk, "op": "operator-token\n"}
			for k, v := range tt.files {
				files[k] = v
			}
			_, err := config.Load(setup(t, baseMain+"auth_token_file: op\n"+tt.main, files))
			p := oneProblem(t, err, want{"deskd.yaml", tt.field, ""}) // any reason; each of tt.reason below
			for _, r := range tt.reason {
				if !strings.Contains(p.Reason, r) {
					t.Errorf("problem %q, want it to say %q", p.Reason, r)
				}
			}
			if strings.Contains(p.String(), content) || strings.Contains(p.String(), "operator-token") {
				t.Errorf("the problem echoes a token: %q", p.String())
			}
		})
	}
	t.Run("without the operator's token", func(t *testing.T) {
		for _, key := range []string{"feed_token_file", "metrics_token_file"} {
			_, err := config.Load(setup(t, baseMain+key+": tok\n", map[string]string{"desks.d/main.yaml": baseDesk, "tok": content}))
			ps := problemsOf(t, err)
			if len(ps) != 1 || ps[0].Field != key || !strings.Contains(ps[0].Reason, "needs auth_token_file") {
				t.Errorf("%s without auth_token_file: problems\n%v\nwant one saying it needs auth_token_file", key, ps)
			}
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads a file of mode 0")
		}
		path := setup(t, baseMain+"auth_token_file: op\nfeed_token_file: tok\n", map[string]string{"desks.d/main.yaml": baseDesk, "op": "operator-token\n", "tok": content})
		if err := os.Chmod(filepath.Join(filepath.Dir(path), "tok"), 0); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(path)
		ps := problemsOf(t, err)
		if len(ps) != 1 || ps[0].Field != "feed_token_file" || !strings.Contains(ps[0].Reason, "cannot read") {
			t.Errorf("an unreadable feed token: problems\n%v", ps)
		}
	})
}
