package router

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/router/routertest"
)

// wireCases are requests whose written body must equal, byte for byte,
// what deskd sent for them when the SDKs encoded it (testdata/wire).
var wireCases = []struct {
	name string
	req  Request
}{
	{"one user message", Request{Task: TaskTurn, System: "You are a desk.", Messages: []Message{{Role: RoleUser, Text: "buy INFY"}}}},
	{"no system, no tools", Request{Task: TaskTurn, Messages: []Message{{Role: RoleUser, Text: "hi"}}}},
	{"tool calls, results, errors and empty texts", Request{
		Task: TaskTurn, System: "Desk <fx> & \"rates\"\n\u2028 ünïcode", MaxOutputTokens: 300, CacheKey: "deskd-fx", Prefix: 4,
		Tools: []ToolSpec{getQuote, {Name: "note", Description: "Write a note."}, {Name: "odd", Schema: json.RawMessage(`{"properties":{"a":{"type":"integer"}},"additionalProperties":false}`)}},
		Messages: []Message{
			{Role: RoleUser, Text: ""},
			{Role: RoleAssistant, Text: "", ToolCalls: []ToolCall{
				{ID: "call_1", Name: "get_quote", Arguments: json.RawMessage(`{"symbol":"TCS"}`)},
				{ID: "call_2", Name: "note", Arguments: json.RawMessage(`not json`)},
				{ID: "call_3", Name: "gone_tool", Arguments: nil},
			}},
			{Role: RoleTool, ToolCallID: "call_1", ToolName: "get_quote", Text: "TCS 4100"},
			{Role: RoleTool, ToolCallID: "call_2", ToolName: "note", Text: "arguments are not JSON", IsError: true},
			{Role: RoleTool, ToolCallID: "call_3", ToolName: "gone_tool", Text: "", IsError: true},
			{Role: RoleUser, Text: "and now?"},
			{Role: RoleAssistant, Text: "   "},
			{Role: RoleAssistant, Text: "Bought <10> & sold"},
			{Role: RoleUser, Text: "next"},
		},
	}},
	{"tool choice none, history marked", Request{
		Task: TaskSummary, System: "s", ToolChoice: ToolChoiceNone, Prefix: 2, CacheKey: "deskd-a",
		Tools: []ToolSpec{getQuote},
		Messages: []Message{
			{Role: RoleUser, Text: "q"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Name: "get_quote", Arguments: json.RawMessage(`{}`)}}},
			{Role: RoleTool, ToolCallID: "c", ToolName: "get_quote", Text: "1"},
			{Role: RoleUser, Text: "Summarise"},
		},
	}},
	{"escapes and odd schemas", Request{
		Task: TaskTurn, System: "a<b>&c \u2028\u2029 \x00\x1f\t é 😀 \xff end", MaxOutputTokens: 9, Prefix: 2,
		Tools: []ToolSpec{
			{Name: "html_tool", Description: "Quotes <\"x\"> & 'y' \u2028", Schema: json.RawMessage(`{"type":"object","properties":{"ünï":{"type":"string","description":"<b>&amp;</b>"},"n":{"type":"number","minimum":1.5e3}},"required":["ünï",3],"$defs":{"z":{"enum":[null,true,"\u003c"]}}}`)},
			{Name: "array_typed", Schema: json.RawMessage(`{"type":["object","null"],"properties":{}}`)},
		},
		Messages: []Message{
			{Role: RoleUser, Text: "<script>alert('x')</script> & \xfe\xff"},
			{Role: RoleAssistant, Text: "ok\u2028", ToolCalls: []ToolCall{
				{ID: "c<1>", Name: "html_tool", Arguments: json.RawMessage(`{"ünï":"<&>","n":  1000}`)},
				{ID: "c2", Name: "array_typed", Arguments: json.RawMessage(`[1,2]`)},
				{ID: "c3", Name: "array_typed", Arguments: json.RawMessage(`"{\"a\":1}"`)},
			}},
			{Role: RoleTool, ToolCallID: "c<1>", ToolName: "html_tool", Text: "Error already <said>", IsError: true},
			{Role: RoleTool, ToolCallID: "c2", ToolName: "array_typed", Text: "\x01 ctl"},
			{Role: RoleTool, ToolCallID: "c3", ToolName: "array_typed", Text: "fine"},
		},
	}},
	{"stub tools only", Request{
		Task: TaskTurn, Prefix: 1,
		Messages: []Message{
			{Role: RoleAssistant, Text: "x", ToolCalls: []ToolCall{{ID: "c", Name: "old", Arguments: json.RawMessage(`{"a":1}`)}}},
			{Role: RoleTool, ToolCallID: "c", ToolName: "old", Text: "done"},
		},
	}},
}

