package triggers_test

// Fuzz targets of the triggers package's decoders, through its public API:
// the trigger body (DecodeRequest, which the HTTP API and the spool use),
// a spool file (a Spool opened on an inbox holding it), the trigger ledger
// (OpenLedger on a file of fuzzed bytes), cron expressions (ParseSpec) and
// the framing of a market trigger (Prompt). The seed corpora are in
// testdata/fuzz/<FuzzName>/; `go test` runs them as regression tests.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/triggers"
)

// FuzzDecodeRequest: DecodeRequest never panics; what it accepts is a
// valid request (text valid UTF-8, not blank, within MaxBody; kind market
// or manual; a usable id) that survives a round trip through JSON
// unchanged; what it refuses comes with a one-line, non-empty message.
func FuzzDecodeRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := triggers.DecodeRequest(body)
		if err != nil {
			fzCheckMessage(t, "DecodeRequest", err)
			return
		}
		fzCheckRequest(t, r)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", r, err)
		}
		again, err := triggers.DecodeRequest(b)
		if err != nil {
			t.Fatalf("DecodeRequest accepted %q as %+v, but refuses its re-encoding %s: %v", body, r, b, err)
		}
		if again != r {
			t.Fatalf("round trip changed the request:\n first %+v\nsecond %+v", r, again)
		}
		tr := r.Trigger("main", "api")
		if tr.Text != r.Text || tr.Kind != r.Kind || tr.ID != r.ID || tr.Key != r.Key || tr.Desk != "main" {
			t.Fatalf("Trigger() = %+v from %+v", tr, r)
		}
		if want := cmpOr(r.Source, "api"); tr.Source != want {
			t.Fatalf("Trigger().Source = %q, want %q", tr.Source, want)
		}
	})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fzCheckMessage fails unless err's message is non-empty, valid UTF-8 and
// one line (it is served as {"error": ...} and written as a .reason file).
func fzCheckMessage(t *testing.T, what string, err error) {
	t.Helper()
	msg := err.Error()
	switch {
	case strings.TrimSpace(msg) == "":
		t.Fatalf("%s refused with an empty message (%#v)", what, err)
	case !utf8.ValidString(msg):
		t.Fatalf("%s refused with a message that is not UTF-8: %q", what, msg)
	case strings.ContainsAny(msg, "\r\n"):
		t.Fatalf("%s refused with a message of several lines: %q", what, msg)
	}
}

// fzCheckRequest fails unless r is what an accepted body may decode to.
func fzCheckRequest(t *testing.T, r triggers.Request) {
	t.Helper()
	switch {
	case !utf8.ValidString(r.Text):
		t.Fatalf("accepted text is not UTF-8: %q", r.Text)
	case strings.TrimSpace(r.Text) == "":
		t.Fatalf("accepted a blank text: %q", r.Text)
	case len(r.Text) > triggers.MaxBody:
		t.Fatalf("accepted a text of %d bytes, more than MaxBody (%d)", len(r.Text), triggers.MaxBody)
	case r.Kind != triggers.Market && r.Kind != triggers.Manual:
		t.Fatalf("accepted kind %q", r.Kind)
	case r.ID != "" && triggers.CheckID(r.ID) != nil:
		t.Fatalf("accepted id %q: %v", r.ID, triggers.CheckID(r.ID))
	case len(r.Key) > triggers.MaxKeyLen || strings.ContainsFunc(r.Key, unicode.IsControl):
		t.Fatalf("accepted key %q", r.Key)
	case len(r.Source) > triggers.MaxKeyLen || strings.ContainsFunc(r.Source, unicode.IsControl):
		t.Fatalf("accepted source %q", r.Source)
	}
}

// fzSpoolName makes a usable inbox file name of a fuzzed string: a name
// the spool takes (*.json, not hidden) that the file system allows.
func fzSpoolName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == 0 {
			return '_'
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200]
	}
	if s == "" || s[0] == '.' {
		s = "f" + s
	}
	return s + ".json"
}

