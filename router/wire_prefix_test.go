package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/deskd/deskd/memory"
	"github.com/deskd/deskd/router"
	"github.com/deskd/deskd/router/routertest"
)

// TestSummaryFoldAndCuratorReuseTheTurnsPrefix runs two turns (the first
// with a tool round), then the summary, the fold and the curator's call,
// against each service, and shows that each of the three begins with the
// last turn's request: the same bytes up to its messages (model, caps,
// cache key, tools, system), then the last turn's messages, then the
// turn's answer and the call's own prompt, as the last user message. On
// the Messages API the marks for the prompt cache sit on the same tools
// and system prompt, and the end of the history the call repeats (the
// turn's answer) is marked, so that the service reads the turn's prefix
// from its cache; on Chat Completions every call carries the desk's
// prompt_cache_key.
func TestSummaryFoldAndCuratorReuseTheTurnsPrefix(t *testing.T) {
	for _, api := range []routertest.API{routertest.ChatCompletions, routertest.Messages} {
		t.Run(api.String(), func(t *testing.T) {
			g := newLoopRig(t)
			srv := routertest.New(t, api, routertest.Options{Strict: true, Answer: routertest.Script(
				routertest.Reply{ToolCalls: []routertest.ToolCall{{Name: "note", Args: `{"text":"INFY gapped up"}`}}},
				routertest.Reply{Text: "Noted."},
				routertest.Reply{Text: "Holding."},
				routertest.Reply{Text: "The summary."},
				routertest.Reply{Text: "The new Memory.md."},
				routertest.Reply{Text: "[]"},
			)})
			r := g.router(router.Settings{Instructions: "You run the main desk.", Route: []router.Model{serviceModel(t, srv, "k", 0)}})
			g.send(r, "t1", "INFY opens")
			g.send(r, "t2", "TCS opens")
			date := memory.Date{Year: 2026, Month: 3, Day: 2}
			if _, err := r.Summarise(context.Background(), date); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Fold(context.Background(), date, "old memory", "notes"); err != nil {
				t.Fatal(err)
			}
			const curate = "Review your skills and answer with a JSON list of operations."
			if _, err := r.Ask(context.Background(), curate); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 6 {
				t.Fatalf("%d requests, want 6", len(reqs))
			}
			turn := reqs[2]
			for i, name := range []string{"summary", "fold", "curator"} {
				got := reqs[3+i]
				if tools, _ := got.Body["tools"].([]any); len(tools) == 0 {
					t.Errorf("%s: defines no tools", name)
				}
				if got.MayCallTools() {
					t.Errorf("%s: the model may call tools", name)
				}
				if name == "curator" && (got.Last().Role != "user" || got.LastUser() != curate) {
					t.Errorf("curator: last message %+v, want the curator's prompt as the last user message", got.Last())
				}
				head := bytes.Index(turn.Raw, []byte(`"messages":[`))
				if head < 0 || !bytes.HasPrefix(got.Raw, turn.Raw[:head]) {
					t.Errorf("%s: the body does not begin with the last turn's bytes before its messages:\n%s\nturn:\n%s", name, got.Raw, turn.Raw)
				}
				turnMsgs, gotMsgs := rawMessages(t, turn.Raw), rawMessages(t, got.Raw)
				if len(gotMsgs) != len(turnMsgs)+2 {
					t.Fatalf("%s: %d messages, want the turn's %d, its answer and the prompt", name, len(gotMsgs), len(turnMsgs))
				}
				switch api {
				case routertest.ChatCompletions:
					// The very bytes of the turn's request, to the end of
					// its last message.
					end := bytes.LastIndex(turn.Raw, []byte("]}"))
					if !bytes.HasPrefix(got.Raw, turn.Raw[:end]) {
						t.Errorf("%s: the body does not begin with the last turn's request:\n%s\nturn:\n%s", name, got.Raw, turn.Raw)
					}
					if key := got.Body["prompt_cache_key"]; key != "deskd-main" || turn.Body["prompt_cache_key"] != key {
						t.Errorf("%s: prompt_cache_key %v, turn's %v; want deskd-main on both", name, key, turn.Body["prompt_cache_key"])
					}
				case routertest.Messages:
					for i := range turnMsgs {
						if a, b := unmarked(t, turnMsgs[i]), unmarked(t, gotMsgs[i]); !reflect.DeepEqual(a, b) {
							t.Errorf("%s: message %d is %s, the turn's %s", name, i, gotMsgs[i], turnMsgs[i])
						}
					}
					if n := bytes.Count(got.Raw, []byte(`"cache_control":{"type":"ephemeral"}`)); n != 4 {
						t.Errorf("%s: %d cache marks, want 4 (tools, system, the history's end, the prompt)", name, n)
					}
					if !bytes.Contains(gotMsgs[len(turnMsgs)], []byte(`"cache_control"`)) {
						t.Errorf("%s: the end of the history (%s) is not marked for the cache", name, gotMsgs[len(turnMsgs)])
					}
					if !bytes.Contains(turnMsgs[len(turnMsgs)-1], []byte(`"cache_control"`)) {
						t.Errorf("the turn's last message (%s) is not marked for the cache", turnMsgs[len(turnMsgs)-1])
					}
				}
			}
			if n := bytes.Count(turn.Raw, []byte(`"cache_control"`)); api == routertest.Messages && n != 4 {
				t.Errorf("the turn has %d cache marks, want 4", n)
			}
			if api == routertest.ChatCompletions && bytes.Contains(turn.Raw, []byte("cache_control")) {
				t.Errorf("a Chat Completions request carries cache_control")
			}
		})
	}
}

// rawMessages returns the messages of a request's body, as sent.
func rawMessages(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var v struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	return v.Messages
}

// unmarked decodes a Messages API message without its cache marks, and
// with a string content as the text block it stands for
// (routertest.Meaning): a message marked in one request and not in the
// next is the same message.
func unmarked(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	body, err := routertest.Meaning(routertest.Messages, []byte(`{"messages":[`+string(raw)+`]}`))
	if err != nil {
		t.Fatal(err)
	}
	v := body.(map[string]any)["messages"].([]any)[0]
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "cache_control")
			for _, e := range v {
				strip(e)
			}
		case []any:
			for _, e := range v {
				strip(e)
			}
		}
	}
	strip(v)
	return v
}
