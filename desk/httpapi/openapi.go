package httpapi

// The OpenAPI 3.1 description of the API (GET /v1/openapi.json), built in
// code from apiRoutes, a table with one entry per pattern the server
// registers, and from the Go types of the bodies, whose JSON Schemas
// (2020-12) are derived by reflection as encoding/json encodes them.
// cmd/docgen writes it to docs/openapi.json; the tests of this package
// check that the table and the mux agree, and validate real answers of a
// running server against it.

import (
	"encoding"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/deskd/deskd/desk"
	"github.com/deskd/deskd/desk/replay"
	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/memory/transcript"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/triggers"
)

// patternOpenAPI is the pattern of the document itself.
const patternOpenAPI = "GET /v1/openapi.json"

// openAPI answers GET /v1/openapi.json: the document, as JSON.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) {
	doc, err := OpenAPI()
	if err != nil { // a type of the table that the generator cannot describe: a bug its test catches
		s.o.Log.Error().Err(err).Msg("openapi document")
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc)
}

// OpenAPI returns the OpenAPI 3.1 description of the HTTP API as indented
// JSON: every route a deskd may serve (GET /metrics and the console's
// too, which cmd/deskd adds), each operation's parameters, request body,
// answers (status, content type, JSON Schema) and credentials. Each
// operation names its mux pattern in x-deskd-pattern; the catch-all "/"
// (404, or 405 with Allow) is x-deskd-catch-all at the top.
func OpenAPI() ([]byte, error) {
	g := &schemaGen{defs: map[string]any{}, names: map[reflect.Type]string{typ[errorBody](): "Error"}, owners: map[string]reflect.Type{"Error": typ[errorBody]()}}
	g.defs["Error"] = map[string]any{
		"type": "object", "required": []string{"error"}, "additionalProperties": false,
		"properties":  map[string]any{"error": map[string]any{"type": "string"}},
		"description": `Every error of the API: {"error": "..."}, saying what was refused and why.`,
	}
	paths := map[string]any{}
	ids := map[string]string{}
	catchAll := ""
	for _, rt := range apiRoutes() {
		if rt.catchAll {
			catchAll = rt.pattern
			continue
		}
		method, path, err := rt.openAPIPath()
		if err != nil {
			return nil, err
		}
		op, err := rt.operation(g)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s: %w", rt.pattern, err)
		}
		if prev, dup := ids[rt.id]; dup {
			return nil, fmt.Errorf("openapi: %s: operationId %q is %s's too", rt.pattern, rt.id, prev)
		}
		ids[rt.id] = rt.pattern
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		if _, dup := item[method]; dup {
			return nil, fmt.Errorf("openapi: %s: %s %s is described twice", rt.pattern, method, path)
		}
		item[method] = op
	}
	if g.err != nil {
		return nil, g.err
	}
	doc := map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": map[string]any{
			"title":       "deskd HTTP API",
			"version":     "v1",
			"description": docDescription,
		},
		"servers":           []any{map[string]any{"url": "http://127.0.0.1:7317", "description": "listen's default"}},
		"paths":             paths,
		"security":          operatorOnly(),
		"x-deskd-catch-all": catchAll,
		"components": map[string]any{
			"schemas": g.defs,
			"securitySchemes": map[string]any{
				schemeOperator: map[string]any{"type": "http", "scheme": "bearer",
					"description": "The operator's token (auth_token_file): every endpoint. A request over the unix socket of listen, and every request while no token of any kind is configured, has the operator's trust without it."},
				schemeFeed: map[string]any{"type": "http", "scheme": "bearer",
					"description": "A feed's token (feed_token_file): POST /v1/desks/{desk}/triggers (market triggers only: kind manual is 403) and GET /v1/desks/{desk}/triggers/{id} of the triggers posted with it (without their reply); 403 on anything else."},
				schemeMetrics: map[string]any{"type": "http", "scheme": "bearer",
					"description": "The scraper's token (metrics_token_file): GET /metrics alone; 403 on anything else."},
				schemeCookie: map[string]any{"type": "apiKey", "in": "cookie", "name": CookieName,
					"description": "The web console's sign-in (POST /v1/login with the operator's token): the operator's trust for " + SignInTTL.String() + ". A mutation with it must be Content-Type: application/json (415 otherwise)."},
			},
		},
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("openapi: encode the document: %w", err)
	}
	return append(out, '\n'), nil
}

