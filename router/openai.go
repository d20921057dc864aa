package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/deskd/deskd/memory"
)

// OpenAI is a client of the Chat Completions API at any base URL. It
// streams every answer, asks for the usage in the stream's last chunk, and
// makes one attempt per call: the router retries.
type OpenAI struct {
	// streamer calls the endpoint, the base URL's chat/completions.
	streamer
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns a Chat Completions client (o.BaseURL defaults to
// DefaultOpenAIBaseURL). It reads no OPENAI_* variable: a key from the
// environment must never reach another base URL.
func NewOpenAI(o ClientOptions) (*OpenAI, error) {
	o, err := o.checked(OpenAIProvider)
	if err != nil {
		return nil, err
	}
	target, err := endpoint(o.BaseURL, "chat/completions")
	if err != nil {
		return nil, fmt.Errorf("model %s: base_url: %w", o.Name, err)
	}
	return &OpenAI{streamer: newStreamer(o, target, "Authorization", "Bearer ")}, nil
}

// Complete streams one answer to req. Every failure is an *APIError, and
// its text holds no run of the key (scrubError); a stream that ends before
// a choice's finish_reason is a failure, never a reply. An answer that
// passes its cap (ReplyCap of the output cap) is read no further: the call
// is cut off and the answer returned as Truncated. A tool call whose
// arguments are not valid JSON keeps the text the model sent (see
// toolArguments), so that the tool loop reports the parse error to the
// model.
func (p *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	return p.stream(ctx, outputCap(p.maxOut, req.MaxOutputTokens),
		func(b *wireBody) ([]byte, error) { return p.body(b, req) },
		func(x *exchange) (Response, error) { return p.read(x, req) })
}

// read reads the answer of x, a call for req.
func (p *OpenAI) read(x *exchange, req Request) (Response, error) {
	maxOut, meter, rec, c, cancel := x.maxOut, &x.meter, x.rec, x.call, x.cancel

	var (
		acc    chatAnswer
		chunks int
		cut    bool
		chunk  chatChunk
		events = x.events
	)
	for {
		_, data, err := events.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				if rec.cut.Load() {
					break
				}
				return Response{}, c.failure(err, p.streamError)
			}
			break
		}
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			break
		}
		// The choices' array is reused, cleared: decode decodes into
		// the elements it finds, and keeps the fields a chunk leaves out.
		// The id and model keep their strings (keptString).
		choices := chunk.Choices[:cap(chunk.Choices)]
		clear(choices)
		chunk = chatChunk{ID: chunk.ID.next(), Model: chunk.Model.next(), Choices: choices[:0]}
		if err := events.decode(data, &chunk); err != nil {
			return Response{}, c.failure(err, p.streamError)
		}
		if len(chunk.Error) > 0 {
			return Response{}, c.failure(&eventError{data: bytes.Clone(data)}, p.streamError)
		}
		chunks++
		if !acc.add(&chunk) {
			return Response{}, &APIError{Model: p.name,
				Err: fmt.Errorf("malformed stream: chunk %d does not continue the answer", chunks)}
		}
		if !meter.add(chunk.bytes()) {
			cut = true
			break
		}
	}
	if cut || rec.cut.Load() {
		cancel() // hang up: the rest is not read
		resp := Response{ModelID: acc.model, StopReason: "truncated", Truncated: true}
		resp.Text = cutText(acc.content.String(), meter.limit)
		if resp.Text == "" {
			resp.Text = cutText(acc.refusal.String(), meter.limit)
		}
		var u memory.Usage
		if acc.usage != nil {
			u = acc.usage.memory()
		}
		outTokens := maxOut
		if outTokens <= 0 {
			outTokens = UncappedReplyTokens
		}
		resp.Usage = truncatedUsage(u, req, outTokens)
		return resp, nil
	}
	if acc.finish == "" {
		if chunks == 0 {
			return Response{}, &APIError{Model: p.name, Retryable: true,
				Err: errors.New("the answer carried no stream chunk (is base_url a Chat Completions API?)")}
		}
		return Response{}, &APIError{Model: p.name, Retryable: true,
			Err: fmt.Errorf("the stream ended after %d chunks, before its finish_reason", chunks)}
	}
	if !acc.choice {
		return Response{}, &APIError{Model: p.name, Err: errors.New("malformed stream: no choice")}
	}
	resp := Response{Text: acc.content.String(), ModelID: acc.model, StopReason: acc.finish}
	if resp.Text == "" && acc.refusal.Len() > 0 {
		resp.Text = acc.refusal.String()
	}
	for _, tc := range acc.calls {
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{
			ID: tc.id, Name: string(tc.name), Arguments: toolArguments(string(tc.args)),
		})
	}
	if acc.usage != nil {
		resp.Usage = acc.usage.memory()
	}
	return resp, nil
}