// TestWireBodyIsTheSDKsRecorded sends each case through the provider, to
// a fake service, and checks the raw body it got against
// testdata/wire/<api>-<case>.json: the body deskd sent for the case when
// the SDKs (openai-go v3.98.0, anthropic-sdk-go v2.15.0) encoded each
// piece of it, and which then equalled, as JSON, the SDKs' encoding of
// the whole request's parameters. Byte for byte where the body spells its
// strings as the SDKs did; since issue 24 item 5 deskd writes < > & as
// they are where the SDKs escaped them (\u003c, \u003e, \u0026), and an
// unmarked lone text of a Messages API message as its content string, the
// shorthand of the one text block the SDK wrote: there the body must mean
// what the SDK's meant (routertest.Meaning: the same JSON once decoded,
// numbers as written), and hold no such escape. Once with messages that
// have no cache, and twice with cached ones (the second call reads every
// message's encoding from its cache).
func TestWireBodyIsTheSDKsRecorded(t *testing.T) {
	for _, api := range []routertest.API{routertest.ChatCompletions, routertest.Messages} {
		for _, tt := range wireCases {
			t.Run(api.String()+"/"+tt.name, func(t *testing.T) {
				p, srv := newTestProvider(t, api, time.Minute, routertest.Always(routertest.Reply{Text: "ok"}))
				name := filepath.Join("testdata", "wire", api.String()+"-"+strings.ReplaceAll(tt.name, " ", "-")+".json")
				want, err := os.ReadFile(name)
				if err != nil {
					t.Fatalf("the recorded body: %v", err)
				}
				cachedReq := tt.req
				cachedReq.Messages = append([]Message(nil), tt.req.Messages...)
				withWireCaches(cachedReq.Messages)
				for i, req := range []Request{tt.req, cachedReq, cachedReq} {
					if _, err := p.Complete(t.Context(), req); err != nil {
						t.Fatalf("call %d: Complete: %v", i, err)
					}
					got := srv.Requests()[i].Raw
					if bytes.Equal(got, want) {
						continue
					}
					g, err := routertest.Meaning(api, got)
					if err != nil {
						t.Fatalf("call %d: %v", i, err)
					}
					w, err := routertest.Meaning(api, want)
					if err != nil {
						t.Fatalf("the recorded body: %v", err)
					}
					if !reflect.DeepEqual(g, w) {
						t.Errorf("call %d: body\n%s\ndoes not mean what the SDK's did (%s)\n%s", i, got, name, want)
					}
					for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
						if bytes.Contains(got, []byte(esc)) {
							t.Errorf("call %d: the body escapes a character as %s:\n%s", i, esc, got)
						}
					}
				}
				if api == routertest.Messages {
					if n := bytes.Count(srv.Requests()[0].Raw, []byte(`"cache_control"`)); n > 4 {
						t.Errorf("%d cache_control marks, the API allows 4", n)
					}
				}
			})
		}
	}
}

