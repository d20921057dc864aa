package httpapi_test

// Tests of the OpenAPI description (GET /v1/openapi.json): it names every
// route the server registers and no other, it is a well-formed OpenAPI
// 3.1 document whose schemas are valid JSON Schemas, and the answers of a
// running server, on every route, match it (a real JSON Schema
// validator, santhosh-tekuri/jsonschema).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/approval"
	"github.com/deskd/deskd/desk/audit"
	"github.com/deskd/deskd/desk/clock"
	"github.com/deskd/deskd/desk/httpapi"
	"github.com/deskd/deskd/desk/httpapi/httpapitest"
	"github.com/deskd/deskd/desk/replay"
	"github.com/deskd/deskd/memory/memorytest"
	"github.com/deskd/deskd/triggers"
)

// openAPIDoc is the document, decoded as the validator decodes JSON.
type openAPIDoc struct {
	raw  []byte
	root map[string]any
	// schemas compiles the document's schemas, by JSON pointer.
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

// docURL is the document's address for the validator.
const docURL = "https://deskd.invalid/openapi.json"

// loadOpenAPI decodes raw, the document, and readies its validator.
func loadOpenAPI(t *testing.T, raw []byte) *openAPIDoc {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the document is not JSON: %v", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("the document is a %T, want an object", v)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(docURL, v); err != nil {
		t.Fatalf("the validator refuses the document: %v", err)
	}
	return &openAPIDoc{raw: raw, root: root, compiler: c, compiled: map[string]*jsonschema.Schema{}}
}

// pointer escapes the tokens of a JSON pointer.
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, tok := range tokens {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}

