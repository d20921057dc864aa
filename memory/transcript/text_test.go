package transcript

import (
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory/memorytest"
)

// ist is the fixture's trading zone.
func ist(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// text returns session name of d's desk (see Pick) as WriteText writes it.
func text(t *testing.T, d *memorytest.Desk, name string, full bool) string {
	t.Helper()
	s, err := Load(d.Folder, name)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteText(&b, s, ist(t), full); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteText(t *testing.T) {
	d := memorytest.Populated(t)
	out := text(t, d, memorytest.S1, false)
	for _, want := range []string{
		"desk main, session " + memorytest.S1 + ", trading date 2026-03-02\n",
		"title: Check the tape.\n",
		"state: rolled over; turns 2; tokens 723 (610 in, 113 out)\n",
		"SCRIPTED: answers in this session come from the offline scripted model",
		"--- 2026-03-02 09:00:01 IST  user · schedule · trigger open@1\nCheck the tape.\nNIFTY 22,450 at the open. <script>alert('x')</script>\n",
		"assistant · offline (scripted) SCRIPTED · 40 in / 8 out tokens · 1.2s\n",
		`-> tool call note (call_1): { "text": "NIFTY opened flat; hedge early." }`,
		"tool result note (call_1)",
		"tool result quote (call_2) · ERROR\nquote: timed out after 10s\n",
		"checkpoint (the exchanges before it were summarised into this)\nCheckpoint: long NIFTY 22500 CE, hedged.\n",
		"event summary · offline (scripted) SCRIPTED · 200 in / 30 out tokens\n" + memorytest.Summary,
		"Bought 1 lot of NIFTY 22500 CE & hedged with <b>puts</b>.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the transcript lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteTextFoldsTheCarriedSummary(t *testing.T) {
	d := memorytest.Populated(t)
	out := text(t, d, memorytest.S2, false)
	if !strings.Contains(out, "[carries the summary of the previous session, from 2026-03-02: 2 lines; --full prints it]") ||
		strings.Contains(out, "BANKNIFTY quote timed out.") {
		t.Errorf("the transcript should fold the summary the first message carries:\n%s", out)
	}
	full := text(t, d, memorytest.S2, true)
	if !strings.Contains(full, "[summary of the previous session, from 2026-03-02:]\n"+memorytest.Summary+"[end of the summary]\nGood morning.") {
		t.Errorf("the full transcript does not print the carried summary:\n%s", full)
	}
}