// docDescription is the document's info.description.
const docDescription = `deskd's HTTP API: the desks, their triggers, sessions, pauses, approvals and files, the config diff and the event stream.

JSON in and out; every error is {"error": "..."} with a fitting status. Every route answers 421 to a request over TCP whose Host is not an IP address, localhost, a host of listen or a name of allowed_hosts (DNS rebinding), before anything else.

Credentials (components.securitySchemes): with no token configured the API is open (it listens on loopback only) and every request is the operator's; a request over listen's unix socket is the operator's; otherwise every route but GET /healthz, POST /v1/login, GET /v1/proof and the console's page and assets needs one: 401 without, 403 when it does not reach the route, 429 (Retry-After) to a token from an address that sent too many wrong ones. A browser's cross-origin mutation is 403. While deskd shuts down, every POST and GET /healthz answer 503.

A path served for another method only answers 405 with Allow (x-deskd-catch-all); any other path 404. Request headers past 64 KiB are 431, net/http's own plain-text answer.`

// The security schemes' names.
const (
	schemeOperator = "operatorToken"
	schemeFeed     = "feedToken"
	schemeMetrics  = "metricsToken"
	schemeCookie   = "consoleCookie"
)

// operatorOnly is the security of an operator's route: its token or the
// console's cookie.
func operatorOnly() []any {
	return []any{map[string]any{schemeOperator: []string{}}, map[string]any{schemeCookie: []string{}}}
}

// access is who may call a route, as credential.reaches and
// Server.public decide.
type access int

// The accesses.
const (
	operatorAccess access = iota // the operator's credential
	feedAccess                   // the operator's, or a feed's token
	metricsAccess                // the operator's, or the scraper's token
	publicAccess                 // no credential (the Host rule still applies)
)

// security is a's security requirement.
func (a access) security() []any {
	switch a {
	case feedAccess:
		return append(operatorOnly(), map[string]any{schemeFeed: []string{}})
	case metricsAccess:
		return append(operatorOnly(), map[string]any{schemeMetrics: []string{}})
	case publicAccess:
		return []any{}
	}
	return operatorOnly()
}

// param is a query or header parameter.
type param struct {
	name, in, what string
	schema         map[string]any
}

// answer is one status a route may answer.
type answer struct {
	status int
	what   string
	// bodies are the Go types of its JSON body (one of them); none and no
	// content: no body.
	bodies []reflect.Type
	// content, if set, is a media type that is not JSON (the body is not
	// described further).
	content string
	// headers are the response headers it sets.
	headers []string
}

// route describes one pattern the server registers.
type route struct {
	// pattern is the mux pattern ("GET /v1/desks/{desk}").
	pattern string
	// path, if set, is the OpenAPI path, when the pattern's cannot be one
	// (a subtree).
	path string
	// catchAll marks the pattern "/": no operation of its own.
	catchAll bool
	id       string
	summary  string
	access   access
	query    []param
	headers  []param
	// body is the request body's type; bodyOptional: it may be empty.
	body         reflect.Type
	bodyOptional bool
	answers      []answer
}

// typ is reflect.TypeFor, shorter.
func typ[T any]() reflect.Type { return reflect.TypeFor[T]() }

// errorBody is the type of {"error": "..."}, the schema "Error".
type errorBody struct {
	Error string `json:"error"`
}

// errAnswer is an error answer.
func errAnswer(status int, what string) answer {
	return answer{status: status, what: what, bodies: []reflect.Type{typ[errorBody]()}}
}

// jsonAnswer is an answer with a JSON body of type T.
func jsonAnswer[T any](status int, what string) answer {
	return answer{status: status, what: what, bodies: []reflect.Type{typ[T]()}}
}

// dateParam is ?date= of the notes and the audit.
func dateParam() param {
	return param{name: "date", in: "query", what: "A trading date YYYY-MM-DD; default: the trading date now (400 otherwise).",
		schema: map[string]any{"type": "string", "format": "date"}}
}