// schema compiles the schema at the JSON pointer ptr of the document.
func (d *openAPIDoc) schema(ptr string) (*jsonschema.Schema, error) {
	if s, ok := d.compiled[ptr]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(docURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	d.compiled[ptr] = s
	return s, nil
}

// operation returns the path, method and operation of the mux pattern.
func (d *openAPIDoc) operation(pattern string) (path, method string, op map[string]any, ok bool) {
	for path, item := range d.root["paths"].(map[string]any) {
		for method, o := range item.(map[string]any) {
			if o, isOp := o.(map[string]any); isOp && o["x-deskd-pattern"] == pattern {
				return path, method, o, true
			}
		}
	}
	return "", "", nil, false
}

// patterns returns the mux pattern of every operation.
func (d *openAPIDoc) patterns(t *testing.T) []string {
	t.Helper()
	var out []string
	for path, item := range d.root["paths"].(map[string]any) {
		for method, o := range item.(map[string]any) {
			p, _ := o.(map[string]any)["x-deskd-pattern"].(string)
			if p == "" {
				t.Errorf("%s %s: no x-deskd-pattern", method, path)
			}
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// check reports how an answer of the route of pattern differs from the
// document: a status it does not list, a content type it does not, or a
// JSON body its schema refuses (in the validator's words).
func (d *openAPIDoc) check(pattern string, status int, header http.Header, body string) error {
	path, method, op, ok := d.operation(pattern)
	if !ok {
		return fmt.Errorf("%s is not in the document", pattern)
	}
	resp, ok := op["responses"].(map[string]any)[strconv.Itoa(status)].(map[string]any)
	if !ok {
		return fmt.Errorf("%s: status %d is not in the document (body %.200s)", pattern, status, body)
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if body != "" {
			return fmt.Errorf("%s: status %d has no body in the document, but answered %.200s", pattern, status, body)
		}
		return nil
	}
	mt, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil {
		return fmt.Errorf("%s: status %d: Content-Type %q: %v", pattern, status, header.Get("Content-Type"), err)
	}
	if _, json := content["application/json"]; json && mt == "application/json" {
		if _, described := content["application/json"].(map[string]any)["schema"]; !described {
			return d.validJSON(pattern, status, body) // the document itself: any JSON
		}
		s, err := d.schema(pointer("paths", path, method, "responses", strconv.Itoa(status), "content", "application/json", "schema"))
		if err != nil {
			return fmt.Errorf("%s: status %d: compile its schema: %v", pattern, status, err)
		}
		return validate(s, pattern, status, body)
	}
	for want := range content {
		if want == mt || want == "*/*" || strings.HasSuffix(want, "/*") && strings.HasPrefix(mt, strings.TrimSuffix(want, "*")) {
			return nil
		}
	}
	return fmt.Errorf("%s: status %d: Content-Type %s, but the document lists %v", pattern, status, mt, keys(content))
}

// validJSON reports whether body is JSON.
func (d *openAPIDoc) validJSON(pattern string, status int, body string) error {
	if !json.Valid([]byte(body)) {
		return fmt.Errorf("%s: status %d: the body is not JSON: %.200s", pattern, status, body)
	}
	return nil
}

// validate validates a JSON body against s.
func validate(s *jsonschema.Schema, pattern string, status int, body string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: status %d: the body is not JSON (%v): %.200s", pattern, status, err, body)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s: status %d: the body does not match the document: %v\nbody: %.2000s", pattern, status, err, body)
	}
	return nil
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestOpenAPICoversEveryRoute: every pattern the server registers (with
// a console, and GET /metrics as deskd run adds it) is an operation of
// the document, the catch-all "/" is its x-deskd-catch-all, and every
// operation is a route the server serves: a route added without its
// description fails, and so does a description of a route that is gone.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	h := routeHarness(t, true)
	raw, err := httpapi.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	doc := loadOpenAPI(t, raw)
	var served []string
	for _, p := range h.API.Routes() {
		if p == "/" {
			continue
		}
		served = append(served, p)
	}
	slices.Sort(served)
	if len(served) < 30 || !slices.Contains(served, "GET /metrics") || !slices.Contains(served, "GET /console/") {
		t.Fatalf("Routes() = %q: want every route, /metrics and the console's too", served)
	}
	described := doc.patterns(t)
	for _, p := range served {
		if !slices.Contains(described, p) {
			t.Errorf("route %q is not in the OpenAPI document: describe it in desk/httpapi/openapi.go's apiRoutes", p)
		}
	}
	for _, p := range described {
		if !slices.Contains(served, p) {
			t.Errorf("the OpenAPI document describes %q, which the server does not serve", p)
		}
	}
	if got := doc.root["x-deskd-catch-all"]; !slices.Contains(h.API.Routes(), "/") || got != "/" {
		t.Errorf("x-deskd-catch-all = %v, want the catch-all pattern \"/\" the server registers", got)
	}
}

// TestOpenAPIDocumentIsWellFormed: the document is OpenAPI 3.1 in its
// structure (openapi, info, paths, components; unique operationIds; a
// description and a status of three digits for each response; each path
// wildcard a required path parameter; every security requirement a
// scheme), every $ref resolves, and every schema compiles as JSON Schema
// 2020-12 (the validator checks it against the meta-schema).
func TestOpenAPIDocumentIsWellFormed(t *testing.T) {
	raw, err := httpapi.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	doc := loadOpenAPI(t, raw)
	root := doc.root
	if root["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", root["openapi"])
	}
	info, _ := root["info"].(map[string]any)
	if info["title"] == "" || info["title"] == nil || info["version"] == "" || info["version"] == nil {
		t.Errorf("info = %v, want a title and a version", info)
	}
	components, _ := root["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	schemes, _ := components["securitySchemes"].(map[string]any)
	if len(schemas) < 20 || len(schemes) != 4 {
		t.Fatalf("components has %d schemas and %d security schemes: want the API's types and its four credentials", len(schemas), len(schemes))
	}
	checkSecurity := func(where string, v any) {
		reqs, ok := v.([]any)
		if !ok {
			t.Errorf("%s: security is %T, want a list", where, v)
			return
		}
		for _, r := range reqs {
			for name := range r.(map[string]any) {
				if _, ok := schemes[name]; !ok {
					t.Errorf("%s: security scheme %q is not in components.securitySchemes", where, name)
				}
			}
		}
	}
	checkSecurity("the document", root["security"])
	paths, _ := root["paths"].(map[string]any)
	if len(paths) < 30 {
		t.Fatalf("paths has %d entries", len(paths))
	}
	ids := map[string]string{}
	methods := []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}
	for path, item := range paths {
		if !strings.HasPrefix(path, "/") {
			t.Errorf("path %q does not begin with /", path)
		}
		for method, v := range item.(map[string]any) {
			where := method + " " + path
			op, isOp := v.(map[string]any)
			if !isOp || !slices.Contains(methods, method) {
				t.Errorf("%s: not an operation of an HTTP method", where)
				continue
			}
			id, _ := op["operationId"].(string)
			if prev, dup := ids[id]; id == "" || dup {
				t.Errorf("%s: operationId %q is empty or %s's too", where, id, prev)
			}
			ids[id] = where
			checkSecurity(where, op["security"])
			declared := map[string]bool{}
			params, _ := op["parameters"].([]any)
			for _, p := range params {
				p := p.(map[string]any)
				if p["in"] == "path" {
					declared[p["name"].(string)] = p["required"] == true
				}
				if p["schema"] == nil || !slices.Contains([]any{"path", "query", "header", "cookie"}, p["in"]) {
					t.Errorf("%s: parameter %v lacks a schema or a place", where, p)
				}
			}
			for _, w := range regexpWildcards(path) {
				if !declared[w] {
					t.Errorf("%s: wildcard {%s} is not a required path parameter", where, w)
				}
			}
			resps, _ := op["responses"].(map[string]any)
			if len(resps) == 0 {
				t.Errorf("%s: no responses", where)
			}
			for status, r := range resps {
				if n, err := strconv.Atoi(status); err != nil || n < 100 || n > 599 {
					t.Errorf("%s: response %q is not a status", where, status)
				}
				if d, _ := r.(map[string]any)["description"].(string); d == "" {
					t.Errorf("%s %s: no description", where, status)
				}
			}
		}
	}
	var refs int
	walk(root, func(ref string) {
		refs++
		if !strings.HasPrefix(ref, "#/") {
			t.Errorf("$ref %q is not inside the document", ref)
			return
		}
		if _, err := resolve(root, ref[1:]); err != nil {
			t.Errorf("$ref %q: %v", ref, err)
		}
	})
	if refs < 50 {
		t.Errorf("%d $refs: want the components referred to", refs)
	}
	for name := range schemas {
		if _, err := doc.schema(pointer("components", "schemas", name)); err != nil {
			t.Errorf("components.schemas.%s is not a valid JSON Schema 2020-12: %v", name, err)
		}
	}
}

// regexpWildcards returns the names of a path's {wildcards}.
func regexpWildcards(path string) []string {
	var out []string
	for rest := path; ; {
		_, after, ok := strings.Cut(rest, "{")
		if !ok {
			return out
		}
		name, tail, _ := strings.Cut(after, "}")
		out, rest = append(out, name), tail
	}
}

// walk calls fn with every $ref of v.
func walk(v any, fn func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "$ref" {
				fn(s)
				continue
			}
			walk(e, fn)
		}
	case []any:
		for _, e := range v {
			walk(e, fn)
		}
	}
}

