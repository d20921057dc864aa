package transcript

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

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
)

// render renders session name of d's desk (see Pick) as HTML.
func render(t *testing.T, d *memorytest.Desk, name string) []byte {
	t.Helper()
	s, err := Load(d.Folder, name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := HTML(d.Folder, s, ist(t), memorytest.UTC(t, "2026-03-04T10:00:00Z"), "test")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHTML(t *testing.T) {
	d := memorytest.Populated(t)
	page := string(render(t, d, memorytest.S1))
	for _, want := range []string{
		"<title>Check the tape. · main · " + memorytest.S1 + "</title>",
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
		`<pre class="text">` + memorytest.Summary + `</pre>`,
		"From summaries/2026-03-02.md",
		"tokens <b>723</b> (610 in, 113 out)",
		`<span class="badge state-rolled-over">rolled over</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Self-contained: no scripts, no stylesheets or images fetched, no URLs.
	for _, bad := range []string{"<script", "<link", "src=", "http://", "https://", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
}

// TestHTMLShowsTheSummaryOfTheSession: two sessions of one trading date
// (a manual rollover, then the daily one) each had a summary written; the
// date's summary file holds the later one. The export of the first shows
// the first's summary, from the version kept in history/, not the later
// session's.
func TestHTMLShowsTheSummaryOfTheSession(t *testing.T) {
	s := memorytest.New(t)
	d := memorytest.NewLive(t, s, "2026-03-02T04:00:00Z")
	d.Turn("t1", "Morning: watch NIFTY.")
	morning := d.Router.SessionID()
	if _, err := d.Keeper.RollOver(t.Context(), "manual_rollover"); err != nil {
		t.Fatal(err)
	}
	afternoon := d.Router.SessionID()
	d.Turn("t2", "Afternoon: close the book.")
	d.At("2026-03-02T18:31:00Z") // 00:01 IST, 3 March
	d.Turn("t3", "Good morning.")

	first, ok, err := d.Folder.SessionSummary(morning)
	if err != nil || !ok || !strings.Contains(first.Text, "Morning: watch NIFTY.") {
		t.Fatalf("the morning session's summary = %+v, %v, %v", first, ok, err)
	}
	latest, _, err := d.Folder.ReadSummary(memory.Date{Year: 2026, Month: 3, Day: 2})
	if err != nil || !strings.Contains(latest.Text, "Afternoon: close the book.") {
		t.Fatalf("the date's summary file = %q, %v; want the afternoon's", latest.Text, err)
	}

	for _, tt := range []struct{ id, want, not string }{
		{morning, "Morning: watch NIFTY.", "Afternoon: close the book. -&gt;"},
		{afternoon, "Afternoon: close the book. -&gt;", "Morning: watch NIFTY. -&gt;"},
	} {
		pg := string(render(t, s, tt.id))
		i := strings.Index(pg, `<h2 id="summary">`)
		if i < 0 {
			t.Fatalf("the page of %s has no summary section", tt.id)
		}
		sum := pg[i:]
		if !strings.Contains(sum, tt.want) || strings.Contains(sum, tt.not) {
			t.Errorf("the summary section of %s:\n%s\nwant %q and not %q", tt.id, sum, tt.want, tt.not)
		}
	}
	pg := string(render(t, s, morning))
	if !strings.Contains(pg, "From history/summaries/2026-03-02/") || !strings.Contains(pg, "replaced the date&#39;s summary file since") {
		t.Errorf("the morning's summary does not say it is the version kept in history:\n%s", pg[strings.Index(pg, `<h2 id="summary">`):])
	}
	pg = string(render(t, s, "")) // the active session: no summary yet
	if i := strings.Index(pg, `<h2 id="summary">`); i < 0 || !strings.Contains(pg[i:], "No summary of 2026-03-03 yet") {
		t.Errorf("the active session's page should have no summary")
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

func TestHTMLRendersInChromium(t *testing.T) {
	bin := chromium(t)
	d := memorytest.Populated(t)
	path := filepath.Join(t.TempDir(), "s1.html")
	if err := os.WriteFile(path, render(t, d, memorytest.S1), 0o640); err != nil {
		t.Fatal(err)
	}
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
