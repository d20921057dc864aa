package memory_test

import (
	"os"
	"strings"
	"testing"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/durable/faultfs"
)

// TestReadSessionMentioning: a session that names none of the words asked
// after gives no records (nothing decoded); one that names one, as deskd
// writes it (a trigger id with characters JSON escapes), gives them all;
// a FIFO in the session file's place is refused, not waited on, and so it
// is by ReadSession.
func TestReadSessionMentioning(t *testing.T) {
	f := newFolder(t)
	log, err := f.CreateSession(header("s1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t-1", "a<b&c"} {
		if err := log.Append(memory.Record{Type: memory.RecordMessage, At: utc("2025-01-02T03:31:00Z"), Role: "user", Text: "tick", Trigger: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if recs, ok, err := f.ReadSessionMentioning("s1", []string{"t-2", "other"}); err != nil || ok || recs != nil {
		t.Errorf("no word named: %d records, %v, %v; want none, false", len(recs), ok, err)
	}
	for _, w := range []string{"t-1", "a<b&c"} {
		if recs, ok, err := f.ReadSessionMentioning("s1", []string{"t-9", w}); err != nil || !ok || len(recs) != 3 {
			t.Errorf("%q named: %d records, %v, %v; want all 3, true", w, len(recs), ok, err)
		}
	}

	path := f.SessionPath("s1")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	faultfs.Mkfifo(t, path)
	if _, _, err := f.ReadSessionMentioning("s1", []string{"t-1"}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadSessionMentioning of a FIFO: %v, want a refusal", err)
	}
	if _, err := f.ReadSession("s1"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadSession of a FIFO: %v, want a refusal", err)
	}
}