// FuzzSpoolFile: a Spool opened on an inbox holding one file of fuzzed
// name and bytes never panics and loses nothing. The file ends up in
// exactly one place: still in the inbox (it is incomplete JSON, seen once),
// in processed/ after one Submit of the request DecodeFeedRequest makes of it
// (with an id that CheckID accepts, the same one every time), or in
// rejected/ with a .reason file holding the refusal, and Submit not called.
// Its bytes are never changed.
func FuzzSpoolFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		name = fzSpoolName(name)
		root := t.TempDir()
		inbox := filepath.Join(root, "main")
		if err := os.MkdirAll(inbox, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(inbox, name), data, 0o640); err != nil {
			t.Skipf("the file system refuses the name %q: %v", name, err)
		}
		var submitted []triggers.Request
		var rejected []string
		sp := &triggers.Spool{
			Dir: root, Desks: []string{"main"}, Clock: clock.NewFake(t0),
			Submit: func(desk, file string, r triggers.Request) error {
				if desk != "main" || file != name {
					t.Errorf("Submit(%q, %q), want (main, %q)", desk, file, name)
				}
				submitted = append(submitted, r)
				return nil
			},
			Rejected: func(desk, file, reason string) { rejected = append(rejected, reason) },
			Failed:   func(desk, file string, err error) { t.Errorf("spool failed on %q: %v", file, err) },
		}
		if err := sp.Open(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		sp.Run(ctx) // returns at once, closing the watcher

		where := map[string]string{
			"inbox": filepath.Join(inbox, name), "processed": filepath.Join(inbox, triggers.ProcessedDir, name),
			"rejected": filepath.Join(inbox, triggers.RejectedDir, name),
		}
		var found []string
		for place, p := range where {
			b, err := os.ReadFile(p)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, data) {
				t.Fatalf("the file in %s holds %q, the feed wrote %q", place, b, data)
			}
			found = append(found, place)
		}
		if len(found) != 1 {
			t.Fatalf("the file is in %v, want exactly one place", found)
		}

		want, derr := triggers.DecodeFeedRequest(data)
		switch {
		case len(data) > triggers.MaxBody:
			derr = errors.New("too large")
		case errors.Is(derr, triggers.ErrIncomplete):
			if found[0] != "inbox" || len(submitted)+len(rejected) != 0 {
				t.Fatalf("incomplete JSON %q: in %s, submitted %v, rejected %q; want it left in the inbox", data, found[0], submitted, rejected)
			}
			return
		}
		if derr != nil {
			if found[0] != "rejected" || len(submitted) != 0 || len(rejected) != 1 {
				t.Fatalf("refused body %q (%v): in %s, submitted %v, rejected %q", data, derr, found[0], submitted, rejected)
			}
			fzCheckMessage(t, "the spool", errors.New(rejected[0]))
			reason, err := os.ReadFile(where["rejected"] + triggers.ReasonSuffix)
			if err != nil || string(reason) != rejected[0]+"\n" {
				t.Fatalf(".reason file = %q, %v; want %q", reason, err, rejected[0]+"\n")
			}
			return
		}
		if found[0] != "processed" || len(submitted) != 1 || len(rejected) != 0 {
			t.Fatalf("good body %q: in %s, submitted %v, rejected %q", data, found[0], submitted, rejected)
		}
		got := submitted[0]
		if err := triggers.CheckID(got.ID); err != nil {
			t.Fatalf("the spool submitted id %q: %v", got.ID, err)
		}
		if want.ID != "" && got.ID != want.ID {
			t.Fatalf("the spool submitted id %q, the file says %q", got.ID, want.ID)
		}
		if want.ID == "" && !strings.HasPrefix(got.ID, "inbox-") {
			t.Fatalf("the spool made id %q, want inbox-...", got.ID)
		}
		if want.Source == "" {
			want.Source = "inbox:" + name
		}
		want.ID = got.ID
		if got != want {
			t.Fatalf("the spool submitted %+v, want %+v", got, want)
		}
		// The same file taken again (a crash before the move) gets the same id.
		if err := os.Rename(where["processed"], where["inbox"]); err != nil {
			t.Fatal(err)
		}
		if err := sp.Open(); err != nil {
			t.Fatal(err)
		}
		sp.Run(ctx)
		if len(submitted) != 2 || submitted[1] != submitted[0] {
			t.Fatalf("taken twice, the spool submitted %+v", submitted)
		}
	})
}