// resolve follows a JSON pointer in v.
func resolve(v any, ptr string) (any, error) {
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%q: not an object", tok)
		}
		if v, ok = m[tok]; !ok {
			return nil, fmt.Errorf("%q: no such member", tok)
		}
	}
	return v, nil
}

// TestOpenAPIValidatorRefuses: the check of an answer fails on a body its
// schema refuses, an undocumented status and a wrong content type, so
// that TestOpenAPIAnswersMatch can fail.
func TestOpenAPIValidatorRefuses(t *testing.T) {
	raw, err := httpapi.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	doc := loadOpenAPI(t, raw)
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	for _, tt := range []struct {
		name, pattern string
		status        int
		header        http.Header
		body, says    string
	}{
		{"a field of the wrong type", "GET /healthz", 200, jsonHeader, `{"status": 1}`, "status"},
		{"a field the type lacks", "GET /v1/desks", 200, jsonHeader, `{"desks": [], "config_rejected": [], "extra": true}`, "extra"},
		{"null where the code makes a list", "GET /v1/desks", 200, jsonHeader, `{"desks": null, "config_rejected": []}`, "desks"},
		{"a required field missing", "GET /v1/whoami", 200, jsonHeader, `{"credential": "operator"}`, "missing"},
		{"an error without error", "GET /v1/desks/{desk}", 404, jsonHeader, `{"message": "no"}`, "error"},
		{"an undocumented status", "GET /v1/desks", 418, jsonHeader, `{}`, "not in the document"},
		{"the wrong content type", "GET /v1/desks/{desk}/audit", 200, http.Header{"Content-Type": {"text/plain"}}, "x", "lists"},
	} {
		err := doc.check(tt.pattern, tt.status, tt.header, tt.body)
		if err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: check(%s, %d, %s) = %v, want an error saying %q", tt.name, tt.pattern, tt.status, tt.body, err, tt.says)
		}
	}
	if err := doc.check("GET /v1/whoami", 200, jsonHeader, `{"credential": "operator", "via": "token", "needs_token": true}`); err != nil {
		t.Errorf("a valid whoami: %v", err)
	}
}