// apiRoutes is the table of every pattern the server registers, with
// /metrics and the console's, which are added when deskd runs them. A
// route missing here fails TestOpenAPICoversEveryRoute.
func apiRoutes() []route {
	filesErrors := []answer{
		errAnswer(404, "The session, version or change is unknown, or the desk has no folder."),
		errAnswer(409, "An ambiguous prefix (the matching ids, at most 5), or a change that cannot be made."),
		errAnswer(500, "Reading or writing the desk's files failed (deskd's log has the cause)."),
	}
	bodyErrors := []answer{
		errAnswer(400, "The body is not the JSON object wanted (unknown field, bad JSON, a missing or bad value)."),
		errAnswer(413, "The body is too large."),
	}
	return []route{
		{pattern: "GET /healthz", id: "getHealth", summary: "Whether deskd serves, and every desk can write to its disk.", access: publicAccess,
			answers: []answer{jsonAnswer[HealthResponse](200, "deskd serves (refused config files and desks that failed to start are listed, but leave it 200)."),
				{status: 503, what: "A desk cannot write to its disk (status degraded), or deskd is shutting down (an error).",
					bodies: []reflect.Type{typ[HealthResponse](), typ[errorBody]()}}}},
		{pattern: "GET /v1/desks", id: "listDesks", summary: "Every desk's status, the config files refused, NATS and notify.",
			answers: []answer{jsonAnswer[DesksResponse](200, "The desks, sorted by name.")}},
		{pattern: "GET /v1/desks/{desk}", id: "getDesk", summary: "One desk's status.",
			answers: []answer{jsonAnswer[desk.Status](200, "The desk's status (state failed for a desk that failed to start, standby for one another host of the cluster owns).")}},
		{pattern: patternPostTrigger, id: "postTrigger", summary: "Queue a trigger, durably; the same id twice queues it once; with wait, answer once its turn ends.", access: feedAccess,
			body: typ[triggers.Request](),
			query: []param{{name: "wait", in: "query", what: "A duration (30s): once the trigger is durably queued (or known), wait up to it (at most " + maxWait.String() + ") for it to be answered, interrupted or dropped, and answer 200 with its status; 202 when the wait passes first.",
				schema: map[string]any{"type": "string"}}},
			answers: append([]answer{
				{status: 202, what: "Queued; with wait: queued or known, and not final when the wait passed (state now, duplicate for a known id).", bodies: []reflect.Type{typ[TriggerResponse]()}, headers: []string{"Location"}},
				{status: 200, what: "The id was known: nothing new was queued (duplicate); with wait: the trigger is final, its status as GET .../triggers/{id} answers it (a feed's token reads no reply).",
					bodies: []reflect.Type{typ[TriggerResponse](), typ[desk.TriggerStatus]()}, headers: []string{"Location"}},
				errAnswer(400, "wait is not a duration."),
				errAnswer(403, "A feed's token sent kind manual, or waits on a trigger it did not post."),
				jsonAnswer[TriggerResponse](423, "The desk is paused and refuses triggers meanwhile."),
				{status: 429, what: "The desk's queue is full (or too many wrong tokens).", bodies: []reflect.Type{typ[TriggerResponse](), typ[errorBody]()}, headers: []string{"Retry-After"}},
				{status: 503, what: "The desk stopped (it may be restarting), or cannot write to its disk: try again with the same id.",
					bodies: []reflect.Type{typ[TriggerResponse](), typ[errorBody]()}, headers: []string{"Retry-After"}},
			}, bodyErrors...)},
		{pattern: patternGetTrigger, id: "getTrigger", summary: "A trigger's state and, once answered, its session, turn and reply.", access: feedAccess,
			query: []param{{name: "wait", in: "query", what: "A duration (30s): wait up to it (at most " + maxWait.String() + ") for the trigger to be answered, interrupted or dropped.",
				schema: map[string]any{"type": "string"}}},
			answers: []answer{jsonAnswer[desk.TriggerStatus](200, "The trigger (a feed's token reads no reply)."),
				errAnswer(400, "wait is not a duration."),
				errAnswer(403, "A feed's token asked for a trigger it did not post."),
				errAnswer(404, "No such trigger.")}},
		{pattern: "POST /v1/desks/{desk}/rollover", id: "postRollover", summary: "Roll the desk over now: summarise, fold, start a new session.",
			answers: []answer{jsonAnswer[SessionResponse](200, "The session that ended and the new one."), errAnswer(500, "The rollover failed.")}},
		{pattern: "POST /v1/desks/{desk}/fork", id: "postFork", summary: "Start a new session that carries the current one's exchanges.",
			answers: []answer{jsonAnswer[SessionResponse](200, "The session forked from and the new one."), errAnswer(500, "The fork failed.")}},
		{pattern: "POST /v1/desks/{desk}/pause", id: "postPause", summary: "Pause the desk: no new turn starts until it is resumed.",
			body: typ[PauseRequest](), bodyOptional: true,
			answers: append([]answer{jsonAnswer[PauseResponse](200, "Paused (already: it was)."), errAnswer(500, "The pause was not recorded.")}, bodyErrors...)},
		{pattern: "POST /v1/desks/{desk}/resume", id: "postResume", summary: "Resume a paused desk.",
			body: typ[PauseRequest](), bodyOptional: true,
			answers: append([]answer{jsonAnswer[ResumeResponse](200, "Resumed (resumed false: it was not paused)."), errAnswer(500, "The resume was not recorded.")}, bodyErrors...)},
		{pattern: "GET /v1/config/diff", id: "getConfigDiff", summary: "What a reload would change, or why it would be refused.",
			answers: []answer{jsonAnswer[desk.ConfigCheck](200, "The check."), errAnswer(501, "This deskd cannot check its config.")}},
		{pattern: "POST /v1/login", id: "postLogin", summary: "The web console's sign-in, with the operator's token in the body.", access: publicAccess,
			body: typ[LoginRequest](),
			answers: append([]answer{
				{status: 200, what: "Signed in: the cookie is set (open: no token is configured, and no cookie is needed).", bodies: []reflect.Type{typ[LoginResponse]()}, headers: []string{"Set-Cookie"}},
				errAnswer(401, "Not the operator's token."),
				errAnswer(500, "No sign-in could be made."),
			}, bodyErrors...)},
		{pattern: "POST /v1/logout", id: "postLogout", summary: "End the console's sign-in.",
			answers: []answer{{status: 204, what: "Signed out: the cookie is cleared.", headers: []string{"Set-Cookie"}}}},
		{pattern: "GET /v1/whoami", id: "getWhoami", summary: "The request's credential and how it came.",
			answers: []answer{jsonAnswer[WhoamiResponse](200, "The credential.")}},
		{pattern: "POST /v1/desks/{desk}/triggers/{id}/ack", id: "postAck", summary: "Acknowledge an interrupted trigger.",
			body: typ[AckRequest](), bodyOptional: true,
			answers: append([]answer{jsonAnswer[desk.TriggerStatus](200, "The trigger, acknowledged."), errAnswer(404, "No such trigger."),
				errAnswer(409, "The trigger was not interrupted."), errAnswer(503, "The acknowledgement was not recorded.")}, bodyErrors...)},
		{pattern: "GET /v1/events", id: "getEvents", summary: "The event stream, as Server-Sent Events (id, event: the topic, data: the event's JSON).",
			query: []param{
				{name: "desk", in: "query", what: "Only this desk's events (404 for a desk deskd does not know; a desk of a cluster this host stands by for, is starting or failed to start gives what this host sees of it).", schema: map[string]any{"type": "string"}},
				{name: "follow", in: "query", what: "0 or false: send what the ring holds and end; default: follow.", schema: map[string]any{"type": "string"}},
				{name: "backlog", in: "query", what: "1: replay what the ring holds first.", schema: map[string]any{"type": "string"}},
			},
			headers: []param{{name: "Last-Event-ID", in: "header", what: "Resume after this event (a deskd restarted since replays what it holds).", schema: map[string]any{"type": "string"}}},
			answers: []answer{{status: 200, what: "The stream.", content: "text/event-stream"}, errAnswer(404, "An unknown desk."), errAnswer(501, "This deskd keeps no event ring.")}},
		{pattern: patternProof, id: "getProof", summary: "Prove that this host holds a client's token without the client sending it: the HMAC-SHA256 under the token of \"deskd-proof\\x00\" + nonce + \"\\x00\" + host. The CLI asks it before it sends its token to a host a 421 named.", access: publicAccess,
			query:   []param{{name: "nonce", in: "query", what: "A fresh random nonce: exactly 64 hex digits (400 otherwise).", schema: map[string]any{"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}}},
			headers: []param{{name: HeaderTokenID, in: "header", what: "The token's id: the hex of the first 16 bytes of its SHA-256 (400 when not 32 hex digits).", schema: map[string]any{"type": "string"}}},
			answers: []answer{jsonAnswer[ProofResponse](200, "The proof, and this host's cluster name (empty without a cluster)."),
				errAnswer(400, "The nonce or the token id is not what is wanted."),
				errAnswer(403, "No token of this deskd has that id."),
				{status: 429, what: "Too many wrong tokens from this address.", bodies: []reflect.Type{typ[errorBody]()}, headers: []string{"Retry-After"}}}},
		{pattern: "GET /v1/desks/{desk}/sessions", id: "listSessions", summary: "The desk's sessions, oldest first.",
			answers: append([]answer{jsonAnswer[SessionsResponse](200, "The sessions.")}, filesErrors...)},
		{pattern: "GET /v1/desks/{desk}/sessions/{session}/transcript", id: "getTranscript", summary: "A session's transcript.",
			answers: append([]answer{jsonAnswer[TranscriptResponse](200, "The transcript.")}, filesErrors...)},
		{pattern: "GET /v1/desks/{desk}/sessions/{session}/export", id: "getExport", summary: "A session's transcript as a self-contained HTML page, to download.",
			answers: append([]answer{{status: 200, what: "The page (Content-Disposition: attachment).", content: "text/html", headers: []string{"Content-Disposition"}}}, filesErrors...)},
		{pattern: "GET /v1/desks/{desk}/memory", id: "getMemory", summary: "Memory.md and its kept versions.",
			answers: append([]answer{jsonAnswer[MemoryResponse](200, "The text and the versions, newest first.")}, filesErrors...)},
		{pattern: "GET /v1/desks/{desk}/memory/versions/{version}", id: "getMemoryVersion", summary: "A kept version of Memory.md and its diff to the current one.",
			answers: append([]answer{jsonAnswer[MemoryVersionResponse](200, "The version."), errAnswer(400, "Not a version's name.")}, filesErrors...)},
		{pattern: "POST /v1/desks/{desk}/memory/restore", id: "postMemoryRestore", summary: "Restore a kept version of Memory.md (the current text is kept).",
			body:    typ[RestoreRequest](),
			answers: append(append([]answer{jsonAnswer[RestoreResponse](200, "Restored.")}, filesErrors...), bodyErrors...)},
		{pattern: "GET /v1/desks/{desk}/notes", id: "getNotes", summary: "A trading date's notes.", query: []param{dateParam()},
			answers: append([]answer{jsonAnswer[NotesResponse](200, "The notes."), errAnswer(400, "date is not a trading date.")}, filesErrors...)},
		{pattern: "GET /v1/desks/{desk}/summaries", id: "listSummaries", summary: "The desk's summaries, newest first.",
			answers: append([]answer{jsonAnswer[SummariesResponse](200, "The summaries.")}, filesErrors...)},
		{pattern: "GET /v1/desks/{desk}/skills", id: "listSkills", summary: "The desk's skills and the curator's changes.",
			answers: append([]answer{jsonAnswer[SkillsResponse](200, "The skills and changes, newest first.")}, filesErrors...)},
		{pattern: "POST /v1/desks/{desk}/skills/undo", id: "postSkillsUndo", summary: "Undo a change of the curator's.",
			body:    typ[UndoRequest](),
			answers: append(append([]answer{jsonAnswer[SkillChange](200, "The change that undid it.")}, filesErrors...), bodyErrors...)},
		{pattern: "GET /v1/desks/{desk}/audit", id: "getAudit", summary: "A trading date's audit bundle (tar.gz), to download.", query: []param{dateParam()},
			answers: append([]answer{{status: 200, what: "The bundle (Content-Disposition: attachment).", content: "application/gzip", headers: []string{"Content-Disposition"}},
				errAnswer(400, "date is not a trading date."), errAnswer(501, "This deskd cannot find its config for an audit bundle.")}, filesErrors...)},
		{pattern: "GET /v1/desks/{desk}/replays", id: "listReplays", summary: "The desk's past replays (deskd replay without --out), newest first; read only.",
			answers: append([]answer{jsonAnswer[ReplaysResponse](200, "The replays.")}, filesErrors...)},
		{pattern: "GET /v1/desks/{desk}/replays/{replay}", id: "getReplay", summary: "A past replay's report: each trigger with the original's and the candidate's side.",
			answers: append([]answer{jsonAnswer[replay.Report](200, "The report."), errAnswer(400, "Not a replay's name.")}, filesErrors...)},
		{pattern: "GET /v1/approvals", id: "listApprovals", summary: "The tool calls that wait for an operator's decision, on every desk.",
			answers: []answer{jsonAnswer[ApprovalsResponse](200, "The calls, oldest first."), errAnswer(404, "Approvals are not configured.")}},
		{pattern: "GET /v1/desks/{desk}/approvals", id: "listDeskApprovals", summary: "The tool calls that wait for a decision on a desk.",
			answers: []answer{jsonAnswer[ApprovalsResponse](200, "The calls, oldest first."), errAnswer(404, "Approvals are not configured, or an unknown desk.")}},
		{pattern: "POST /v1/desks/{desk}/approvals/{id}/approve", id: "postApprove", summary: "Approve a waiting tool call.",
			body: typ[DecisionRequest](), bodyOptional: true,
			answers: append([]answer{jsonAnswer[router.Decision](200, "The decision."), errAnswer(404, "Approvals are not configured, or no such call waits."),
				errAnswer(500, "The decision failed.")}, bodyErrors...)},
		{pattern: "POST /v1/desks/{desk}/approvals/{id}/deny", id: "postDeny", summary: "Deny a waiting tool call (the model hears the reason).",
			body: typ[DecisionRequest](), bodyOptional: true,
			answers: append([]answer{jsonAnswer[router.Decision](200, "The decision."), errAnswer(404, "Approvals are not configured, or no such call waits."),
				errAnswer(500, "The decision failed.")}, bodyErrors...)},
		{pattern: patternOpenAPI, id: "getOpenAPI", summary: "This document.",
			answers: []answer{{status: 200, what: "The OpenAPI 3.1 description of the API.", content: "application/json"},
				errAnswer(500, "The document could not be built (a bug: its tests build it).")}},
		{pattern: patternMetrics, id: "getMetrics", summary: "Prometheus metrics (added by deskd run).", access: metricsAccess,
			answers: []answer{{status: 200, what: "The metrics, in Prometheus' text format.", content: "text/plain"}}},
		{pattern: "GET /{$}", path: "/", id: "getConsole", summary: "The web console's page (when a console is configured).", access: publicAccess,
			answers: []answer{{status: 200, what: "The page.", content: "text/html"}}},
		{pattern: "GET /console/", path: "/console/{asset}", id: "getConsoleAsset", summary: "The web console's assets (when a console is configured): everything under /console/.", access: publicAccess,
			answers: []answer{{status: 200, what: "The asset.", content: "*/*"}, errAnswer(404, "No such asset.")}},
		{pattern: "/", catchAll: true},
	}
}

// wildcard matches a pattern's wildcards.
var wildcard = regexp.MustCompile(`\{([a-z]+)(\.\.\.)?\}`)

// openAPIPath returns the route's method (lower case) and OpenAPI path.
func (rt route) openAPIPath() (method, path string, err error) {
	m, p, found := strings.Cut(rt.pattern, " ")
	if !found {
		return "", "", fmt.Errorf("openapi: %s: a route of every method is not an operation", rt.pattern)
	}
	if rt.path != "" {
		p = rt.path
	}
	if strings.Contains(p, "{$}") || p != "/" && strings.HasSuffix(p, "/") {
		return "", "", fmt.Errorf("openapi: %s: the path %q is no OpenAPI path: give the route a path", rt.pattern, p)
	}
	return strings.ToLower(m), p, nil
}

// pathParam describes a wildcard of a path; "" for one it does not know.
func pathParam(name string) string {
	switch name {
	case "desk":
		return "The desk's name."
	case "id":
		return "The trigger's, or the approval's, id."
	case "session":
		return "A session's id, a unique prefix of one, or current."
	case "version":
		return "A kept version's id, or a unique prefix of one."
	case "replay":
		return "A past replay's folder name under <state_dir>/replays/<desk>/ (<date>-<n>)."
	case "asset":
		return "The asset's path under /console/."
	}
	return ""
}

// operation returns the route's OpenAPI operation.
func (rt route) operation(g *schemaGen) (map[string]any, error) {
	method, path, err := rt.openAPIPath()
	if err != nil {
		return nil, err
	}
	op := map[string]any{"operationId": rt.id, "summary": rt.summary, "security": rt.access.security(), "x-deskd-pattern": rt.pattern}
	var params []any
	for _, m := range wildcard.FindAllStringSubmatch(path, -1) {
		what := pathParam(m[1])
		if what == "" {
			return nil, fmt.Errorf("path wildcard {%s} has no description in pathParams", m[1])
		}
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "description": what, "schema": map[string]any{"type": "string"}})
	}
	for _, p := range append(slices.Clone(rt.query), rt.headers...) {
		params = append(params, map[string]any{"name": p.name, "in": p.in, "description": p.what, "schema": p.schema})
	}
	if params != nil {
		op["parameters"] = params
	}
	if rt.body != nil {
		what := "A JSON object; unknown fields are refused."
		if rt.bodyOptional {
			what += " It may be empty."
		}
		op["requestBody"] = map[string]any{"required": !rt.bodyOptional, "description": what,
			"content": map[string]any{"application/json": map[string]any{"schema": g.schema(rt.body)}}}
	}
	responses := map[string]any{}
	for _, a := range mergeAnswers(append(slices.Clone(rt.answers), rt.commonAnswers(method, path)...)) {
		responses[strconv.Itoa(a.status)] = g.response(a)
	}
	op["responses"] = responses
	return op, nil
}

// commonAnswers are the statuses the server answers before the route's
// handler, or the desk lookup every {desk} route makes: what ServeHTTP
// and Server.desk do.
func (rt route) commonAnswers(method, path string) []answer {
	out := []answer{errAnswer(421, "The Host is not one of deskd's names (DNS rebinding).")}
	if rt.access != publicAccess {
		out = append(out,
			answer{status: 401, what: "No credential.", bodies: []reflect.Type{typ[errorBody]()}, headers: []string{"WWW-Authenticate"}},
			errAnswer(403, "The credential does not reach this route."))
	}
	if rt.access != publicAccess || rt.pattern == "POST /v1/login" {
		out = append(out, answer{status: 429, what: "Too many wrong tokens from this address.", bodies: []reflect.Type{typ[errorBody]()}, headers: []string{"Retry-After"}})
	}
	if method == "post" {
		out = append(out, errAnswer(403, "A browser's cross-origin request."), errAnswer(503, "deskd is shutting down."))
		if rt.access != publicAccess || rt.pattern == "POST /v1/login" {
			out = append(out, errAnswer(415, "Signed in with the console's cookie (or signing in), and not Content-Type: application/json."))
		}
	}
	if strings.Contains(path, "{desk}") {
		out = append(out, errAnswer(404, "An unknown desk."), errAnswer(503, "The desk failed to start, or (in a cluster) this host has just taken it over and is starting it (Retry-After)."),
			jsonAnswer[MisdirectedResponse](421, "In a cluster: another host owns the desk (owner, and its API address addr), or none does yet."))
	}
	return out
}

// mergeAnswers merges the answers of one status into one: their
// descriptions, bodies, content types and headers.
func mergeAnswers(as []answer) []answer {
	var out []answer
	at := map[int]int{}
	for _, a := range as {
		i, seen := at[a.status]
		if !seen {
			at[a.status] = len(out)
			a.bodies, a.headers = slices.Clone(a.bodies), slices.Clone(a.headers)
			out = append(out, a)
			continue
		}
		m := &out[i]
		m.what += " Or: " + a.what
		for _, b := range a.bodies {
			if !slices.Contains(m.bodies, b) {
				m.bodies = append(m.bodies, b)
			}
		}
		for _, h := range a.headers {
			if !slices.Contains(m.headers, h) {
				m.headers = append(m.headers, h)
			}
		}
		if m.content == "" {
			m.content = a.content
		}
	}
	return out
}

// response returns the response object of a.
func (g *schemaGen) response(a answer) map[string]any {
	r := map[string]any{"description": a.what}
	if len(a.headers) > 0 {
		hs := map[string]any{}
		for _, h := range a.headers {
			hs[h] = map[string]any{"schema": map[string]any{"type": "string"}}
		}
		r["headers"] = hs
	}
	content := map[string]any{}
	if a.content != "" {
		content[a.content] = map[string]any{}
	}
	switch len(a.bodies) {
	case 0:
	case 1:
		content["application/json"] = map[string]any{"schema": g.schema(a.bodies[0])}
	default:
		var one []any
		for _, b := range a.bodies {
			one = append(one, g.schema(b))
		}
		content["application/json"] = map[string]any{"schema": map[string]any{"anyOf": one}}
	}
	if len(content) > 0 {
		r["content"] = content
	}
	return r
}

// schemaGen derives JSON Schemas from Go types, as components.
type schemaGen struct {
	// defs are the components' schemas, by name.
	defs map[string]any
	// names are the component names of the types met; owners the type of
	// each name.
	names  map[reflect.Type]string
	owners map[string]reflect.Type
	// err is the first type that could not be described.
	err error
}

// Types the generator knows by name.
var (
	timeType    = reflect.TypeFor[time.Time]()
	rawType     = reflect.TypeFor[json.RawMessage]()
	dateType    = reflect.TypeFor[memory.Date]()
	entryType   = reflect.TypeFor[transcript.Entry]()
	marshaler   = reflect.TypeFor[json.Marshaler]()
	textMarshal = reflect.TypeFor[encoding.TextMarshaler]()
)

// neverNull reports whether a slice or map field of a struct is made
// non-nil by the code that answers it (a JSON [] or {}, never null); any
// other is null when nil, as encoding/json encodes it.
func neverNull(owner reflect.Type, field string) bool {
	switch owner {
	case typ[DesksResponse]():
		return field == "Desks" || field == "ConfigRejected"
	case typ[ApprovalsResponse]():
		return field == "Approvals"
	case typ[MemoryResponse]():
		return field == "Versions"
	case typ[SkillsResponse]():
		return field == "Skills" || field == "Changes"
	case typ[SummariesResponse]():
		return field == "Summaries"
	case typ[TranscriptResponse]():
		return field == "Entries"
	case typ[SessionsResponse]():
		return field == "Sessions"
	case typ[ReplaysResponse]():
		return field == "Replays"
	case typ[replay.Report]():
		return field == "Triggers" || field == "Approvals"
	case typ[replay.Side]():
		return field == "ToolCalls"
	}
	return false
}

// schema returns the schema of t: a $ref for a named struct (its schema
// in defs), inline otherwise.
func (g *schemaGen) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{} // any JSON value
	case t == dateType:
		return map[string]any{"type": "string", "format": "date"}
	case t == entryType:
		return g.ref(t)
	case t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler):
		g.fail(fmt.Errorf("openapi: %v encodes itself (MarshalJSON): say in openapi.go's schema how", t))
		return map[string]any{}
	case t.Implements(textMarshal) || reflect.PointerTo(t).Implements(textMarshal):
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Pointer:
		return nullable(g.schema(t.Elem()))
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nullable(map[string]any{"type": "string", "contentEncoding": "base64"})
		}
		return nullable(map[string]any{"type": "array", "items": g.schema(t.Elem())})
	case reflect.Array:
		return map[string]any{"type": "array", "items": g.schema(t.Elem()), "minItems": t.Len(), "maxItems": t.Len()}
	case reflect.Map:
		return nullable(map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())})
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		return g.ref(t)
	}
	g.fail(fmt.Errorf("openapi: %v (%s) has no JSON encoding", t, t.Kind()))
	return map[string]any{}
}

