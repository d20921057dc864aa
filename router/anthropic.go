package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/deskd/deskd/memory"
)

// Anthropic is a client of the Messages API. It streams every answer and
// makes one attempt per call: the router retries.
type Anthropic struct {
	// streamer calls the endpoint, the base URL's v1/messages.
	streamer
}

var _ Provider = (*Anthropic)(nil)

// AnthropicVersion is the Messages API version every request names
// (anthropic-version).
const AnthropicVersion = "2023-06-01"

// NewAnthropic returns a Messages API client (o.BaseURL defaults to
// DefaultAnthropicBaseURL). It reads nothing from the environment nor
// from profile files.
func NewAnthropic(o ClientOptions) (*Anthropic, error) {
	o, err := o.checked(AnthropicProvider)
	if err != nil {
		return nil, err
	}
	// The endpoint is v1/messages under the root.
	base := strings.TrimSuffix(strings.TrimSuffix(o.BaseURL, "/"), "/v1")
	target, err := endpoint(base, "v1/messages")
	if err != nil {
		return nil, fmt.Errorf("model %s: base_url: %w", o.Name, err)
	}
	return &Anthropic{streamer: newStreamer(o, target, "X-Api-Key", "", "Anthropic-Version", AnthropicVersion)}, nil
}

// Complete streams one answer to req. Every failure is an *APIError, and
// its text holds no run of the key (scrubError); a stream that ends before
// message_stop is a failure, never a reply. An answer that passes its cap
// (ReplyCap of max_tokens) is read no further: the call is cut off and the
// answer returned as Truncated. A tool call whose input is not valid JSON
// keeps the text the model sent (see toolArguments), so that the tool
// loop reports the parse error to the model.
func (p *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	return p.stream(ctx, p.maxTokens(req),
		func(b *wireBody) ([]byte, error) { return p.body(b, req) },
		func(x *exchange) (Response, error) { return p.read(x, req) })
}

// read reads the answer of x, a call for req.
func (p *Anthropic) read(x *exchange, req Request) (Response, error) {
	maxTokens, meter, rec, c, cancel := x.maxOut, &x.meter, x.rec, x.call, x.cancel

	var (
		msg     messageAnswer
		ev      messageEvent
		events  int
		started bool
		stopped bool
		cut     bool
		stream  = x.events
	)
	for {
		name, data, err := stream.next()
		if err != nil {
			if errors.Is(err, io.EOF) || rec.cut.Load() {
				break
			}
			return Response{}, c.failure(err, p.streamError)
		}
		switch string(name) {
		case "ping", "":
			continue
		case "error":
			return Response{}, c.failure(&eventError{data: bytes.Clone(data)}, p.streamError)
		}
		ev = ev.next()
		if err := stream.decode(data, &ev); err != nil {
			return Response{}, c.failure(err, p.streamError)
		}
		events++
		if ev.Type.String() == "message_start" {
			started = true
		} else if !started {
			return Response{}, &APIError{Model: p.name,
				Err: fmt.Errorf("malformed stream: %q before message_start", ev.Type.String())}
		}
		if err := msg.add(&ev); err != nil {
			return Response{}, &APIError{Model: p.name, Err: fmt.Errorf("malformed stream: %s", c.scrub(err.Error()))}
		}
		if ev.Type.String() == "message_stop" {
			stopped = true
		}
		if !meter.add(ev.bytes(data)) {
			cut = true
			break
		}
		if stopped {
			break // the answer is whole: nothing follows message_stop
		}
	}
	if cut || rec.cut.Load() {
		cancel() // hang up: the rest is not read
		return p.truncated(&msg, req, meter.limit, maxTokens), nil
	}
	if !stopped {
		if events == 0 {
			return Response{}, &APIError{Model: p.name, Retryable: true,
				Err: errors.New("the answer carried no stream event (is base_url a Messages API?)")}
		}
		return Response{}, &APIError{Model: p.name, Retryable: true,
			Err: fmt.Errorf("the stream ended after %d events, before message_stop", events)}
	}
	resp := Response{ModelID: msg.model, StopReason: msg.stop, Usage: msg.usage.memory()}
	var text strings.Builder
	for i := range msg.blocks {
		b := &msg.blocks[i]
		switch b.Type {
		case "text":
			text.Write(b.text)
		case "tool_use":
			input := string(b.Input)
			if b.streamed {
				input = string(b.input)
			}
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: toolArguments(input)})
		}
	}
	resp.Text = text.String()
	return resp, nil
}