// TestWireCacheIsFilledOnce shows that a cached message is encoded once:
// a wrong encoding put in its cache is what the next body carries.
func TestWireCacheIsFilledOnce(t *testing.T) {
	for _, api := range []routertest.API{routertest.ChatCompletions, routertest.Messages} {
		t.Run(api.String(), func(t *testing.T) {
			p, srv := newTestProvider(t, api, time.Minute, routertest.Always(routertest.Reply{Text: "ok"}))
			msgs := []Message{{Role: RoleUser, Text: "first"}, {Role: RoleAssistant, Text: "answer"}, {Role: RoleUser, Text: "second"}}
			withWireCaches(msgs)
			if _, err := p.Complete(t.Context(), Request{Task: TaskTurn, Messages: msgs}); err != nil {
				t.Fatal(err)
			}
			if msgs[0].wire.openai.Load() == nil && msgs[0].wire.anthropic.Load() == nil {
				t.Fatalf("the message's cache is empty after a call")
			}
			// Replace the first message's encoding: a provider that
			// encodes it again would not send this.
			forged := []byte(`{"role":"user","content":"forged"}`)
			msgs[0].wire.openai.Store(&forged)
			blocks := [][]byte{[]byte(`{"text":"forged","type":"text"}`)}
			msgs[0].wire.anthropic.Store(&blocks)
			if _, err := p.Complete(t.Context(), Request{Task: TaskTurn, Messages: msgs}); err != nil {
				t.Fatal(err)
			}
			if got := srv.Requests()[1].LastUser(); got != "second" {
				t.Errorf("last user = %q", got)
			}
			if got := srv.Requests()[1].Messages[0].Text; got != "forged" {
				t.Errorf("first message = %q, want the cached encoding (forged)", got)
			}
		})
	}
}

