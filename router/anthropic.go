package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/deskd/deskd/memory"
)

// Anthropic is a client of the Messages API. It streams every answer and
// makes one attempt per call: the router retries.
type Anthropic struct {
	client
	svc anthropic.MessageService
	// tools and system keep the encodings of tool definitions and of
	// system prompts, by content.
	tools, system *memo
	// bodies recycles the buffers of request bodies.
	bodies *bodies
}

var _ Provider = (*Anthropic)(nil)

// NewAnthropic returns a Messages API client (o.BaseURL defaults to
// DefaultAnthropicBaseURL). It reads nothing from profile files either.
func NewAnthropic(o ClientOptions) (*Anthropic, error) {
	o, err := o.checked(AnthropicProvider)
	if err != nil {
		return nil, err
	}
	// The SDK adds v1/messages to the root.
	base := strings.TrimSuffix(strings.TrimSuffix(o.BaseURL, "/"), "/v1")
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0),
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	sdk := anthropic.NewClient(opts...)
	return &Anthropic{client: newClient(o), svc: sdk.Messages, tools: new(memo), system: new(memo), bodies: new(bodies)}, nil
}

// Complete streams one answer to req. Every failure is an *APIError, and
// its text holds no run of the key (scrubError); a stream that ends before
// message_stop is a failure, never a reply. An answer that passes its cap
// (ReplyCap of max_tokens) is read no further: the call is cut off and the
// answer returned as Truncated. A tool call whose input is not valid JSON
// keeps the text the model sent (see toolArguments), so that the tool
// loop reports the parse error to the model.
func (p *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := p.complete(ctx, req)
	return resp, scrubError(err, p.key)
}

func (p *Anthropic) complete(ctx context.Context, req Request) (Response, error) {
	buf := p.bodies.get()
	// The SDK sends a copy (setting "stream" copies the body); buf goes
	// back only after the call, when nothing can read it either way.
	defer p.bodies.put(buf)
	body, err := p.body(buf, req)
	if err != nil {
		return Response{}, p.failed(err)
	}
	maxTokens := p.maxTokens(req)
	a := p.begin(ctx, maxTokens)
	defer a.cancel()
	meter, rec, c, cancel := &a.meter, a.rec, a.call, a.cancel

	// The body replaces the empty parameters' encoding; the SDK adds
	// "stream" (already true) and carries it.
	stream := p.svc.NewStreaming(a.ctx, anthropic.MessageNewParams{},
		option.WithRequestBody("application/json", body), option.WithMiddleware(rec.middleware))
	defer stream.Close()
	var (
		msg     anthropic.Message
		events  int
		started bool
		stopped bool
		cut     bool
		// inputs is the tool input each block streamed, as sent: the
		// SDK replaces input that is not valid JSON with {}.
		inputs = map[int64]*strings.Builder{}
	)
	for stream.Next() {
		ev := stream.Current()
		events++
		if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
			if inputs[ev.Index] == nil {
				inputs[ev.Index] = &strings.Builder{}
			}
			inputs[ev.Index].WriteString(ev.Delta.PartialJSON)
		}
		if ev.Type == "message_start" {
			started = true
		} else if !started {
			return Response{}, &APIError{Model: p.name,
				Err: fmt.Errorf("malformed stream: %q before message_start", ev.Type)}
		}
		if err := msg.Accumulate(ev); err != nil {
			return Response{}, &APIError{Model: p.name, Err: fmt.Errorf("malformed stream: %s", c.scrub(err.Error()))}
		}
		if ev.Type == "message_stop" {
			stopped = true
		}
		if !meter.add(anthropicEventBytes(ev)) {
			cut = true
			break
		}
	}
	if cut || rec.cut.Load() {
		cancel() // hang up: the rest is not read
		return p.truncated(msg, req, meter.limit, maxTokens), nil
	}
	if err := stream.Err(); err != nil {
		return Response{}, c.failure(err, p.streamError)
	}
	if !stopped {
		if events == 0 {
			return Response{}, &APIError{Model: p.name, Retryable: true,
				Err: errors.New("the answer carried no stream event (is base_url a Messages API?)")}
		}
		return Response{}, &APIError{Model: p.name, Retryable: true,
			Err: fmt.Errorf("the stream ended after %d events, before message_stop", events)}
	}
	resp := Response{ModelID: msg.Model, StopReason: string(msg.StopReason)}
	var text strings.Builder
	for i, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			input := string(b.Input)
			if in := inputs[int64(i)]; in != nil {
				input = in.String()
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: toolArguments(input)})
		}
	}
	resp.Text = text.String()
	// InputTokens counts the whole prompt, as OpenAI's prompt_tokens does:
	// Anthropic's input_tokens leaves out what was read from or written to
	// the cache.
	u := msg.Usage
	resp.Usage = memory.Usage{
		InputTokens:      int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
		OutputTokens:     int(u.OutputTokens),
		CachedTokens:     int(u.CacheReadInputTokens),
		CacheWriteTokens: int(u.CacheCreationInputTokens),
	}
	return resp, nil
}

