package transcript_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/memorytest"
	"github.com/deskd/deskd/memory/transcript"
)

func TestEntryJSON(t *testing.T) {
	e := transcript.Entry{Kind: transcript.Assistant, At: time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC), Model: "offline", Scripted: true,
		Usage: &memory.Usage{InputTokens: 40, OutputTokens: 8}, Duration: 1200 * time.Millisecond,
		Calls: []transcript.Call{{ID: "call_1", Name: "note", Args: "{}"}}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"assistant","at":"2026-03-02T04:00:00Z","model":"offline","scripted":true,"usage":{"input_tokens":40,"output_tokens":8},` +
		`"calls":[{"id":"call_1","name":"note","args":"{}"}],"duration_ms":1200}`
	if string(b) != want {
		t.Fatalf("json.Marshal(entry) =\n%s\nwant\n%s", b, want)
	}
	var back transcript.Entry
	if err := json.Unmarshal(b, &back); err != nil || back.Duration != e.Duration || back.Model != "offline" || len(back.Calls) != 1 {
		t.Fatalf("json.Unmarshal = %+v, %v", back, err)
	}
	if b, _ := json.Marshal(transcript.Entry{Kind: transcript.User}); strings.Contains(string(b), "duration_ms") || string(b) != `{"kind":"user"}` {
		t.Fatalf("an empty entry's JSON = %s, want only its kind", b)
	}
}

func TestPickListsAtMostFive(t *testing.T) {
	var infos []memory.SessionInfo
	for _, id := range []string{"s1", "s2", "s3", "s4", "s5", "s6", "s7"} {
		infos = append(infos, memory.SessionInfo{ID: id})
	}
	_, err := transcript.Pick("main", infos, "s")
	if err == nil || !strings.Contains(err.Error(), "s1, s2, s3, s4, s5, and 2 more") {
		t.Fatalf("Pick(s) = %v; want five ids and 2 more", err)
	}
}

// TestFind: Find picks a session of the folder by name, without its
// records: "" is the active one, a unique prefix the one it begins; a
// desk with no sessions, or a name that names none, is Pick's error.
func TestFind(t *testing.T) {
	d := memorytest.Populated(t)
	tests := []struct {
		name, arg, want string
		err             error
	}{
		{"current", "", memorytest.S2, nil},
		{"whole id", memorytest.S1, memorytest.S1, nil},
		{"unique prefix", memorytest.S1[:10], memorytest.S1, nil},
		{"none", "nosuch", "", transcript.ErrUnknownSession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := transcript.Find(d.Folder, tt.arg)
			if !errors.Is(err, tt.err) || info.ID != tt.want {
				t.Errorf("Find(%q) = %q, %v; want %q, %v", tt.arg, info.ID, err, tt.want, tt.err)
			}
		})
	}
	if _, err := transcript.Find(memorytest.New(t).Folder, ""); !errors.Is(err, transcript.ErrNoSessions) {
		t.Errorf("Find of a desk with no sessions = %v, want ErrNoSessions", err)
	}
}
