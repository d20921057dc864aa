package main

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// exportS1 exports the fixture's first session and returns the page.
func exportS1(t *testing.T, s *opsSetup) (path, page string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "s1.html")
	code, out, errOut := runOps(t, s, "export", "main", opsS1, "-o", path)
	if code != 0 {
		t.Fatalf("deskd export: exit %d, stderr %s", code, errOut)
	}
	if !strings.HasPrefix(out, "wrote "+path+": session "+opsS1+" of desk main, 11 records, ") {
		t.Errorf("deskd export printed %q", out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, string(b)
}

func TestExportHTML(t *testing.T) {
	s := newOpsDesk(t)
	path, page := exportS1(t, s)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("export file mode %v, want 0640", fi.Mode().Perm())
	}
	for _, want := range []string{
		"<title>Check the tape. · main · " + opsS1 + "</title>",
		`<section class="msg user" id="e1">`,
		// Everything from the session is escaped, never markup.
		"NIFTY 22,450 at the open. &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;",
		"Bought 1 lot of NIFTY 22500 CE &amp; hedged with &lt;b&gt;puts&lt;/b&gt;.",
		// A tool call with its arguments, and its result.
		`<span class="name">note</span> <span class="muted">tool call call_1</span><pre class="args">{
  &#34;text&#34;: &#34;NIFTY opened flat; hedge early.&#34;
}</pre>`,
		`<section class="msg tool" id="e3">`,
		// A failed tool is styled as an error.
		`<section class="msg tool error" id="e7">`,
		`<span class="badge error">ERROR</span>`,
		"quote: timed out after 10s",
		// Usage per message, model and the scripted badge.
		`<span class="usage">40 in / 8 out tokens · 1.2s</span>`,
		"model <b>offline</b> (scripted)",
		`<span class="badge scripted">SCRIPTED</span>`,
		// The checkpoint, linked from the header, and the day's summary.
		`<section class="msg checkpoint" id="e9">`,
		`<a href="#e9">2026-03-02 09:00:09 IST</a>`,
		"Checkpoint: long NIFTY 22500 CE, hedged.",
		`<h2 id="summary">Summary of 2026-03-02</h2>`,
		`<pre class="text">` + opsSummary + `</pre>`,
		"From summaries/2026-03-02.md",
		"tokens <b>723</b> (610 in, 113 out)",
		`<span class="badge state-rolled-over">rolled over</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the exported page lacks %q", want)
		}
	}
	// Self-contained: no scripts, no stylesheets or images fetched, no URLs.
	for _, bad := range []string{"<script", "<link", "src=", "http://", "https://", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("the exported page contains %q", bad)
		}
	}
}

func TestExportDefaultSession(t *testing.T) {
	s := newOpsDesk(t)
	code, page, errOut := runOps(t, s, "export", "main", "-o", "-")
	if code != 0 {
		t.Fatalf("deskd export -o -: exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{
		"<title>Good morning. Plan the day. · main · " + opsS2 + "</title>",
		`<details class="preamble"><summary>Carries the summary of the previous session, from 2026-03-02</summary><pre class="text">` +
			strings.TrimRight(opsSummary, "\n") + `</pre></details>`,
		`<pre class="text">Good morning. Plan the day.</pre>`,
		`<span class="badge state-active">active</span>`,
		"No summary of 2026-03-03 yet",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the exported active session lacks %q", want)
		}
	}
}

func TestExportRefused(t *testing.T) {
	s := newOpsDesk(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		reason string
	}{
		{"no -o", []string{"export", "main"}, 2, "-o FILE.html is required"},
		{"unknown session", []string{"export", "main", "nosuch", "-o", "-"}, 2, `no session "nosuch"`},
		{"unwritable file", []string{"export", "main", "-o", filepath.Join(t.TempDir(), "no", "such", "dir", "x.html")}, 1, "export session"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runOps(t, s, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.reason) {
				t.Errorf("deskd %v: exit %d, stderr %q; want %d and %q", tt.args, code, errOut, tt.code, tt.reason)
			}
		})
	}
}

// chromium returns the path of the headless browser, skipping the test
// when it is missing, except under CI (CI=true), which installs it.
func chromium(t *testing.T) string {
	t.Helper()
	const path = "/usr/bin/chromium"
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s is missing (.ci/run installs Debian's chromium package): %v", path, err)
		}
		t.Skipf("%s is missing: install Debian's chromium package to run this test", path)
	}
	return path
}

// runChromium runs headless Chromium on url with the extra flags, and
// returns its standard output.
func runChromium(t *testing.T, bin, url string, flags ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,900",
	}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.WaitDelay = 10 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", flags, err, stderr.String())
	}
	return out
}

// near reports whether the colour at (x, y) of img is within 3 of r, g, b.
func near(img image.Image, x, y int, r, g, b uint8) bool {
	cr, cg, cb, _ := img.At(x, y).RGBA()
	d := func(c uint32, want uint8) bool {
		v := int(c>>8) - int(want)
		return v >= -3 && v <= 3
	}
	return d(cr, r) && d(cg, g) && d(cb, b)
}

func TestExportRendersInChromium(t *testing.T) {
	bin := chromium(t)
	s := newOpsDesk(t)
	path, _ := exportS1(t, s)
	url := "file://" + path

	shot := filepath.Join(t.TempDir(), "shot.png")
	runChromium(t, bin, url, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode the screenshot: %v", err)
	}
	bounds := img.Bounds()
	if bounds.Dx() != 1200 || bounds.Dy() != 900 {
		t.Errorf("screenshot is %v, want 1200x900", bounds)
	}
	// The user messages' light blue (#dbeafe) and the assistant messages'
	// light green (#ecfdf5) fill the cards, and the user messages hold
	// text: dark pixels.
	var blue, green int
	box := image.Rectangle{Min: bounds.Max, Max: bounds.Min}
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			switch {
			case near(img, x, y, 0xdb, 0xea, 0xfe):
				blue++
				box = box.Union(image.Rect(x, y, x+1, y+1))
			case near(img, x, y, 0xec, 0xfd, 0xf5):
				green++
			}
		}
	}
	if blue < 20000 || green < 20000 {
		t.Fatalf("the screenshot shows %d light blue and %d light green pixels, want at least 20000 of each: the messages did not render", blue, green)
	}
	// Rows inside a user message are light blue just inside its left edge.
	var dark int
	for y := box.Min.Y; y < box.Max.Y; y++ {
		if !near(img, box.Min.X+4, y, 0xdb, 0xea, 0xfe) {
			continue
		}
		for x := box.Min.X; x < box.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if max(r, g, b)>>8 < 110 {
				dark++
			}
		}
	}
	if dark < 300 {
		t.Errorf("the user messages in %v hold %d dark pixels, want at least 300: no text rendered", box, dark)
	}

	dom := string(runChromium(t, bin, url, "--dump-dom"))
	for _, want := range []string{
		"Check the tape.",
		"NIFTY 22,450 at the open. &lt;script&gt;alert('x')&lt;/script&gt;",
		"Bought 1 lot of NIFTY 22500 CE &amp; hedged with &lt;b&gt;puts&lt;/b&gt;.",
		"NIFTY opened flat; hedge early.",
		"quote: timed out after 10s",
		"Checkpoint: long NIFTY 22500 CE, hedged.",
		"BANKNIFTY quote timed out.",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered DOM lacks %q", want)
		}
	}
	if strings.Contains(dom, "<script") || strings.Contains(dom, "<b>puts") {
		t.Error("text from the session became markup in the rendered DOM")
	}
}