// fail keeps the first error.
func (g *schemaGen) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

// ref returns a $ref to the component of the named struct t, adding it
// to defs at the first use.
func (g *schemaGen) ref(t reflect.Type) map[string]any {
	name, seen := g.names[t]
	if !seen {
		name = componentName(t)
		if other, taken := g.owners[name]; taken {
			g.fail(fmt.Errorf("openapi: %v and %v are both named %s", t, other, name))
		}
		g.names[t], g.owners[name] = name, t
		g.defs[name] = map[string]any{} // a recursive type meets its $ref
		g.defs[name] = g.object(t)
	}
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// componentName is the component of a named type: its name in package
// httpapi, package.Name elsewhere (desk.Status).
func componentName(t reflect.Type) string {
	pkg := t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]
	name := strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, t.Name())
	if pkg == "httpapi" {
		return name
	}
	return pkg + "." + name
}

// object returns the schema of struct t's JSON object: its fields as
// encoding/json encodes them (embedded structs' promoted, "-" left out,
// omitempty and omitzero ones not required), and no other.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props, required := map[string]any{}, []string{}
	g.fields(t, props, &required, map[string]bool{})
	if t == entryType { // transcript.Entry.MarshalJSON adds its Duration in milliseconds
		props["duration_ms"] = map[string]any{"type": "integer"}
	}
	sort.Strings(required)
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

