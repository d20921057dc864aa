package jsonline_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/deskd/deskd/memory/jsonline"
)

// checkStringAgrees fails t when Str or Plain and encoding/json disagree
// on the JSON value in: Str accepts exactly the valid JSON strings; Plain
// accepts those without escapes, of valid UTF-8, and reads them as
// encoding/json does.
func checkStringAgrees(t *testing.T, in []byte) {
	t.Helper()
	s := jsonline.New(in)
	str := s.Str() && s.End()
	valid := len(in) > 0 && in[0] == '"' && json.Valid(in)
	if str != valid {
		t.Errorf("Str accepts %q: %v; encoding/json finds it a valid string: %v", in, str, valid)
	}
	s = jsonline.New(in)
	v, plain := s.Plain()
	plain = plain && s.End()
	body := in[min(1, len(in)):max(len(in)-1, min(1, len(in)))]
	wantPlain := valid && !bytes.ContainsRune(body, '\\') && utf8.Valid(body)
	if plain != wantPlain {
		t.Errorf("Plain accepts %q: %v, want %v", in, plain, wantPlain)
	}
	if plain {
		var want string
		if err := json.Unmarshal(in, &want); err != nil || string(v) != want {
			t.Errorf("Plain reads %q as %q; encoding/json as %q (%v)", in, v, want, err)
		}
	}
}

// TestStringsOfEveryLength: strings of 0 to 40 bytes, a quote, a
// backslash, a control byte or a multi-byte character at each place, are
// read as encoding/json reads them (the scan goes eight bytes at a time:
// every place in a word, and across words, is tried).
func TestStringsOfEveryLength(t *testing.T) {
	for n := range 41 {
		plain := bytes.Repeat([]byte{'a'}, n)
		checkStringAgrees(t, []byte(`"`+string(plain)+`"`))
		checkStringAgrees(t, []byte(`"`+string(plain))) // unterminated
		for at := range n {
			for _, odd := range []string{`"`, `\`, `\n`, `\u00e9`, `\x`, "\x01", "\x1f", "é", "☃", "\xff", "\x7f", " "} {
				b := append(append(append([]byte{'"'}, plain[:at]...), odd...), plain[at:]...)
				checkStringAgrees(t, append(b, '"'))
			}
		}
	}
}

// FuzzStrings: on any bytes between quotes, Str and Plain agree with
// encoding/json.
func FuzzStrings(f *testing.F) {
	for _, seed := range []string{"plain", "esc\\\"aped", "ctl\x01", "é ☃ and some more text", "\xff\xfe", "0123456789abcdef\\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkStringAgrees(t, append(append([]byte{'"'}, body...), '"'))
	})
}
