package triggers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
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
	// Only the operator may send manual (CheckFeed).
	Kind Kind `json:"kind,omitempty"`
	// ID is the optional idempotency key: the same id twice queues once.
	// It may not be one of deskd's own ids (CheckClientID).
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
	if err := DecodeJSON(body, &r); err != nil {
		return Request{}, err
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
	if err := CheckClientID(r.ID); r.ID != "" && err != nil {
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

// The prefixes of the ids deskd gives triggers that come without one:
// desk.Submit's "t-<time>-<hex>", and the spool's "inbox-<file>-<hash>".
// Schedule slots and arms are "<schedule>@<slot>" and "<schedule>@armed"
// (SlotID, ArmID).
const (
	// DeskIDPrefix begins the id a desk gives a trigger sent without one.
	DeskIDPrefix = "t-"
	// SpoolIDPrefix begins the id the spool gives a file without one.
	SpoolIDPrefix = "inbox-"
	// NATSIDPrefix begins the id the NATS ingress gives a message without
	// one (nats-<stream>-<sequence>).
	NATSIDPrefix = "nats-"
)

// CheckClientID reports whether a client (the API, the CLI, a spool file)
// may name a trigger id: CheckID's rules, and none of deskd's own ids,
// which live in a namespace of their own so that a client can neither
// claim a schedule's slot before it fires, nor take the place of an arm
// record, nor pre-empt the id deskd would give another trigger: no '@'
// (SlotID, ArmID), and neither DeskIDPrefix, SpoolIDPrefix nor
// NATSIDPrefix.
func CheckClientID(id string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	switch {
	case strings.Contains(id, "@"):
		return fmt.Errorf("id %q: '@' is kept for deskd's own ids (a schedule's slots and arms, <schedule>@<time>): choose an id without it", id)
	case strings.HasPrefix(id, DeskIDPrefix):
		return fmt.Errorf("id %q: the prefix %q is kept for deskd's own ids (those it gives triggers sent without one): choose another", id, DeskIDPrefix)
	case strings.HasPrefix(id, SpoolIDPrefix):
		return fmt.Errorf("id %q: the prefix %q is kept for deskd's own ids (those it gives spool files without one): choose another", id, SpoolIDPrefix)
	case strings.HasPrefix(id, NATSIDPrefix):
		return fmt.Errorf("id %q: the prefix %q is kept for deskd's own ids (those it gives NATS messages without one): choose another", id, NATSIDPrefix)
	}
	return nil
}

// ErrFeedManual is the error of a manual trigger from a feed: manual
// triggers reach the model as the operator's own words, without the
// <market_event> framing, and go ahead of market and scheduled ones.
var ErrFeedManual = errors.New(`kind "manual" needs the operator's credential (the operator's token, or the unix socket): a feed (a feed token, the spool folder) may submit market triggers only`)

// CheckFeed reports whether a feed may submit r: market triggers only.
// It is called after Check (which fills in the default kind).
func (r Request) CheckFeed() error {
	if r.Kind == Manual {
		return ErrFeedManual
	}
	return nil
}

// DecodeFeedRequest is DecodeRequest for a body from a feed (the spool
// folder): a manual trigger is refused with ErrFeedManual.
func DecodeFeedRequest(body []byte) (Request, error) {
	r, err := DecodeRequest(body)
	if err != nil {
		return r, err
	}
	if err := r.CheckFeed(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// Trigger returns the trigger r asks for, for desk; source is used when r
// names none.
func (r Request) Trigger(desk, source string) Trigger {
	if r.Source != "" {
		source = r.Source
	}
	return Trigger{ID: r.ID, Desk: desk, Kind: r.Kind, Text: r.Text, Source: source, Key: r.Key}
}

// DecodeJSON decodes body, one JSON object, into v, a pointer to a
// struct, strictly: it refuses unknown fields, anything after the object,
// and bytes that are not UTF-8 in any string, naming the field (the
// decoder would replace them with U+FFFD, silently). Every error is in
// an operator's words, with where it is, never in Go's types: "bad JSON:
// field text: want a string, got a number". A body that ends before its
// value does is ErrIncomplete. The API's bodies and spool files decode
// through it.
func DecodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			err = errTrailing
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrIncomplete
	}
	if !utf8.Valid(body) {
		return badUTF8(body)
	}
	if err != nil {
		return jsonError(body, err)
	}
	return nil
}

// errTrailing is the error of a body with more after its JSON value.
var errTrailing = errors.New("bad JSON: more than one value in the body")

// badUTF8 names the field of body whose string is not valid UTF-8.
func badUTF8(body []byte) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return errors.New("bad JSON: the body is not valid UTF-8")
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if !utf8.Valid(fields[k]) {
			return fmt.Errorf("bad JSON: field %s: not valid UTF-8", fieldName(k))
		}
	}
	return errors.New("bad JSON: a field name is not valid UTF-8")
}

// fieldName shows a field's name bare when it is a plain word, quoted
// otherwise.
func fieldName(k string) string {
	if k == "" || strings.ContainsFunc(k, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '.' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}) {
		return strconv.Quote(k)
	}
	return k
}

// jsonError describes a JSON decoding error with its position, in words.
func jsonError(body []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, errTrailing):
		return err
	case errors.As(err, &se):
		line, col := position(body, se.Offset)
		return fmt.Errorf("bad JSON at line %d, column %d: %v", line, col, se)
	case errors.As(err, &te):
		if te.Field == "" {
			return fmt.Errorf("bad JSON: want a JSON object, got %s", jsonValueKind(te.Value))
		}
		return fmt.Errorf("bad JSON: field %s: want %s, got %s", fieldName(te.Field), jsonTypeKind(te.Type), jsonValueKind(te.Value))
	}
	return fmt.Errorf("bad JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonTypeKind names what a Go type decodes from, in JSON's words.
func jsonTypeKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a value"
}

// jsonValueKind names the JSON value an *json.UnmarshalTypeError found
// ("number", "number 1.5", "string", "bool", "array", "object").
func jsonValueKind(v string) string {
	w, _, _ := strings.Cut(v, " ")
	switch w {
	case "number":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "array":
		return "an array"
	case "object":
		return "an object"
	}
	return "something else"
}

func position(body []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(body)))
	before := body[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, col
}