// messageEvent is one event of a Messages API stream, as far as deskd
// reads it: message_start's message, a content block's start, delta or
// stop, message_delta's stop reason and usage.
type messageEvent struct {
	Type    keptString `json:"type"`
	Index   int64      `json:"index"`
	Message struct {
		Model      string         `json:"model"`
		StopReason string         `json:"stop_reason"`
		Content    []messageBlock `json:"content"`
		Usage      messageUsage   `json:"usage"`
	} `json:"message"`
	ContentBlock messageBlock `json:"content_block"`
	Delta        struct {
		Type        keptString      `json:"type"`
		Text        textPart        `json:"text"`
		PartialJSON textPart        `json:"partial_json"`
		Thinking    textPart        `json:"thinking"`
		Signature   textPart        `json:"signature"`
		Citation    json.RawMessage `json:"citation"`
		StopReason  string          `json:"stop_reason"`
	} `json:"delta"`
	Usage messageUsage `json:"usage"`
}

// next is an empty event to decode the next one into, which keeps ev's
// type strings (keptString).
func (ev *messageEvent) next() messageEvent {
	var n messageEvent
	n.Type, n.Delta.Type = ev.Type.next(), ev.Delta.Type.next()
	return n
}

// bytes is what the event adds to a reply: a delta's text, tool arguments
// or thinking, or any other event whole (data).
func (ev *messageEvent) bytes(data []byte) int {
	if ev.Type.String() == "content_block_delta" {
		d := &ev.Delta
		return d.Text.Len() + d.PartialJSON.Len() + d.Thinking.Len() + d.Signature.Len() + len(d.Citation)
	}
	return len(bytes.TrimSpace(data))
}

// messageBlock is one content block of the answer: a text, or a tool call
// with its input. text and input gather its deltas; streamed is set once
// an input delta came (the input is then the deltas, as sent).
type messageBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	text     []byte
	input    []byte
	streamed bool
}

// messageUsage is a Messages API usage: message_start's whole, or
// message_delta's counts, each of which replaces the one before when it
// is present.
type messageUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
}

// update takes the counts u holds.
func (t *messageUsage) update(u messageUsage) {
	for _, f := range [...]struct {
		to   **int64
		from *int64
	}{
		{&t.InputTokens, u.InputTokens}, {&t.OutputTokens, u.OutputTokens},
		{&t.CacheReadInputTokens, u.CacheReadInputTokens}, {&t.CacheCreationInputTokens, u.CacheCreationInputTokens},
	} {
		if f.from != nil {
			*f.to = f.from
		}
	}
}

// memory is the usage as deskd keeps it. InputTokens counts the whole
// prompt, as OpenAI's prompt_tokens does: Anthropic's input_tokens leaves
// out what was read from or written to the cache.
func (t *messageUsage) memory() memory.Usage {
	n := func(p *int64) int {
		if p == nil {
			return 0
		}
		return int(*p)
	}
	return memory.Usage{
		InputTokens:      n(t.InputTokens) + n(t.CacheReadInputTokens) + n(t.CacheCreationInputTokens),
		OutputTokens:     n(t.OutputTokens),
		CachedTokens:     n(t.CacheReadInputTokens),
		CacheWriteTokens: n(t.CacheCreationInputTokens),
	}
}

// messageAnswer gathers a Messages API stream's answer: its model, stop
// reason, usage and content blocks.
type messageAnswer struct {
	model, stop string
	usage       messageUsage
	blocks      []messageBlock
}