// TestToolsAndSystemAreEncodedOncePerContent: a provider keeps the
// encodings of a tool and of a system prompt by their text: a forged
// encoding in its memo is what the next body carries, a changed text (a
// tool's description or schema under the same name) is encoded anew, and
// the first definition, shown again, is the kept one.
func TestToolsAndSystemAreEncodedOncePerContent(t *testing.T) {
	for _, api := range []routertest.API{routertest.ChatCompletions, routertest.Messages} {
		t.Run(api.String(), func(t *testing.T) {
			p, srv := newTestProvider(t, api, time.Minute, routertest.Always(routertest.Reply{Text: "ok"}))
			var tools *toolMemo
			var system *memo
			switch p := p.(type) {
			case *OpenAI:
				tools, system = p.tools, p.system
			case *Anthropic:
				tools, system = p.tools, p.system
			}
			req := Request{Task: TaskTurn, System: "Rules.", Tools: []ToolSpec{getQuote}, Messages: []Message{{Role: RoleUser, Text: "hi"}}}
			if _, err := p.Complete(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			kept := func(ToolSpec) ([]byte, error) { t.Fatal("the tool was not kept"); return nil, nil }
			tool, _ := tools.get(getQuote, kept)
			sys, _ := system.get("Rules.", func() ([]byte, error) { t.Fatal("the system prompt was not kept"); return nil, nil })
			forge := func(b []byte, from, to string) []byte { return bytes.Replace(b, []byte(from), []byte(to), 1) }
			tools.m[getQuote.Name][0].enc = forge(tool, "Last price of a symbol.", "forged tool")
			system.m["Rules."] = forge(sys, "Rules.", "forged system")
			if _, err := p.Complete(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			raw := srv.Requests()[1].Raw
			if !bytes.Contains(raw, []byte("forged tool")) || !bytes.Contains(raw, []byte("forged system")) {
				t.Errorf("the second body did not use the kept encodings:\n%s", raw)
			}
			req.System = "New rules."
			if _, err := p.Complete(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			if raw := srv.Requests()[2].Raw; !bytes.Contains(raw, []byte("New rules.")) || bytes.Contains(raw, []byte("forged system")) {
				t.Errorf("a changed system prompt was not encoded anew:\n%s", raw)
			}
			redefined := []ToolSpec{
				{Name: getQuote.Name, Description: "Another desk's quote tool.", Schema: getQuote.Schema},
				{Name: getQuote.Name, Description: getQuote.Description, Schema: json.RawMessage(`{"type":"object","properties":{"isin":{"type":"string"}}}`)},
			}
			for i, def := range redefined {
				req.Tools = []ToolSpec{def}
				if _, err := p.Complete(t.Context(), req); err != nil {
					t.Fatal(err)
				}
				raw := srv.Requests()[3+i].Raw
				if bytes.Contains(raw, []byte("forged tool")) || !bytes.Contains(raw, []byte(def.Description)) || !bytes.Contains(raw, []byte(`isin`)) == (i == 1) {
					t.Errorf("tool definition %d under the kept name was not encoded anew:\n%s", i, raw)
				}
			}
			req.Tools = []ToolSpec{getQuote}
			if _, err := p.Complete(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			if raw := srv.Requests()[5].Raw; !bytes.Contains(raw, []byte("forged tool")) {
				t.Errorf("the first definition, shown again, was not the kept encoding:\n%s", raw)
			}
		})
	}
}

// TestBodyBuffersAreKept: a body buffer given back is handed out again
// after garbage collections (a sync.Pool would have dropped it), at most
// keptBodyBytes of room is kept, and a buffer made when none is kept has
// room for the last body given back, up to maxHintedBody, so that writing
// the next body does not grow it by doubling.
func TestBodyBuffersAreKept(t *testing.T) {
	filled := func(size int) *wireBody {
		b := new(wireBody)
		b.Write(bytes.Repeat([]byte{'x'}, size))
		return b
	}
	var p bodies
	b := filled(64 << 10)
	p.put(b)
	runtime.GC()
	runtime.GC()
	if got := p.get(); got != b || got.Len() != 0 {
		t.Errorf("the buffer given back was not handed out again, emptied, after two garbage collections (same buffer %v, %d bytes in it)", got == b, got.Len())
	}

	p = bodies{}
	var room int
	for range 2 * keptBodyBytes / (1 << 20) {
		b := filled(1 << 20)
		room += b.Cap()
		p.put(b)
	}
	if p.kept > keptBodyBytes || p.kept < keptBodyBytes/2 {
		t.Errorf("bodies kept buffers of %d bytes of room of %d given back; want at most keptBodyBytes (%d) and at least half of it", p.kept, room, keptBodyBytes)
	}

	for _, size := range []int{10 << 10, 640 << 10, 3 << 20} {
		var p bodies
		p.put(filled(size))
		p.get() // the kept buffer
		want := min(size, maxHintedBody)
		if got := p.get(); got.Cap() < want || got.Cap() > want+want/2 || got.Len() != 0 {
			t.Errorf("after a %d-byte body: a new buffer holds %d bytes with room for %d; want room for %d to %d", size, got.Len(), got.Cap(), want, want+want/2)
		}
	}
}

// TestToolMemoKeepsAFewDefinitionsAName: a tool name redefined more often
// than toolVariants keeps its latest definitions only, so that a lookup
// compares with a few: the oldest is encoded again, the latest is not.
func TestToolMemoKeepsAFewDefinitionsAName(t *testing.T) {
	var m toolMemo
	encoded := 0
	enc := func(t ToolSpec) ([]byte, error) { encoded++; return []byte(t.Description), nil }
	def := func(i int) ToolSpec {
		return ToolSpec{Name: "skill_read", Description: strings.Repeat("s", i+1), Schema: getQuote.Schema}
	}
	for i := range 2 * toolVariants {
		if _, err := m.get(def(i), enc); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(m.m["skill_read"]); n != toolVariants {
		t.Errorf("%d definitions kept under one name; want toolVariants (%d)", n, toolVariants)
	}
	encoded = 0
	if b, _ := m.get(def(2*toolVariants-1), enc); encoded != 0 || string(b) != def(2*toolVariants-1).Description {
		t.Errorf("the latest definition was encoded again (%d) or answered %q", encoded, b)
	}
	if m.get(def(0), enc); encoded != 1 {
		t.Errorf("the oldest definition, dropped, was encoded %d times on its return; want 1", encoded)
	}
}
