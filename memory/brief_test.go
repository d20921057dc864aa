package memory_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/deskd/deskd/memory"
)

// briefOf keeps the fields ReadSessionBrief promises of a record.
func briefOf(r memory.Record) memory.Record {
	return memory.Record{Type: r.Type, At: r.At, Role: r.Role, Trigger: r.Trigger, Model: r.Model, Provider: r.Provider,
		Scripted: r.Scripted, Silent: r.Silent, Usage: r.Usage, Cost: r.Cost, ForkedFrom: r.ForkedFrom, ToolCalls: r.ToolCalls}
}

// briefLines are session lines as deskd writes them and lines of other
// forms, each a case where ReadSessionBrief and ReadSessionTail must agree.
func briefLines(t testing.TB) []string {
	at := time.Date(2026, 3, 2, 4, 0, 0, 123456789, time.FixedZone("IST", 19800))
	written := []memory.Record{
		{Type: memory.RecordHeader, At: at, Session: "s1", Desk: "d", Date: "2026-03-02", Parent: "s0", ForkedFrom: "s0"},
		{Type: memory.RecordMessage, At: at, Role: "user", Trigger: "t1", Kind: "market", Text: "<market_event> \"quoted\"\n\u00e9 \u2028 \\ end"},
		{Type: memory.RecordMessage, At: at, Role: "assistant", Trigger: "t1", Text: "noted", Model: "m", Provider: "openai",
			Usage: &memory.Usage{InputTokens: 1200, OutputTokens: 3, CachedTokens: 1000, CacheWriteTokens: 7}, Cost: 0.00125, DurationMS: 812, Truncated: true},
		{Type: memory.RecordMessage, At: at, Role: "assistant", Trigger: "t1", Model: "m", Provider: "scripted", Scripted: true,
			ToolCalls: json.RawMessage(`[{"id":"c1","name":"note","arguments":{"text":"x"}}]`)},
		{Type: memory.RecordMessage, At: at, Role: "tool", Trigger: "t1", ToolCallID: "c1", ToolName: "note", Text: "failed", IsError: true},
		{Type: memory.RecordMessage, At: at, Role: "user", Trigger: "t2", Silent: true, ForkedFrom: "s0"},
		{Type: memory.RecordEvent, At: at, Kind: "request.sent", Data: json.RawMessage(`{"model":"m"}`)},
		{Type: memory.RecordCheckpoint, At: at, Text: "summary", Usage: &memory.Usage{InputTokens: -1}, Cost: -2.5e-7},
	}
	var lines []string
	for _, r := range written {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	return append(lines,
		`{"type":"message","text":5}`,                                      // a field of the wrong type: bad
		`{"type":"message","Text":"x","ROLE":"user"}`,                      // keys in another case: encoding/json takes them
		`{"type":"mess\u0061ge","role":"us\"er"}`,                          // escapes in kept strings
		`{"type":"message","at":null,"usage":null}`,                        // nulls
		`{"type":"message","cost":1e999}`,                                  // out of a float64's range: bad
		`{"type":"message","cost":-0.5E+3,"duration_ms":0}`,                // numbers of other forms
		`{"type":"message","cost":01}`,                                     // not JSON
		`{"type":"message","usage":{"input_tokens":12345678901234567890}}`, // out of an int's range: bad
		`{"type":"message","usage":{"input_tokens":1,"input_tokens":2}}`,   // a key twice
		`{"type":"message","duration_ms":1.5}`,                             // a fraction for an int: bad
		`{"type":"message","role":"user","role":"assistant"}`,
		`{"type":""}`,                                     // no type: bad
		`{"type":"message"} {"type":"message"}`,           // two values on a line: bad
		`{"type":"message","scripted":1}`,                 // a number for a bool: bad
		`{"type":"message","at":"2026-13-01T00:00:00Z"}`,  // not a time: bad
		"{\"type\":\"message\",\"role\":\"\xff\"}",        // not UTF-8 in a kept string
		`  {"type" : "message" , "silent" : true }  `,     // white space
		`{"type":"message","tool_calls":null,"data":[1]}`, // fields it does not read
		`{"type":"message","unknown":{"a":[1,2]}}`,        // a key Record does not have
		`[1,2]`,
		`{"type":"message","text":"\ud800"}`, // a lone surrogate
		`{"type":"message","text":"a\x01b"}`, // a control character: bad
	)
}

// sameBriefs checks ReadSessionBrief of session id against ReadSessionTail
// from offset: the same records (as briefs), End, Clean and ok.
func sameBriefs(t testing.TB, f *memory.Folder, id string, offset int64) {
	t.Helper()
	whole, okWhole, errWhole := f.ReadSessionTail(id, offset)
	var briefs []memory.Record
	brief, okBrief, errBrief := f.ReadSessionBrief(id, offset, func(r memory.Record) { briefs = append(briefs, r) })
	if brief.Records != nil {
		t.Errorf("ReadSessionBrief kept %d records in its tail, want none (each has them)", len(brief.Records))
	}
	if (errWhole == nil) != (errBrief == nil) || okWhole != okBrief {
		t.Fatalf("ReadSessionBrief = %v, %v; ReadSessionTail = %v, %v", okBrief, errBrief, okWhole, errWhole)
	}
	if brief.End != whole.End || brief.Clean != whole.Clean {
		t.Errorf("ReadSessionBrief ends at %d (clean %v), ReadSessionTail at %d (clean %v)", brief.End, brief.Clean, whole.End, whole.Clean)
	}
	want := make([]memory.Record, 0, len(whole.Records))
	for _, r := range whole.Records {
		want = append(want, briefOf(r))
	}
	if len(briefs) != len(want) {
		t.Fatalf("ReadSessionBrief found %d records, ReadSessionTail %d", len(briefs), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(briefs[i], want[i]) {
			t.Errorf("record %d: ReadSessionBrief gives\n%+v\nReadSessionTail's brief is\n%+v", i, briefs[i], want[i])
		}
	}
}

// TestReadSessionBrief: every line deskd writes, and lines of other
// forms, are read by ReadSessionBrief as ReadSessionTail reads them (the
// same good and bad lines, each good one's brief the same), one at a time
// and all together, with a torn tail and without.
func TestReadSessionBrief(t *testing.T) {
	f := newFolder(t)
	path := f.SessionPath("s1")
	lines := briefLines(t)
	all := ""
	for _, l := range lines {
		writeFile(t, path, l+"\n")
		sameBriefs(t, f, "s1", 0)
		all += l + "\n"
	}
	writeFile(t, path, all)
	sameBriefs(t, f, "s1", 0)
	sameBriefs(t, f, "s1", int64(len(lines[0])+1))
	whole, _, err := f.ReadSessionTail("s1", 0)
	if err != nil || len(whole.Records) < 12 {
		t.Fatalf("ReadSessionTail found %d good records of %d lines, %v: the cases test too little", len(whole.Records), len(lines), err)
	}
	writeFile(t, path, all+`{"type":"message","te`)
	sameBriefs(t, f, "s1", 0)
}

// FuzzReadSessionBrief: for any line, ReadSessionBrief agrees with
// ReadSessionTail.
func FuzzReadSessionBrief(f *testing.F) {
	for _, l := range briefLines(f) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		folder := newFolder(t)
		writeFile(t, folder.SessionPath("s1"), line)
		sameBriefs(t, folder, "s1", 0)
	})
}