// waitingCalls are two tool calls waiting on desk main since at, "a-1"
// and "a-2".
func waitingCalls(at time.Time) *httpapitest.Approvals {
	a := &httpapitest.Approvals{}
	for _, id := range []string{"a-1", "a-2"} {
		a.Add(approval.Pending{ID: id, Desk: httpapitest.DeskName, Session: "s", Call: "call-" + id, Tool: "mcp__broker__order",
			Arguments: json.RawMessage(`{"qty": 10}`), RequestedAt: at, ExpiresAt: at.Add(10 * time.Minute)})
	}
	return a
}

// answersHarness serves the populated fixture's desk (sessions, kept
// versions of Memory.md, notes, summaries, a curator's change "c-retire"
// to undo) with an interrupted trigger "cut" and an answered one "done",
// a tool call waiting for a decision, a console, NATS, a config check,
// the audit's config, and every kind of token.
func answersHarness(t *testing.T) *httpapitest.Harness {
	t.Helper()
	fx := memorytest.Populated(t)
	if err := os.Remove(filepath.Join(fx.DeskDir, "triggers.jsonl")); err != nil {
		t.Fatal(err)
	}
	memorytest.Write(t, fx.DeskDir, "skills/.archive/breakout-20260302T183003.000000000Z/SKILL.md", "---\nname: breakout\ndescription: Old.\n---\n")
	// A past replay's report, where deskd replay leaves one (replays.go).
	replayDir := filepath.Join(filepath.Dir(filepath.Dir(fx.DeskDir)), "replays", "main", "2026-03-02-1")
	if err := os.MkdirAll(replayDir, 0o755); err != nil {
		t.Fatal(err)
	}
	side := replay.Side{Reply: "hi", Model: "offline", ToolCalls: []replay.Call{{ID: "c1", Tool: "note", Arguments: json.RawMessage(`{}`), Outcome: replay.CallRefused}}}
	if err := replay.WriteReport(replayDir, &replay.Report{Desk: "main", Date: "2026-03-02", Candidate: replay.Candidate{Source: "--model offline", Route: []string{"offline"}},
		Triggers: []replay.Row{{Trigger: replay.Trigger{ID: "done", Kind: "manual", Text: "hello"}, Original: side, Candidate: &side}}, Approvals: []replay.Approval{}}); err != nil {
		t.Fatal(err)
	}
	memorytest.Write(t, fx.DeskDir, "curator/ledger.jsonl",
		`{"id":"c-retire","at":"2026-03-02T18:30:04Z","trading_date":"2026-03-02","action":"retire","skill":"breakout","reason":"unused",`+
			`"before":"","after":"","archived_to":"skills/.archive/breakout-20260302T183003.000000000Z"}`+"\n")
	writeCutAndDone(t, filepath.Join(fx.DeskDir, triggers.LedgerFile), time.Date(2026, 3, 3, 4, 0, 0, 0, time.UTC))
	clk := clock.NewFake(time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC)) // the trading date of the fixture's current session
	return httpapitest.Start(t, httpapitest.Options{Dir: filepath.Dir(fx.DeskDir), Clock: clk, RefusePaused: true,
		Token: consoleToken, FeedToken: routesFeedToken, MetricsToken: routesMetricsToken,
		Files:     httpapi.Files{AuditConfig: func(string) (audit.Config, error) { return audit.Config{Main: fx.Config}, nil }},
		Approvals: waitingCalls(clk.Now()),
		Console: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/" {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
			}
			_, _ = io.WriteString(w, "<!doctype html><title>console</title>")
		}),
		NATS: func() *httpapi.NATSStatus {
			return &httpapi.NATSStatus{Connected: true, State: "connected", Since: clk.Now(), Server: "nats://127.0.0.1:4222"}
		},
		Check: func() desk.ConfigCheck {
			return desk.ConfigCheck{Config: fx.Config, Changes: []desk.ConfigChange{{Desk: "main", Field: "model", What: "offline -> other", Restart: true}}}
		},
	})
}

