// Package jsonline reads the JSON lines deskd writes (session records,
// trigger ledger records) in the plain form json.Marshal gives them,
// without reflection, for readers that go through many lines and need
// only a few fields of each (a start that counts a session's turns, a
// ledger's index).
//
// A Scanner never accepts what encoding/json would refuse: each of its
// methods reports false when the input is not of the plain form it reads
// (escapes in a string that is kept, null, a number of another form, an
// unknown or repeated key, ...), and the caller then leaves the line to
// encoding/json, which decides.
package jsonline

import (
	"encoding/binary"
	"strconv"
	"time"
	"unicode/utf8"
)

// Scanner reads one JSON value from the start of a line.
type Scanner struct {
	b []byte
	i int
}

// New returns a Scanner of line.
func New(line []byte) *Scanner { return &Scanner{b: line} }

func (s *Scanner) ws() {
	for s.i < len(s.b) && s.b[s.i] <= ' ' && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\r' || s.b[s.i] == '\n') {
		s.i++
	}
}

// End reports whether nothing but white space is left.
func (s *Scanner) End() bool {
	s.ws()
	return s.i == len(s.b)
}

// Byte reads c (after white space).
func (s *Scanner) Byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// Peek reports whether the next byte (after white space) is c.
func (s *Scanner) Peek(c byte) bool {
	s.ws()
	return s.i < len(s.b) && s.b[s.i] == c
}

// stop marks the bytes a string's scan stops at: the quote, the
// backslash and the control bytes; Plain also stops at every byte of a
// multi-byte character (stopPlain), so that it checks the UTF-8 only of
// a string that has one.
var (
	stop      = stopTable(0x100)
	stopPlain = stopTable(0x80)
)

// stopTable returns the stop marks, with every byte from high up marked.
func stopTable(high int) (t [256]bool) {
	for c := range t {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= high
	}
	return t
}

// Plain reads a string without escapes, of valid UTF-8, and returns its
// bytes without the quotes.
func (s *Scanner) Plain() ([]byte, bool) {
	if !s.Byte('"') {
		return nil, false
	}
	start, ascii := s.i, true
	for s.i < len(s.b) {
		if ascii {
			s.skipPlain(highs)
		}
		// The word skipPlain stopped at, byte by byte.
		for end := min(s.i+8, len(s.b)); s.i < end; s.i++ {
			c := s.b[s.i]
			if !stopPlain[c] {
				continue
			}
			switch {
			case c == '"':
				v := s.b[start:s.i]
				s.i++
				return v, ascii || utf8.Valid(v)
			case c >= utf8.RuneSelf:
				ascii = false
			default: // an escape or a control byte
				return nil, false
			}
		}
	}
	return nil, false
}

// Str checks a string that is not kept: any valid JSON string.
func (s *Scanner) Str() bool {
	if !s.Byte('"') {
		return false
	}
	for s.i < len(s.b) {
		s.skipPlain(0)
		// The word skipPlain stopped at, byte by byte (an escape may take
		// the scan past it).
		for end := min(s.i+8, len(s.b)); s.i < end; {
			c := s.b[s.i]
			s.i++
			if !stop[c] {
				continue
			}
			switch {
			case c == '"':
				return true
			case c < 0x20:
				return false
			default: // a backslash
				if !s.escape() {
					return false
				}
			}
		}
	}
	return false
}

// escape reads what follows a backslash in a string: one of "\\/bfnrt or
// u and four hex digits.
func (s *Scanner) escape() bool {
	if s.i >= len(s.b) {
		return false
	}
	e := s.b[s.i]
	s.i++
	switch e {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		if s.i+4 > len(s.b) {
			return false
		}
		for _, h := range s.b[s.i : s.i+4] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		s.i += 4
		return true
	}
	return false
}

// The words of eight bytes skipPlain reads, and their masks.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// skipPlain moves past the bytes of a string, eight at a time, that are
// no quote, no backslash, no control byte, and, with high set to highs,
// no byte of a multi-byte character (0 lets those through); it stops at
// the word that holds one, for the byte loop to read.
func (s *Scanner) skipPlain(high uint64) {
	for s.i+8 <= len(s.b) {
		x := binary.LittleEndian.Uint64(s.b[s.i:])
		q, bs := x^('"'*ones), x^('\\'*ones)
		special := (x-0x20*ones)&^x | (q-ones)&^q | (bs-ones)&^bs
		if special&highs|x&high != 0 {
			return
		}
		s.i += 8
	}
}