// fields adds the JSON fields of struct t to props, outer fields before
// the embedded ones they hide.
func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string, seen map[string]bool) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		s := g.schema(ft)
		if strings.Contains(","+opts+",", ",string,") {
			s = map[string]any{"type": "string"}
		}
		if neverNull(t, f.Name) {
			s = notNull(s)
		}
		props[name] = s
		if !omitted(ft, opts) {
			*required = append(*required, name)
		}
	}
	for _, e := range embedded {
		g.fields(e, props, required, seen)
	}
}

// omitted reports whether encoding/json may leave out a field of type t
// with the tag's options: omitzero, or omitempty on a type that can be
// empty (not a struct).
func omitted(t reflect.Type, opts string) bool {
	has := func(o string) bool { return slices.Contains(strings.Split(opts, ","), o) }
	if has("omitzero") {
		return true
	}
	if !has("omitempty") {
		return false
	}
	return t.Kind() != reflect.Struct
}

// nullable returns s that also allows null.
func nullable(s map[string]any) map[string]any {
	if t, ok := s["type"].(string); ok {
		s["type"] = []string{t, "null"}
		return s
	}
	if len(s) == 0 {
		return s
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// notNull undoes nullable.
func notNull(s map[string]any) map[string]any {
	if t, ok := s["type"].([]string); ok && len(t) == 2 && t[1] == "null" {
		s["type"] = t[0]
	}
	return s
}