// add takes in ev; it fails on a content block that is out of order.
func (m *messageAnswer) add(ev *messageEvent) error {
	switch ev.Type.String() {
	case "message_start":
		*m = messageAnswer{model: ev.Message.Model, stop: ev.Message.StopReason, usage: ev.Message.Usage}
		m.blocks = append(m.blocks, ev.Message.Content...)
		for i := range m.blocks {
			m.blocks[i].text = append(m.blocks[i].text, m.blocks[i].Text...)
		}
	case "message_delta":
		m.stop = ev.Delta.StopReason
		m.usage.update(ev.Usage)
	case "content_block_start":
		if ev.Index != int64(len(m.blocks)) {
			return fmt.Errorf("received event of type %s for content block at index %d, expected index %d", ev.Type.String(), ev.Index, len(m.blocks))
		}
		m.blocks = append(m.blocks, ev.ContentBlock)
		b := &m.blocks[len(m.blocks)-1]
		b.text = append(b.text, b.Text...)
	case "content_block_delta", "content_block_stop":
		if ev.Index < 0 || ev.Index >= int64(len(m.blocks)) {
			return fmt.Errorf("received event of type %s for content block at index %d, out of %d", ev.Type.String(), ev.Index, len(m.blocks))
		}
		if ev.Type.String() == "content_block_stop" {
			return nil
		}
		b := &m.blocks[ev.Index]
		switch ev.Delta.Type.String() {
		case "text_delta":
			b.text = ev.Delta.Text.appendTo(b.text)
		case "input_json_delta":
			b.input = ev.Delta.PartialJSON.appendTo(b.input)
			b.streamed = true
		}
	}
	return nil
}