// fzProbe is the record FuzzOpenLedger appends.
func fzProbe() triggers.Record {
	tr := triggers.Trigger{ID: "fuzz-probe", Desk: "main", Kind: triggers.Market, Text: "probe", At: t0, Source: "fuzz"}
	return triggers.Record{At: t0, ID: tr.ID, State: triggers.StateQueued, Trigger: &tr}
}

// FuzzOpenLedger: OpenLedger on a file of any bytes never panics nor
// fails; after it, one Append and a reopen, the appended record is there
// (a torn tail must not swallow it), the reopened ledger knows exactly what
// the first one knew after the Append, and it cut nothing more.
func FuzzOpenLedger(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		path := ledgerFile(t, data)
		l, err := triggers.OpenLedger(path)
		if err != nil {
			t.Fatalf("OpenLedger: %v", err)
		}
		torn, records := l.Torn(), l.Records()
		if err := l.Append(fzProbe()); err != nil {
			t.Fatalf("Append: %v", err)
		}
		unfinished, n := l.Unfinished(), l.Len()
		probe, _ := l.Get("fuzz-probe")
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}

		l2, err := triggers.OpenLedger(path)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer l2.Close()
		after, _ := os.ReadFile(path)
		it, ok := l2.Get("fuzz-probe")
		if !ok || it.State != triggers.StateQueued || it.Trigger.Text != "probe" {
			t.Fatalf("after open + Append + reopen, the appended record is lost: Get = %+v, %v\nfile before: %q\nfile after:  %q", it, ok, data, after)
		}
		if got := l2.Records(); got != records+1 {
			t.Fatalf("the reopened ledger holds %d records, want %d (%d read + the appended one)\nfile before: %q\nfile after:  %q", got, records+1, records, data, after)
		}
		if got := l2.Torn(); got > torn {
			t.Fatalf("reopen found %d bad lines, the first open %d: the first open left damage behind", got, torn)
		}
		if l2.Len() != n {
			t.Fatalf("the reopened ledger knows %d triggers, the first one %d: the first open kept what its file lost\nfile before: %q\nfile after:  %q", l2.Len(), n, data, after)
		}
		if got := l2.Unfinished(); !reflect.DeepEqual(got, unfinished) {
			t.Fatalf("reopened ledger's unfinished triggers differ:\n got %+v\nwant %+v", got, unfinished)
		}
		if !reflect.DeepEqual(it, probe) {
			t.Fatalf("after open + Append + reopen, the appended record's trigger differs:\n got %+v\nwant %+v\nfile before: %q\nfile after:  %q", it, probe, data, after)
		}
	})
}

// FuzzParseSpec: ParseSpec never panics; a spec it accepts fires (its
// Next is strictly after the instant asked about, in the time zone asked
// for, or zero only when there is no later slot), and its String is the
// expression.
func FuzzParseSpec(f *testing.F) {
	ist, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr string, unix int64) {
		spec, err := triggers.ParseSpec(expr, ist)
		if err != nil {
			// robfig/cron echoes a bad descriptor or field raw (line breaks,
			// bytes that are not UTF-8): config, which shows the message,
			// makes it one line (FuzzLoad checks that)
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("ParseSpec refused %q with an empty message", expr)
			}
			return
		}
		if spec.String() != expr {
			t.Fatalf("String() = %q, want %q", spec.String(), expr)
		}
		probe := time.Date(2026, 1, 1, 0, 0, 0, 0, ist)
		if next := spec.Next(probe); !next.After(probe) {
			t.Fatalf("%q accepted, but Next(%v) = %v", expr, probe, next)
		}
		// any instant from 1970 to 2100
		at := time.Unix(int64(uint64(unix)%(130*365*24*3600)), 0)
		next := spec.Next(at)
		if next.IsZero() {
			return
		}
		if !next.After(at) {
			t.Fatalf("%q: Next(%v) = %v, not after", expr, at, next)
		}
		if next.Location() != ist {
			t.Fatalf("%q: Next is in %v, want Asia/Kolkata", expr, next.Location())
		}
		if next2 := spec.Next(next); !next2.IsZero() && !next2.After(next) {
			t.Fatalf("%q: Next(%v) = %v, not after", expr, next, next2)
		}
	})
}