// anthropicEventBytes is what an event adds to a reply: a delta's text,
// tool arguments or thinking, or any other event whole.
func anthropicEventBytes(ev anthropic.MessageStreamEventUnion) int {
	if ev.Type == "content_block_delta" {
		d := ev.Delta
		return len(d.Text) + len(d.PartialJSON) + len(d.Thinking) + len(d.Signature) + len(d.Citation.RawJSON())
	}
	return len(ev.RawJSON())
}

// truncated is the answer of a stream cut at its cap of limit bytes: the
// text so far, cut to the cap, without tool calls.
func (p *Anthropic) truncated(msg anthropic.Message, req Request, limit, maxTokens int) Response {
	var text strings.Builder
	for _, b := range msg.Content {
		if b.Type == "text" && text.Len() < limit {
			text.WriteString(cutText(b.Text, limit-text.Len()))
		}
	}
	u := msg.Usage
	usage := memory.Usage{
		InputTokens:      int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
		OutputTokens:     int(u.OutputTokens),
		CachedTokens:     int(u.CacheReadInputTokens),
		CacheWriteTokens: int(u.CacheCreationInputTokens),
	}
	return Response{Text: text.String(), ModelID: msg.Model, StopReason: "truncated", Truncated: true,
		Usage: truncatedUsage(usage, req, maxTokens)}
}

// anthropicErrorStatus is the HTTP status the Messages API gives each error
// type; an error event inside a stream carries only the type.
var anthropicErrorStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// streamError classifies an error event sent inside a stream, such as
// {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}.
// Its Status is the one the API gives that error type.
func (p *Anthropic) streamError(err error) *APIError {
	var data string
	var ae *anthropic.Error
	switch {
	case errors.As(err, &ae):
		data = ae.RawJSON()
	case strings.HasPrefix(err.Error(), "received error while streaming: "):
		data = strings.TrimPrefix(err.Error(), "received error while streaming: ")
	default:
		return nil
	}
	var v struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(data), &v)
	msg := v.Error.Message
	if msg == "" {
		msg = serviceMessage([]byte(data))
	}
	if v.Error.Type != "" && !strings.Contains(msg, v.Error.Type) {
		msg = v.Error.Type + ": " + msg
	}
	c := call{key: p.key}
	out := &APIError{Model: p.name, Err: fmt.Errorf("error in the stream: %s", c.scrub(msg))}
	if status, ok := anthropicErrorStatus[v.Error.Type]; ok {
		out.Status = status
		out.Retryable = retryableStatus(status)
	} else {
		out.Retryable = true // an unknown failure while generating
	}
	if overflowText(msg) && !out.Retryable {
		out.ContextOverflow = true
	}
	return out
}

// maxTokens is the max_tokens of req: the Messages API requires one.
func (p *Anthropic) maxTokens(req Request) int {
	n := outputCap(p.maxOut, req.MaxOutputTokens)
	if n <= 0 {
		n = DefaultMaxOutputTokens
	}
	return n
}