// truncated is the answer of a stream cut at its cap of limit bytes: the
// text so far, cut to the cap, without tool calls.
func (p *Anthropic) truncated(msg *messageAnswer, req Request, limit, maxTokens int) Response {
	var text strings.Builder
	for i := range msg.blocks {
		if b := &msg.blocks[i]; b.Type == "text" && text.Len() < limit {
			text.WriteString(cutText(string(b.text), limit-text.Len()))
		}
	}
	return Response{Text: text.String(), ModelID: msg.model, StopReason: "truncated", Truncated: true,
		Usage: truncatedUsage(msg.usage.memory(), req, maxTokens)}
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
	data, ok := streamEventError(err)
	if !ok {
		return nil
	}
	var v struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &v)
	msg := v.Error.Message
	if msg == "" {
		msg = serviceMessage(data)
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

// body encodes req as a Messages API request: what the SDK sent for the
// same request (its parameters' encoding, field by field), from the
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
			return marshal([]struct {
				Text         string          `json:"text"`
				CacheControl json.RawMessage `json:"cache_control"`
				Type         string          `json:"type"`
			}{{req.System, json.RawMessage(`{"type":"ephemeral"}`), "text"}})
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
			enc, err := p.tools.get(t, anthropicTool)
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
		writeTurn(&b.Buffer, RoleUser, user, func(i int) bool { return marks[i] })
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
		writeTurn(&b.Buffer, RoleAssistant, blocks, func(j int) bool { return mark && j == len(blocks)-1 })
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

// writeTurn writes one message of the Messages API, of role and the
// content blocks given, each marked for the prompt cache where marked
// says. A lone text block that is not marked goes as the content string,
// the API's shorthand for that block: the same prompt, 24 bytes fewer.
func writeTurn(b *bytes.Buffer, role string, blocks [][]byte, marked func(int) bool) {
	b.WriteString(`{"role":"`)
	b.WriteString(role)
	b.WriteString(`","content":`)
	if len(blocks) == 1 && !marked(0) {
		if text, ok := blockText(blocks[0]); ok {
			b.Write(text)
			b.WriteByte('}')
			return
		}
	}
	b.WriteByte('[')
	for j, blk := range blocks {
		if j > 0 {
			b.WriteByte(',')
		}
		writeMarked(b, blk, marked(j))
	}
	b.WriteString(`]}`)
}

// The encoding of a text block (textBlockParam) around its text's.
const (
	textBlockHead = `{"text":`
	textBlockTail = `,"type":"text"}`
)

// blockText returns the encoded text of blk, a text block's encoding, and
// false for any other block.
func blockText(blk []byte) ([]byte, bool) {
	if len(blk) < len(textBlockHead)+len(textBlockTail) || !bytes.HasPrefix(blk, []byte(textBlockHead)) ||
		!bytes.HasSuffix(blk, []byte(textBlockTail)) {
		return nil, false
	}
	return blk[len(textBlockHead) : len(blk)-len(textBlockTail)], true
}

// anthropicBlocks encodes one message's content blocks as the SDK
// (anthropic-sdk-go) did, field for field, without its HTML escapes (see
// writeString): one block for a user text or a tool result, and an
// assistant message's text and tool calls.
func anthropicBlocks(m Message) ([][]byte, error) {
	var blocks []any
	switch m.Role {
	case RoleUser:
		blocks = append(blocks, textBlock(nonEmpty(m.Text)))
	case RoleTool:
		tr := toolResultBlock{ToolUseID: m.ToolCallID, IsError: m.IsError, Content: m.Text, Type: "tool_result"}
		blocks = append(blocks, tr)
	case RoleAssistant:
		if strings.TrimSpace(m.Text) != "" {
			blocks = append(blocks, textBlock(m.Text))
		}
		for _, tc := range m.ToolCalls {
			blocks = append(blocks, toolUseBlock{ID: tc.ID, Input: objectArguments(tc.Arguments), Name: tc.Name, Type: "tool_use"})
		}
		if len(blocks) == 0 {
			blocks = append(blocks, textBlock(nonEmpty("")))
		}
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
	out := make([][]byte, len(blocks))
	for i, blk := range blocks {
		enc, err := marshal(blk)
		if err != nil {
			return nil, err
		}
		out[i] = enc
	}
	return out, nil
}

// The content blocks of a request's messages, their fields in the SDK's
// order. A tool result's text is its content string, the API's shorthand
// for the one text block the SDK wrote (24 bytes fewer; none for an empty
// result).
type (
	textBlockParam struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	toolResultBlock struct {
		ToolUseID string `json:"tool_use_id"`
		IsError   bool   `json:"is_error,omitempty"`
		Content   string `json:"content,omitempty"`
		Type      string `json:"type"`
	}
	toolUseBlock struct {
		ID    string          `json:"id"`
		Input json.RawMessage `json:"input"`
		Name  string          `json:"name"`
		Type  string          `json:"type"`
	}
)

// textBlock is a text block of text.
func textBlock(text string) textBlockParam { return textBlockParam{Text: text, Type: "text"} }

// anthropicTool encodes one tool definition as the SDK did (without its
// cache mark): the schema's properties, required and type, then its other
// keywords, which the SDK wrote in a random order and deskd sorts, so
// that a tool's encoding stays the same from run to run.
func anthropicTool(t ToolSpec) ([]byte, error) {
	schema, err := schemaObject(t)
	if err != nil {
		return nil, err
	}
	var in bytes.Buffer
	in.WriteByte('{')
	if p, ok := schema["properties"]; ok && p != nil {
		enc, err := marshal(p)
		if err != nil {
			return nil, fmt.Errorf("tool %s: properties: %w", t.Name, err)
		}
		in.WriteString(`"properties":`)
		in.Write(enc)
		in.WriteByte(',')
	}
	var required []string
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required = append(required, s)
			}
		}
	}
	if len(required) > 0 {
		enc, _ := marshal(required)
		in.WriteString(`"required":`)
		in.Write(enc)
		in.WriteByte(',')
	}
	in.WriteString(`"type":"object"`)
	keys := make([]string, 0, len(schema))
	for k := range schema {
		if k != "type" && k != "properties" && k != "required" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		enc, err := marshal(schema[k])
		if err != nil {
			return nil, fmt.Errorf("tool %s: %s: %w", t.Name, k, err)
		}
		in.WriteByte(',')
		writeString(&in, k)
		in.WriteByte(':')
		in.Write(enc)
	}
	in.WriteByte('}')
	b, err := marshal(struct {
		InputSchema json.RawMessage `json:"input_schema"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
	}{in.Bytes(), t.Name, t.Description})
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
