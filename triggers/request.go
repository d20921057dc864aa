package triggers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxBody is the largest trigger body the API and the spool folder accept.
const MaxBody = 64 << 10

// MaxIDLen and MaxKeyLen bound an idempotency key and a coalescing key.
const (
	MaxIDLen  = 200
	MaxKeyLen = 200
)

// Request is the body of POST /v1/desks/{desk}/triggers and of a spool
// file: what an outside maker asks a desk to do.
type Request struct {
	// Text is the turn's message (required, not blank).
	Text string `json:"text"`
	// Kind is market (the default) or manual; schedule is the schedules' own.
	Kind Kind `json:"kind,omitempty"`
	// ID is the optional idempotency key: the same id twice queues once.
	ID string `json:"id,omitempty"`
	// Key groups market events for coalescing (a symbol, say).
	Key string `json:"key,omitempty"`
	// Source names the maker, for the log and the model ("api" by default).
	Source string `json:"source,omitempty"`
}

// ErrEmptyText is the error of a request without text.
var ErrEmptyText = errors.New("text is empty")

// ErrIncomplete is the error of a body that ends before its JSON value
// does (or is empty): a file still being written, or a cut-off request.
var ErrIncomplete = errors.New("bad JSON: the body ends before the JSON value does")

// DecodeRequest parses and checks a trigger body: one JSON object with no
// unknown fields and nothing after it, of at most MaxBody bytes. A parse
// error names what is wrong and where.
func DecodeRequest(body []byte) (Request, error) {
	if len(body) > MaxBody {
		return Request{}, fmt.Errorf("the body is larger than %d bytes", MaxBody)
	}
	var r Request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, jsonError(body, dec, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Request{}, errors.New("bad JSON: more than one value in the body")
	}
	if err := r.Check(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// Check reports what is wrong with r, after filling in the default kind.
func (r *Request) Check() error {
	if r.Kind == "" {
		r.Kind = Market
	}
	switch r.Kind {
	case Market, Manual:
	case Schedule:
		return errors.New(`kind "schedule" is reserved for the desk's own schedules: want market or manual`)
	default:
		return fmt.Errorf("kind %q: want market or manual", r.Kind)
	}
	if strings.TrimSpace(r.Text) == "" {
		return ErrEmptyText
	}
	if !utf8.ValidString(r.Text) {
		return errors.New("text is not valid UTF-8")
	}
	if err := CheckID(r.ID); r.ID != "" && err != nil {
		return err
	}
	if len(r.Key) > MaxKeyLen || strings.ContainsFunc(r.Key, unicode.IsControl) {
		return fmt.Errorf("key: at most %d characters, no control characters", MaxKeyLen)
	}
	if len(r.Source) > MaxKeyLen || strings.ContainsFunc(r.Source, unicode.IsControl) {
		return fmt.Errorf("source: at most %d characters, no control characters", MaxKeyLen)
	}
	return nil
}

// CheckID reports whether id can name a trigger: 1 to MaxIDLen printable
// characters, no spaces, no slash (ids appear in URLs).
func CheckID(id string) error {
	switch {
	case id == "":
		return errors.New("id is empty")
	case len(id) > MaxIDLen:
		return fmt.Errorf("id is longer than %d bytes", MaxIDLen)
	case !utf8.ValidString(id):
		return errors.New("id is not valid UTF-8")
	case strings.ContainsFunc(id, func(r rune) bool { return r == '/' || unicode.IsSpace(r) || !unicode.IsPrint(r) }):
		return fmt.Errorf("id %q: no spaces, slashes or control characters", id)
	}
	return nil
}

// Trigger returns the trigger r asks for, for desk; source is used when r
// names none.
func (r Request) Trigger(desk, source string) Trigger {
	if r.Source != "" {
		source = r.Source
	}
	return Trigger{ID: r.ID, Desk: desk, Kind: r.Kind, Text: r.Text, Source: source, Key: r.Key}
}

// jsonError describes a JSON decoding error with its position.
func jsonError(body []byte, dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrIncomplete
	case errors.As(err, &se):
		line, col := position(body, se.Offset)
		return fmt.Errorf("bad JSON at line %d, column %d: %v", line, col, se)
	case errors.As(err, &te):
		return fmt.Errorf("bad JSON: field %q: want %s, got %s", te.Field, te.Type, te.Value)
	}
	return fmt.Errorf("bad JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func position(body []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(body)))
	before := body[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, col
}