// Time reads a time as time.Time decodes it from JSON. The form deskd
// writes, UTC with "Z" and up to nine digits of the second's fraction, is
// read here; any other is left to time.Time's UnmarshalJSON.
func (s *Scanner) Time() (time.Time, bool) {
	s.ws()
	start := s.i
	v, ok := s.Plain()
	if !ok {
		return time.Time{}, false
	}
	if t, ok := utcTime(v); ok {
		return t, true
	}
	var t time.Time
	if t.UnmarshalJSON(s.b[start:s.i]) != nil {
		return time.Time{}, false
	}
	return t, true
}

// utcTime reads YYYY-MM-DDTHH:MM:SS[.F]Z, F of one to nine digits, with
// every field in its range; false for anything else. It is time.Date's
// result, counted without time.Date's normalising.
func utcTime(v []byte) (time.Time, bool) {
	if len(v) < 20 || v[len(v)-1] != 'Z' || v[4] != '-' || v[7] != '-' || v[10] != 'T' || v[13] != ':' || v[16] != ':' {
		return time.Time{}, false
	}
	year, month, day := digits(v[0:4]), digits(v[5:7]), digits(v[8:10])
	hour, minute, sec := digits(v[11:13]), digits(v[14:16]), digits(v[17:19])
	nsec := 0
	if frac := v[19 : len(v)-1]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		if nsec = digits(frac[1:]); nsec < 0 {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	unix := int64(daysSinceEpoch(year, month, day))*86400 + int64(hour*3600+minute*60+sec)
	return time.Unix(unix, int64(nsec)).UTC(), true
}

// digits returns the number b's decimal digits spell, or -1 when b holds
// another byte.
func digits(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// daysIn returns the days of month (1 to 12) of year, in the proleptic
// Gregorian calendar.
func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysSinceEpoch returns the days from 1970-01-01 to year-month-day
// (negative before it), in the proleptic Gregorian calendar: the days of
// whole 400-year eras, then of the year, counted from March so that a
// leap day comes last.
func daysSinceEpoch(year, month, day int) int {
	if month <= 2 {
		year--
	}
	era := year
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := year - era*400                     // 0 to 399
	doy := (153*((month+9)%12)+2)/5 + day - 1 // 0 to 365, from March 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy    // 0 to 146096
	return era*146097 + doe - 719468
}

// Int reads an integer in JSON's form that surely fits an int64 (at most
// 18 digits), and returns it.
func (s *Scanner) Int() (int64, bool) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	n := s.i - digits
	if n == 0 || n > 1 && s.b[digits] == '0' || n > 18 {
		return 0, false // none, a leading zero, or maybe too large: encoding/json decides
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	return v, err == nil
}

// Float reads a number in JSON's form that a float64 holds (not out of
// its range), and returns it.
func (s *Scanner) Float() (float64, bool) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	intPart := s.i
	if !s.digits() || s.i-intPart > 1 && s.b[intPart] == '0' {
		return 0, false // no digits, or a leading zero
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return 0, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	return v, err == nil
}

// digits reads one digit or more.
func (s *Scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// Bool reads true or false.
func (s *Scanner) Bool() (v, ok bool) {
	s.ws()
	switch {
	case len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "true":
		s.i += 4
		return true, true
	case len(s.b)-s.i >= 5 && string(s.b[s.i:s.i+5]) == "false":
		s.i += 5
		return false, true
	}
	return false, false
}

// key reads an object's key (and its colon) and returns its index in
// keys; false for any other key. keys[next] is tried first: json.Marshal
// writes a struct's keys in their order, so that one is most often it.
func (s *Scanner) key(keys []string, next int) (int, bool) {
	k, ok := s.Plain()
	if !ok || !s.Byte(':') {
		return 0, false
	}
	if next < len(keys) && string(k) == keys[next] {
		return next, true
	}
	for i, name := range keys {
		if string(k) == name {
			return i, true
		}
	}
	return 0, false
}

// Object reads the members of an object whose keys are among keys (at
// most 64 of them), calling member with each key's index to read its
// value; a key seen twice, or one not in keys, is left to encoding/json
// (which matches keys without regard to case).
func (s *Scanner) Object(keys []string, member func(k int) bool) bool {
	if len(keys) > 64 || !s.Byte('{') {
		return false
	}
	if s.Byte('}') {
		return true
	}
	var seen uint64
	for next := 0; ; {
		k, ok := s.key(keys, next)
		if !ok || seen&(1<<k) != 0 || !member(k) {
			return false
		}
		seen, next = seen|1<<k, k+1
		if s.Byte('}') {
			return true
		}
		if !s.Byte(',') {
			return false
		}
	}
}