// TestOpenAPIAnswersMatch: a running server is called on every route it
// serves, with valid inputs and with errors (no credential, the wrong
// one, a Host of a rebound page, bad and too large bodies, unknown names,
// conflicts, a paused desk), and each answer is checked against the
// document: its status is listed for the route, its content type too,
// and a JSON body validates against the status's schema. Every route
// must have had a success checked.
func TestOpenAPIAnswersMatch(t *testing.T) {
	h := answersHarness(t)
	op := []string{"Authorization", "Bearer " + consoleToken}
	feed := []string{"Authorization", "Bearer " + routesFeedToken}
	scraper := []string{"Authorization", "Bearer " + routesMetricsToken}
	jsonCT := []string{"Content-Type", "application/json"}

	status, hdr, raw := h.Call("GET", "/v1/openapi.json", "", op...)
	if mt, _, _ := mime.ParseMediaType(hdr.Get("Content-Type")); status != http.StatusOK || mt != "application/json" {
		t.Fatalf("GET /v1/openapi.json = %d, Content-Type %q: want 200 application/json", status, hdr.Get("Content-Type"))
	}
	want, err := httpapi.OpenAPI()
	if err != nil || raw != string(want) {
		t.Fatalf("GET /v1/openapi.json is not httpapi.OpenAPI() (%v)", err)
	}
	doc := loadOpenAPI(t, []byte(raw))

	succeeded := map[string]bool{}
	call := func(pattern, method, path, body string, wantStatus int, header ...string) string {
		t.Helper()
		status, hdr, got := h.Call(method, path, body, header...)
		if status != wantStatus {
			t.Errorf("%s %s = %d %.300s, want %d", method, path, status, got, wantStatus)
		}
		if err := doc.check(pattern, status, hdr, got); err != nil {
			t.Errorf("%s %s: %v", method, path, err)
		} else if status < 300 {
			succeeded[pattern] = true
		}
		return got
	}

	// What every route may answer before its handler.
	call("GET /v1/desks", "GET", "/v1/desks", "", http.StatusUnauthorized)
	call("GET /v1/desks", "GET", "/v1/desks", "", http.StatusForbidden, feed...)
	call("GET /v1/desks", "GET", "/v1/desks", "", http.StatusMisdirectedRequest, append([]string{"Host", "rebind.evil.example"}, op...)...)
	call("GET /v1/desks/{desk}", "GET", "/v1/desks/nope", "", http.StatusNotFound, op...)
	call("GET /healthz", "GET", "/healthz", "", http.StatusOK)
	call("GET /v1/desks", "GET", "/v1/desks", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}", "GET", "/v1/desks/main", "", http.StatusOK, op...)
	call("GET /v1/config/diff", "GET", "/v1/config/diff", "", http.StatusOK, op...)
	call("GET /v1/openapi.json", "GET", "/v1/openapi.json", "", http.StatusOK, op...)
	call("GET /metrics", "GET", "/metrics", "", http.StatusOK, scraper...)
	call("GET /metrics", "GET", "/v1/desks", "", http.StatusForbidden, scraper...) // a 403 of another route is one of this too

	// The console's sign-in, and what the cookie may do.
	call("POST /v1/login", "POST", "/v1/login", `{"token": "wrong"}`, http.StatusUnauthorized, jsonCT...)
	call("POST /v1/login", "POST", "/v1/login", `{"token": "`+consoleToken+`"}`, http.StatusUnsupportedMediaType)
	call("POST /v1/login", "POST", "/v1/login", `{"tokn": 1}`, http.StatusBadRequest, jsonCT...)
	call("POST /v1/login", "POST", "/v1/login", `{"token": "`+consoleToken+`"}`, http.StatusOK, jsonCT...)
	cookie := signIn(t, h)
	call("GET /v1/whoami", "GET", "/v1/whoami", "", http.StatusOK, "Cookie", cookieHeader(cookie))
	call("POST /v1/desks/{desk}/pause", "POST", "/v1/desks/main/pause", `{}`, http.StatusUnsupportedMediaType, "Cookie", cookieHeader(cookie))
	call("POST /v1/logout", "POST", "/v1/logout", "", http.StatusNoContent, append([]string{"Cookie", cookieHeader(cookie)}, jsonCT...)...)

	// Triggers.
	call("POST /v1/desks/{desk}/triggers", "POST", "/v1/desks/main/triggers", `{"text": "hello", "id": "o-1"}`, http.StatusAccepted, op...)
	call("POST /v1/desks/{desk}/triggers", "POST", "/v1/desks/main/triggers", `{"text": "hello", "id": "o-1"}`, http.StatusOK, op...)
	call("POST /v1/desks/{desk}/triggers", "POST", "/v1/desks/main/triggers", `{"text": "go", "kind": "manual"}`, http.StatusForbidden, feed...)
	call("POST /v1/desks/{desk}/triggers", "POST", "/v1/desks/main/triggers", `{"text": "tick", "id": "f-1"}`, http.StatusAccepted, feed...)
	call("POST /v1/desks/{desk}/triggers", "POST", "/v1/desks/main/triggers", `{"text": ""}`, http.StatusBadRequest, op...)
	call("POST /v1/desks/{desk}/triggers", "POST", "/v1/desks/main/triggers", `{"text": "`+strings.Repeat("x", triggers.MaxBody)+`"}`, http.StatusRequestEntityTooLarge, op...)
	call("GET /v1/desks/{desk}/triggers/{id}", "GET", "/v1/desks/main/triggers/o-1?wait=1m", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/triggers/{id}", "GET", "/v1/desks/main/triggers/f-1?wait=1m", "", http.StatusOK, feed...)
	call("GET /v1/desks/{desk}/triggers/{id}", "GET", "/v1/desks/main/triggers/o-1", "", http.StatusForbidden, feed...)
	call("GET /v1/desks/{desk}/triggers/{id}", "GET", "/v1/desks/main/triggers/o-1?wait=soon", "", http.StatusBadRequest, op...)
	call("GET /v1/desks/{desk}/triggers/{id}", "GET", "/v1/desks/main/triggers/none", "", http.StatusNotFound, op...)
	call("POST /v1/desks/{desk}/triggers/{id}/ack", "POST", "/v1/desks/main/triggers/cut/ack", `{"by": "asha", "note": "checked the broker"}`, http.StatusOK, op...)
	call("POST /v1/desks/{desk}/triggers/{id}/ack", "POST", "/v1/desks/main/triggers/done/ack", "", http.StatusConflict, op...)
	call("POST /v1/desks/{desk}/triggers/{id}/ack", "POST", "/v1/desks/main/triggers/none/ack", "", http.StatusNotFound, op...)

	// Pause, a trigger refused meanwhile, resume.
	call("POST /v1/desks/{desk}/pause", "POST", "/v1/desks/main/pause", `{"reason": "lunch", "by": "asha"}`, http.StatusOK, op...)
	call("GET /v1/desks/{desk}", "GET", "/v1/desks/main", "", http.StatusOK, op...)
	call("POST /v1/desks/{desk}/triggers", "POST", "/v1/desks/main/triggers", `{"text": "tick"}`, http.StatusLocked, op...)
	call("POST /v1/desks/{desk}/pause", "POST", "/v1/desks/main/pause", `{"reason": 1}`, http.StatusBadRequest, op...)
	call("POST /v1/desks/{desk}/resume", "POST", "/v1/desks/main/resume", "", http.StatusOK, op...)

	// Approvals.
	call("GET /v1/approvals", "GET", "/v1/approvals", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/approvals", "GET", "/v1/desks/main/approvals", "", http.StatusOK, op...)
	call("POST /v1/desks/{desk}/approvals/{id}/approve", "POST", "/v1/desks/main/approvals/a-1/approve", `{"reason": "fine", "by": "asha"}`, http.StatusOK, op...)
	call("POST /v1/desks/{desk}/approvals/{id}/deny", "POST", "/v1/desks/main/approvals/a-2/deny", "", http.StatusOK, op...)
	call("POST /v1/desks/{desk}/approvals/{id}/deny", "POST", "/v1/desks/main/approvals/a-2/deny", "", http.StatusNotFound, op...)
	call("POST /v1/desks/{desk}/approvals/{id}/approve", "POST", "/v1/desks/main/approvals/a-9/approve", `{"reason": "two\nlines"}`, http.StatusBadRequest, op...)

	// The desk's files.
	call("GET /v1/desks/{desk}/sessions", "GET", "/v1/desks/main/sessions", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/sessions/{session}/transcript", "GET", "/v1/desks/main/sessions/current/transcript", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/sessions/{session}/transcript", "GET", "/v1/desks/main/sessions/nosuch/transcript", "", http.StatusNotFound, op...)
	call("GET /v1/desks/{desk}/sessions/{session}/export", "GET", "/v1/desks/main/sessions/current/export", "", http.StatusOK, op...)
	mem := httpapitest.Decode[httpapi.MemoryResponse](t, call("GET /v1/desks/{desk}/memory", "GET", "/v1/desks/main/memory", "", http.StatusOK, op...))
	if len(mem.Versions) == 0 {
		t.Fatalf("the fixture's Memory.md has no kept versions: %+v", mem)
	}
	call("GET /v1/desks/{desk}/memory/versions/{version}", "GET", "/v1/desks/main/memory/versions/"+mem.Versions[0].ID, "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/memory/versions/{version}", "GET", "/v1/desks/main/memory/versions/1999", "", http.StatusNotFound, op...)
	call("POST /v1/desks/{desk}/memory/restore", "POST", "/v1/desks/main/memory/restore", `{"version": "`+mem.Versions[0].ID+`", "by": "asha"}`, http.StatusOK, op...)
	call("POST /v1/desks/{desk}/memory/restore", "POST", "/v1/desks/main/memory/restore", `{}`, http.StatusBadRequest, op...)
	call("GET /v1/desks/{desk}/notes", "GET", "/v1/desks/main/notes?date=2026-03-02", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/notes", "GET", "/v1/desks/main/notes?date=March", "", http.StatusBadRequest, op...)
	call("GET /v1/desks/{desk}/summaries", "GET", "/v1/desks/main/summaries", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/skills", "GET", "/v1/desks/main/skills", "", http.StatusOK, op...)
	call("POST /v1/desks/{desk}/skills/undo", "POST", "/v1/desks/main/skills/undo", `{"change": "c-retire", "by": "asha"}`, http.StatusOK, op...)
	call("POST /v1/desks/{desk}/skills/undo", "POST", "/v1/desks/main/skills/undo", `{"change": "c-retire"}`, http.StatusConflict, op...)
	call("GET /v1/desks/{desk}/skills", "GET", "/v1/desks/main/skills", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/audit", "GET", "/v1/desks/main/audit?date=2026-03-02", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/replays", "GET", "/v1/desks/main/replays", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/replays/{replay}", "GET", "/v1/desks/main/replays/2026-03-02-1", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/replays/{replay}", "GET", "/v1/desks/main/replays/2026-03-02-9", "", http.StatusNotFound, op...)
	call("GET /v1/desks/{desk}/replays/{replay}", "GET", "/v1/desks/main/replays/.hidden", "", http.StatusBadRequest, op...)

	// New sessions, then the files and the events they leave.
	call("POST /v1/desks/{desk}/fork", "POST", "/v1/desks/main/fork", "", http.StatusOK, op...)
	call("POST /v1/desks/{desk}/rollover", "POST", "/v1/desks/main/rollover", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/sessions", "GET", "/v1/desks/main/sessions", "", http.StatusOK, op...)
	call("GET /v1/desks/{desk}/summaries", "GET", "/v1/desks/main/summaries", "", http.StatusOK, op...)
	call("GET /v1/events", "GET", "/v1/events?follow=0&backlog=1", "", http.StatusOK, op...)
	proof := httpapi.PathProof + "?nonce=" + strings.Repeat("5f", httpapi.ProofNonceLen/2)
	call("GET /v1/proof", "GET", proof, "", http.StatusOK, httpapi.HeaderTokenID, httpapi.TokenID(consoleToken))
	call("GET /v1/proof", "GET", proof, "", http.StatusForbidden, httpapi.HeaderTokenID, httpapi.TokenID("none of deskd's"))
	call("GET /v1/proof", "GET", httpapi.PathProof+"?nonce=short", "", http.StatusBadRequest, httpapi.HeaderTokenID, httpapi.TokenID(consoleToken))
	call("GET /v1/events", "GET", "/v1/events?desk=nope", "", http.StatusNotFound, op...)
	call("GET /v1/desks", "GET", "/v1/desks", "", http.StatusOK, op...)
	call("GET /healthz", "GET", "/healthz", "", http.StatusOK)

	// The console's page and assets.
	call("GET /{$}", "GET", "/", "", http.StatusOK)
	call("GET /console/", "GET", "/console/app.js", "", http.StatusOK)

	for _, p := range h.API.Routes() {
		if p != "/" && !succeeded[p] {
			t.Errorf("route %s: no success was checked against the document: call it in TestOpenAPIAnswersMatch", p)
		}
	}

	// The catch-all: 404 and 405 are errors of the API's shape.
	errSchema, err := doc.schema(pointer("components", "schemas", "Error"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		method, path string
		want         int
	}{{"GET", "/v1/nothing", http.StatusNotFound}, {"DELETE", "/v1/desks", http.StatusMethodNotAllowed}} {
		status, _, body := h.Call(tt.method, tt.path, "", op...)
		if status != tt.want {
			t.Errorf("%s %s = %d, want %d", tt.method, tt.path, status, tt.want)
		}
		if err := validate(errSchema, "/", status, body); err != nil {
			t.Error(err)
		}
	}
}