// fzTag matches what a reader could take for an opening or closing
// market_event tag: any case, any Unicode spacing or invisible characters
// around the slash.
var fzTag = regexp.MustCompile(`(?i)<[\s\p{Z}\p{Cc}\p{Cf}]*(/?)[\s\p{Z}\p{Cc}\p{Cf}]*market_event`)

// FuzzPrompt: a market trigger's text, id, source and key cannot open or
// close the <market_event> block: Prompt's output has exactly one opening
// tag, at its start or after the note of the events it replaced, and one
// closing tag, at its end; attribute values hold no quote, angle bracket
// or line break; EventText gives back a text that holds no tag and does
// not end in a line break. Other kinds pass unchanged.
func FuzzPrompt(f *testing.F) {
	f.Fuzz(func(t *testing.T, text, id, source, key string, merged int, manual bool) {
		tr := triggers.Trigger{ID: id, Desk: "main", Kind: triggers.Market, Text: text, Source: source, Key: key, Merged: merged % 100, At: t0}
		if manual {
			tr.Kind = triggers.Manual
			if got := triggers.Prompt(tr); got != text {
				t.Fatalf("Prompt of a manual trigger = %q, want its text %q", got, text)
			}
			return
		}
		out := triggers.Prompt(tr)
		if !strings.HasPrefix(out, "<market_event ") && !(tr.Merged > 0 && strings.HasPrefix(out, "[This event replaced ")) {
			t.Fatalf("Prompt does not start with the opening tag (or the note of the events it replaced): %q", out)
		}
		if !strings.HasSuffix(out, "\n</market_event>") {
			t.Fatalf("Prompt does not end with the closing tag: %q", out)
		}
		tags := fzTag.FindAllStringSubmatchIndex(out, -1)
		if len(tags) != 2 || out[tags[0][2]:tags[0][3]] != "" || out[tags[1][2]:tags[1][3]] != "/" ||
			tags[1][0] != len(out)-len("</market_event>") {
			t.Fatalf("Prompt has %d tags, want one opening and the closing one at the end: %q", len(tags), out)
		}
		open := out[tags[0][0]:]
		head, _, ok := strings.Cut(open, "\n")
		if !ok || !strings.HasSuffix(head, `>`) {
			t.Fatalf("the opening tag is not one line ending in >: %q", head)
		}
		attrs := strings.TrimSuffix(strings.TrimPrefix(head, "<market_event "), `>`)
		if strings.ContainsAny(strings.ReplaceAll(attrs, `="`, ""), "<>") {
			t.Fatalf("the opening tag's attributes hold an angle bracket: %q", head)
		}
		if got := strings.Count(head, `"`); got%2 != 0 {
			t.Fatalf("the opening tag has %d quotes: %q", got, head)
		}
		own, ok := triggers.EventText(out)
		if !ok || fzTag.MatchString(own) || strings.HasSuffix(own, "\n") {
			t.Fatalf("EventText(%q) = %q, %v: want the text, without a tag or a final line break", out, own, ok)
		}
		if !fzTag.MatchString(text) && own != strings.TrimRight(text, "\n") {
			t.Fatalf("EventText = %q, want the trigger's text %q", own, text)
		}
	})
}