// body encodes req as a Messages API request: what the SDK would send for
// the same request (its parameters' encoding, field by field), from the
// pieces kept encoded (see wireCache): the system prompt and each tool by
// content, each message's blocks in its cache. Tool results go back in a
// user message: the results of one assistant message's calls, and any
// user text after them, make one user turn. It writes into b, an empty
// buffer, and returns b's bytes.
//
// It marks the stable prefix for the prompt cache (cache_control
// ephemeral), at most four marks as the API allows: the last tool, the
// system prompt, the last message of the session's history before this
// call's own messages (req.Prefix), and the last message, so that the
// call's next rounds and the session's next turn find their prefix cached.
func (p *Anthropic) body(b *wireBody, req Request) ([]byte, error) {
	b.str("model", p.model)
	b.int("max_tokens", p.maxTokens(req))
	b.raw("stream", []byte("true"))
	tools, callable := definedTools(req)
	if req.System != "" {
		enc, err := p.system.get(req.System, func() ([]byte, error) {
			return json.Marshal([]anthropic.TextBlockParam{{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}})
		})
		if err != nil {
			return nil, fmt.Errorf("encode the system prompt: %w", err)
		}
		b.raw("system", enc)
	}
	if len(tools) > 0 {
		b.key("tools")
		b.WriteByte('[')
		for i, t := range tools {
			enc, err := p.tools.get(toolKey(t), func() ([]byte, error) { return anthropicTool(t) })
			if err != nil {
				return nil, err
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeMarked(&b.Buffer, enc, i == len(tools)-1)
		}
		b.WriteByte(']')
	}
	b.key("messages")
	b.WriteByte('[')
	n, turns := len(req.Messages), 0
	var user [][]byte // the blocks of the user turn being gathered
	var marks []bool  // which of them end a prefix to cache
	flush := func() {
		if len(user) == 0 {
			return
		}
		if turns > 0 {
			b.WriteByte(',')
		}
		turns++
		b.WriteString(`{"role":"user","content":[`)
		for i, blk := range user {
			if i > 0 {
				b.WriteByte(',')
			}
			writeMarked(&b.Buffer, blk, marks[i])
		}
		b.WriteString(`]}`)
		user, marks = user[:0], marks[:0]
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		var slot *atomic.Pointer[[][]byte]
		if m.wire != nil {
			slot = &m.wire.anthropic
		}
		blocks, err := cached(slot, func() ([][]byte, error) { return anthropicBlocks(*m) })
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		mark := i == n-1 || (i == req.Prefix-1 && req.Prefix < n)
		if m.Role != RoleAssistant {
			user = append(user, blocks[0])
			marks = append(marks, mark)
			continue
		}
		flush()
		if turns > 0 {
			b.WriteByte(',')
		}
		turns++
		b.WriteString(`{"role":"assistant","content":[`)
		for j, blk := range blocks {
			if j > 0 {
				b.WriteByte(',')
			}
			writeMarked(&b.Buffer, blk, mark && j == len(blocks)-1)
		}
		b.WriteString(`]}`)
	}
	flush()
	b.WriteByte(']')
	// The tool choice goes last, so that a call in which the model may
	// call no tool begins with the same bytes as the turn before it.
	if len(tools) > 0 && !callable {
		b.raw("tool_choice", []byte(`{"type":"none"}`))
	}
	return b.done(), nil
}

// anthropicBlocks encodes one message's content blocks as the SDK does:
// one block for a user text or a tool result, and an assistant message's
// text and tool calls.
func anthropicBlocks(m Message) ([][]byte, error) {
	var blocks []anthropic.ContentBlockParamUnion
	switch m.Role {
	case RoleUser:
		blocks = append(blocks, anthropic.NewTextBlock(nonEmpty(m.Text)))
	case RoleTool:
		tr := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
		if m.Text != "" {
			tr.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Text}}}
		}
		if m.IsError {
			tr.IsError = anthropic.Bool(true)
		}
		blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolResult: &tr})
	case RoleAssistant:
		if strings.TrimSpace(m.Text) != "" {
			blocks = append(blocks, anthropic.NewTextBlock(m.Text))
		}
		for _, tc := range m.ToolCalls {
			blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, objectArguments(tc.Arguments), tc.Name))
		}
		if len(blocks) == 0 {
			blocks = append(blocks, anthropic.NewTextBlock(nonEmpty("")))
		}
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
	out := make([][]byte, len(blocks))
	for i, blk := range blocks {
		enc, err := blk.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out[i] = enc
	}
	return out, nil
}

// anthropicTool encodes one tool definition as the SDK does (without its
// cache mark).
func anthropicTool(t ToolSpec) ([]byte, error) {
	schema, err := schemaObject(t)
	if err != nil {
		return nil, err
	}
	in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range schema {
		if k != "type" && k != "properties" && k != "required" {
			in.ExtraFields[k] = v
		}
	}
	tool := anthropic.ToolParam{Name: t.Name, InputSchema: in}
	if t.Description != "" {
		tool.Description = anthropic.String(t.Description)
	}
	b, err := json.Marshal(anthropic.ToolUnionParam{OfTool: &tool})
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	return b, nil
}

// objectArguments is a tool call's input as the Messages API takes it
// back: a JSON object. Arguments that were not one (the tool's error
// result told the model why) go back as {}.
func objectArguments(args json.RawMessage) json.RawMessage {
	a := toolArguments(string(args))
	if a[0] != '{' {
		return json.RawMessage("{}")
	}
	return a
}

// nonEmpty stands in for an empty text, which the Messages API refuses.
func nonEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(empty)"
	}
	return s
}
