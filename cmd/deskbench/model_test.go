package main

import "testing"

// TestLastMarkerIsTheLastMessages: a request is for the marker of its
// last message; one whose last message holds none (a compaction's flush
// turn or summary, which carry the history) is for none, and a marker
// in a later field than the messages is not taken.
func TestLastMarkerIsTheLastMessages(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"messages":[{"content":"market event dkb-1-1","role":"user"},{"content":"noted","role":"assistant"},{"content":"market event dkb-1-2: check","role":"user"}],"model":"bench"}`, "dkb-1-2"},
		{`{"messages":[{"content":"market event dkb-1-1","role":"user"},{"content":"noted","role":"assistant"},{"content":"Write your notes now.","role":"user"}],"model":"bench"}`, ""},
		{`{"messages":[{"content":"quoted {\"content\":\"x\"} dkb-1-3 then","role":"user"}]}`, "dkb-1-3"},
		{`no messages, a marker dkb-9-9`, "dkb-9-9"},
	} {
		if got := lastMarker([]byte(c.body)); got != c.want {
			t.Errorf("lastMarker(%s) = %q, want %q", c.body, got, c.want)
		}
	}
}