// chatChunk is one chunk of a Chat Completions stream, as far as deskd
// reads it. Error is set when the chunk is an error object instead.
type chatChunk struct {
	ID      keptString `json:"id"`
	Model   keptString `json:"model"`
	Choices []struct {
		Index int64 `json:"index"`
		Delta struct {
			Content   textPart `json:"content"`
			Refusal   textPart `json:"refusal"`
			ToolCalls []struct {
				Index    int64  `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      textPart `json:"name"`
					Arguments textPart `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// bytes is what a chunk adds to a reply: the text, refusals and tool
// calls of its choices.
func (c *chatChunk) bytes() int {
	n := 0
	for _, ch := range c.Choices {
		n += ch.Delta.Content.Len() + ch.Delta.Refusal.Len()
		for _, tc := range ch.Delta.ToolCalls {
			n += len(tc.ID) + tc.Function.Name.Len() + tc.Function.Arguments.Len()
		}
	}
	return n
}

// chatUsage is a stream's usage (stream_options.include_usage).
type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *chatUsage) memory() memory.Usage {
	return memory.Usage{InputTokens: int(u.PromptTokens), OutputTokens: int(u.CompletionTokens),
		CachedTokens: int(u.PromptTokensDetails.CachedTokens)}
}

// Bounds on the indices of a stream's chunks: the API answers with at
// most 128 choices, and a tool call's index may pass the calls so far by
// at most maxToolCallGrowth (a sparse index must not make deskd allocate
// without bound).
const (
	maxChoiceIndex    = 127
	maxToolCallGrowth = 128
)

// chatAnswer gathers the first choice of a Chat Completions stream: its
// text, refusal, tool calls (their deltas by index) and finish reason,
// with the stream's model and its last usage.
type chatAnswer struct {
	id, model, finish string
	choice            bool // a chunk carried choice 0
	content, refusal  strings.Builder
	calls             []chatCall
	usage             *chatUsage
}

// chatCall is one tool call of the answer, as its deltas build it.
type chatCall struct {
	id         string
	name, args []byte
}

// add takes in chunk c, and reports false when c does not continue the
// answer: another id than the chunks before, or a choice or tool call
// index out of bounds.
func (a *chatAnswer) add(c *chatChunk) bool {
	id, model := c.ID.String(), c.Model.String()
	if a.id != "" && id != a.id {
		return false
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index < 0 || ch.Index > maxChoiceIndex {
			return false
		}
		if ch.Index != 0 {
			continue
		}
		for _, tc := range ch.Delta.ToolCalls {
			if i := toolCallIndex(tc.Index); i < 0 || i >= len(a.calls)+maxToolCallGrowth {
				return false
			}
		}
	}
	if a.id == "" {
		a.id = id
	}
	if model != "" {
		a.model = model
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		a.choice = true
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
		ch.Delta.Content.writeTo(&a.content)
		ch.Delta.Refusal.writeTo(&a.refusal)
		for _, tc := range ch.Delta.ToolCalls {
			i := toolCallIndex(tc.Index)
			for len(a.calls) <= i {
				a.calls = append(a.calls, chatCall{})
			}
			call := &a.calls[i]
			if tc.ID != "" {
				call.id = tc.ID
			}
			call.name = tc.Function.Name.appendTo(call.name)
			call.args = tc.Function.Arguments.appendTo(call.args)
		}
	}
	// Some servers repeat a running total in every chunk: the last wins.
	if c.Usage != nil {
		a.usage = c.Usage
	}
	return true
}

// toolCallIndex is the position of a streamed tool call: some servers
// send -1 for their only one.
func toolCallIndex(i int64) int {
	if i == -1 {
		return 0
	}
	if i < 0 || i > 1<<20 {
		return -1
	}
	return int(i)
}

// streamError classifies an error object the service sent in place of a
// chunk: {"error": {"message", "type", "code"}}.
func (p *OpenAI) streamError(err error) *APIError {
	data, ok := streamEventError(err)
	if !ok {
		return nil
	}
	var v struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &v)
	msg := v.Error.Message
	if msg == "" {
		msg = serviceMessage(data)
	}
	kind := strings.ToLower(v.Error.Type + " " + fmt.Sprint(v.Error.Code))
	c := call{key: p.key}
	ae := &APIError{Model: p.name, Err: fmt.Errorf("error in the stream: %s", c.scrub(msg))}
	switch {
	case overflowText(msg) || overflowText(kind):
		ae.ContextOverflow = true
	case strings.Contains(kind, "invalid_request"), strings.Contains(kind, "auth"),
		strings.Contains(kind, "permission"), strings.Contains(kind, "not_found"):
	default:
		// A failure while generating (server_error, rate limits, overload).
		ae.Retryable = true
	}
	return ae
}

// body encodes req as a Chat Completions request: what the SDK sent for
// the same request (its parameters' encoding, field by field),
// from the pieces kept encoded (see wireCache): the system prompt and
// each tool by content, each message in its cache. It writes into b, an
// empty buffer, and returns b's bytes.
func (p *OpenAI) body(b *wireBody, req Request) ([]byte, error) {
	b.str("model", p.model)
	b.raw("stream", []byte("true"))
	b.raw("stream_options", []byte(`{"include_usage":true}`))
	if n := outputCap(p.maxOut, req.MaxOutputTokens); n > 0 {
		b.int("max_completion_tokens", n)
	}
	if req.CacheKey != "" {
		b.str("prompt_cache_key", req.CacheKey)
	}
	tools, callable := definedTools(req)
	if len(tools) > 0 {
		b.key("tools")
		b.WriteByte('[')
		for i, t := range tools {
			enc, err := p.tools.get(t, openAITool)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(enc)
		}
		b.WriteByte(']')
	}
	b.key("messages")
	b.WriteByte('[')
	first := true
	if req.System != "" {
		enc, err := p.system.get(req.System, func() ([]byte, error) {
			return marshal(struct {
				Content string `json:"content"`
				Role    string `json:"role"`
			}{req.System, "system"})
		})
		if err != nil {
			return nil, fmt.Errorf("encode the system prompt: %w", err)
		}
		b.Write(enc)
		first = false
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		var slot *atomic.Pointer[[]byte]
		if m.wire != nil {
			slot = &m.wire.openai
		}
		enc, err := cached(slot, func() ([]byte, error) { return openAIMessage(*m) })
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(enc)
	}
	b.WriteByte(']')
	// The tool choice goes last, so that a call in which the model may
	// call no tool begins with the same bytes as the turn before it.
	if len(tools) > 0 && !callable {
		b.raw("tool_choice", []byte(`"none"`))
	}
	return b.done(), nil
}

// openAIMessage encodes one message as the SDK (openai-go) did, byte for
// byte: its fields in the SDK's order, its strings without HTML escapes.
func openAIMessage(m Message) ([]byte, error) {
	var b bytes.Buffer
	switch m.Role {
	case RoleUser:
		b.WriteString(`{"content":`)
		writeString(&b, m.Text)
	case RoleAssistant:
		b.WriteByte('{')
		if m.Text != "" || len(m.ToolCalls) == 0 {
			b.WriteString(`"content":`)
			writeString(&b, m.Text)
			if len(m.ToolCalls) > 0 {
				b.WriteByte(',')
			}
		}
		if len(m.ToolCalls) > 0 {
			b.WriteString(`"tool_calls":[`)
			for i, tc := range m.ToolCalls {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"id":`)
				writeString(&b, tc.ID)
				b.WriteString(`,"function":{"arguments":`)
				writeString(&b, sentArguments(tc.Arguments))
				b.WriteString(`,"name":`)
				writeString(&b, tc.Name)
				b.WriteString(`},"type":"function"}`)
			}
			b.WriteByte(']')
		}
	case RoleTool:
		b.WriteString(`{"content":`)
		writeString(&b, toolResultText(m))
		b.WriteString(`,"tool_call_id":`)
		writeString(&b, m.ToolCallID)
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
	b.WriteString(`,"role":`)
	writeString(&b, m.Role)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// toolResultText is a tool result's text as a Chat Completions tool
// message carries it: an error says so.
func toolResultText(m Message) string {
	if m.IsError && !strings.HasPrefix(strings.ToLower(m.Text), "error") {
		return "Error: " + m.Text
	}
	return m.Text
}

// openAITool encodes one tool definition as the SDK did, field for field,
// without its HTML escapes (see writeString).
func openAITool(t ToolSpec) ([]byte, error) {
	schema, err := schemaObject(t)
	if err != nil {
		return nil, err
	}
	type function struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters"`
	}
	b, err := marshal(struct {
		Function function `json:"function"`
		Type     string   `json:"type"`
	}{function{t.Name, t.Description, schema}, "function"})
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	return b, nil
}

// sentArguments is a tool call's arguments as the model sent them: empty
// is {}, and text that was not JSON (kept by toolArguments as a JSON
// string) goes back as that text, so that the model sees what the tool's
// error result is about.
func sentArguments(args json.RawMessage) string {
	s := strings.TrimSpace(string(args))
	if s == "" {
		return "{}"
	}
	var text string
	if strings.HasPrefix(s, `"`) && json.Unmarshal(args, &text) == nil && !json.Valid([]byte(text)) {
		return text
	}
	return s
}

// outputCap is the tighter of the configured and the requested caps; 0 is
// no cap.
func outputCap(configured, requested int) int {
	switch {
	case requested <= 0:
		return configured
	case configured <= 0:
		return requested
	}
	return min(configured, requested)
}

// schemaObject decodes a tool's JSON schema; an empty one is an object
// schema without properties.
func schemaObject(t ToolSpec) (map[string]any, error) {
	if len(t.Schema) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(t.Schema, &m); err != nil || m == nil {
		return nil, fmt.Errorf("tool %s: the schema is not a JSON object: %v", t.Name, err)
	}
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	return m, nil
}
