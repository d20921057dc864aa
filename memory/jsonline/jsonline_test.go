package jsonline_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/deskd/deskd/memory/jsonline"
)

// TestScannerAgreesWithEncodingJSON: each value a Scanner method accepts
// decodes with encoding/json into the Go type it stands for, to the same
// value, with nothing left over; the plain forms deskd writes are
// accepted (so that the fast path is taken), the others left to
// encoding/json.
func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	tests := []struct {
		in     string
		accept map[string]bool // the methods that must accept in
	}{
		{`0`, map[string]bool{"int": true, "float": true}},
		{`-12`, map[string]bool{"int": true, "float": true}},
		{`123456789012345678`, map[string]bool{"int": true, "float": true}},
		{`1234567890123456789`, map[string]bool{"float": true}}, // 19 digits: left to encoding/json as an int
		{`01`, nil},
		{`-`, nil},
		{`1.5`, map[string]bool{"float": true}},
		{`-0.5e-3`, map[string]bool{"float": true}},
		{`2E+10`, map[string]bool{"float": true}},
		{`1e999`, nil},
		{`1.`, nil},
		{`.5`, nil},
		{`true`, map[string]bool{"bool": true}},
		{`false`, map[string]bool{"bool": true}},
		{`null`, nil},
		{`"plain"`, map[string]bool{"plain": true, "str": true}},
		{`"é ☃"`, map[string]bool{"plain": true, "str": true}},
		{`"esc\"aped\n\u00e9"`, map[string]bool{"str": true}},
		{`"bad \x"`, nil},
		{"\"ctl \x01\"", nil},
		{"\"\xff\"", map[string]bool{"str": true}}, // not UTF-8: kept only by encoding/json, which replaces it
		{`"2026-03-02T04:00:00.123456789+05:30"`, map[string]bool{"plain": true, "str": true, "time": true}},
		{`"2026-13-02T04:00:00Z"`, map[string]bool{"plain": true, "str": true}},
		{`"unterminated`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			methods := map[string]func(s *jsonline.Scanner) (any, bool){
				"int":   func(s *jsonline.Scanner) (any, bool) { return s.Int() },
				"float": func(s *jsonline.Scanner) (any, bool) { return s.Float() },
				"bool":  func(s *jsonline.Scanner) (any, bool) { return s.Bool() },
				"plain": func(s *jsonline.Scanner) (any, bool) { v, ok := s.Plain(); return string(v), ok },
				"str":   func(s *jsonline.Scanner) (any, bool) { return nil, s.Str() },
				"time":  func(s *jsonline.Scanner) (any, bool) { return s.Time() },
			}
			for name, read := range methods {
				s := jsonline.New([]byte(tt.in))
				got, ok := read(s)
				ok = ok && s.End()
				if ok != tt.accept[name] {
					t.Errorf("%s accepts %s: %v, want %v", name, tt.in, ok, tt.accept[name])
				}
				if !ok {
					continue
				}
				var want any
				var err error
				switch name {
				case "int":
					var v int64
					err = json.Unmarshal([]byte(tt.in), &v)
					want = v
				case "float":
					var v float64
					err = json.Unmarshal([]byte(tt.in), &v)
					want = v
				case "bool":
					var v bool
					err = json.Unmarshal([]byte(tt.in), &v)
					want = v
				case "plain", "str":
					var v string
					err = json.Unmarshal([]byte(tt.in), &v)
					want = v
					if name == "str" {
						want = nil
					}
				case "time":
					var v time.Time
					err = json.Unmarshal([]byte(tt.in), &v)
					want = v
				}
				if err != nil {
					t.Errorf("%s accepts %s, which encoding/json refuses: %v", name, tt.in, err)
				} else if tm, isTime := got.(time.Time); isTime && !tm.Equal(want.(time.Time)) || !isTime && got != want {
					t.Errorf("%s reads %s as %v, encoding/json as %v", name, tt.in, got, want)
				}
			}
		})
	}
}

// TestObject: an object's members are read by key; a key not in the list,
// a key twice, or a key in another case is left to encoding/json.
func TestObject(t *testing.T) {
	keys := []string{"a", "b"}
	for in, want := range map[string]bool{
		`{}`:                      true,
		` { "a" : 1 , "b":"x" } `: true,
		`{"a":1,"a":2}`:           false,
		`{"A":1}`:                 false,
		`{"c":1}`:                 false,
		`{"a":1,}`:                false,
		`{"a":1`:                  false,
	} {
		s := jsonline.New([]byte(in))
		ok := s.Object(keys, func(k int) bool {
			if keys[k] == "a" {
				_, ok := s.Int()
				return ok
			}
			return s.Str()
		}) && s.End()
		if ok != want {
			t.Errorf("Object(%s) = %v, want %v", in, ok, want)
		}
	}
}
