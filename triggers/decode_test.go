package triggers_test

import (
	"strings"
	"testing"

	"github.com/deskd/deskd/triggers"
)

// TestDecodeRequestWordsTypeErrors: a body of the wrong shape is refused
// in an operator's words (which field, what it should be, what it is),
// never with a Go type.
func TestDecodeRequestWordsTypeErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"text a number", `{"text": 5}`, "field text: want a string, got a number"},
		{"text an object", `{"text": {"a": 1}}`, "field text: want a string, got an object"},
		{"kind true", `{"text": "x", "kind": true}`, "field kind: want a string, got true or false"},
		{"id a list", `{"text": "x", "id": ["a"]}`, "field id: want a string, got an array"},
		{"body a list", `["x"]`, "want a JSON object, got an array"},
		{"body a string", `"x"`, "want a JSON object, got a string"},
		{"body a number", `5`, "want a JSON object, got a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := triggers.DecodeRequest([]byte(tt.body))
			if err == nil {
				t.Fatalf("DecodeRequest(%s) succeeded", tt.body)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("DecodeRequest(%s) = %q, want it to say %q", tt.body, msg, tt.want)
			}
			for _, goWord := range []string{"triggers.", "Request", "Kind", "map[", "json:"} {
				if strings.Contains(msg, goWord) {
					t.Errorf("DecodeRequest(%s) = %q names a Go type (%q)", tt.body, msg, goWord)
				}
			}
		})
	}
}

// TestDecodeRequestRefusesInvalidUTF8: bytes that are not UTF-8 in any
// string of the body are refused, naming the field, instead of being
// replaced by U+FFFD (which made the text's UTF-8 check dead code).
func TestDecodeRequestRefusesInvalidUTF8(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"in text", "{\"text\": \"buy \xff\xfe now\"}", "field text: not valid UTF-8"},
		{"a cut sequence in text", "{\"text\": \"caf\xc3\"}", "field text: not valid UTF-8"},
		{"in id", "{\"text\": \"x\", \"id\": \"a\xffb\"}", "field id: not valid UTF-8"},
		{"in source", "{\"source\": \"feed\xc0\", \"text\": \"x\"}", "field source: not valid UTF-8"},
		{"in a key", "{\"te\xffxt\": \"x\"}", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := triggers.DecodeRequest([]byte(tt.body))
			if err == nil {
				t.Fatalf("DecodeRequest accepted %q as %+v", tt.body, r)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DecodeRequest(%q) = %q, want it to say %q", tt.body, err, tt.want)
			}
		})
	}
	if r, err := triggers.DecodeRequest([]byte(`{"text": "café \u00e9 ok"}`)); err != nil || r.Text != "café é ok" {
		t.Errorf("valid UTF-8 and escapes: %+v, %v", r, err)
	}
}
