package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/deskd/deskd/memory"
)

// OpenAI is a client of the Chat Completions API at any base URL. It
// streams every answer, asks for the usage in the stream's last chunk, and
// makes one attempt per call: the router retries.
type OpenAI struct {
	client
	svc openai.ChatCompletionService
	// tools and system keep the encodings of tool definitions and of
	// system prompts, by content.
	tools, system *memo
	// bodies recycles the buffers of request bodies.
	bodies *bodies
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns a Chat Completions client (o.BaseURL defaults to
// DefaultOpenAIBaseURL).
func NewOpenAI(o ClientOptions) (*OpenAI, error) {
	o, err := o.checked(OpenAIProvider)
	if err != nil {
		return nil, err
	}
	// The service, unlike openai.NewClient, reads no OPENAI_* variable: a
	// key from the environment must never reach another base URL.
	svc := openai.NewChatCompletionService(
		option.WithBaseURL(o.BaseURL),
		option.WithAPIKey(o.APIKey),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0),
	)
	return &OpenAI{client: newClient(o), svc: svc, tools: new(memo), system: new(memo), bodies: new(bodies)}, nil
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
	resp, err := p.complete(ctx, req)
	return resp, scrubError(err, p.key)
}

func (p *OpenAI) complete(ctx context.Context, req Request) (Response, error) {
	buf := p.bodies.get()
	// The SDK sends a copy (setting "stream" copies the body); buf goes
	// back only after the call, when nothing can read it either way.
	defer p.bodies.put(buf)
	body, err := p.body(buf, req)
	if err != nil {
		return Response{}, p.failed(err)
	}
	maxOut := outputCap(p.maxOut, req.MaxOutputTokens)
	a := p.begin(ctx, maxOut)
	defer a.cancel()
	meter, rec, c, cancel := &a.meter, a.rec, a.call, a.cancel

	// The body replaces the empty parameters' encoding; the SDK adds
	// "stream" (already true) and carries it.
	stream := p.svc.NewStreaming(a.ctx, openai.ChatCompletionNewParams{},
		option.WithRequestBody("application/json", body), option.WithMiddleware(rec.middleware))
	defer stream.Close()
	var (
		acc      openai.ChatCompletionAccumulator
		chunks   int
		modelID  string
		finish   string
		usage    openai.CompletionUsage
		hasUsage bool
		cut      bool
	)
	for stream.Next() {
		chunk := stream.Current()
		chunks++
		if !acc.AddChunk(chunk) {
			return Response{}, &APIError{Model: p.name,
				Err: fmt.Errorf("malformed stream: chunk %d does not continue the answer", chunks)}
		}
		if !meter.add(chunkBytes(chunk)) {
			cut = true
			break
		}
		if chunk.Model != "" {
			modelID = chunk.Model
		}
		for _, ch := range chunk.Choices {
			if ch.Index == 0 && ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
		// Some servers repeat a running total in every chunk: the last wins.
		if chunk.JSON.Usage.Valid() {
			usage, hasUsage = chunk.Usage, true
		}
	}
	if cut || rec.cut.Load() {
		cancel() // hang up: the rest is not read
		resp := Response{ModelID: modelID, StopReason: "truncated", Truncated: true}
		if len(acc.Choices) > 0 {
			m := acc.Choices[0].Message
			resp.Text = cutText(m.Content, meter.limit)
			if resp.Text == "" {
				resp.Text = cutText(m.Refusal, meter.limit)
			}
		}
		var u memory.Usage
		if hasUsage {
			u = memory.Usage{InputTokens: int(usage.PromptTokens), OutputTokens: int(usage.CompletionTokens),
				CachedTokens: int(usage.PromptTokensDetails.CachedTokens)}
		}
		outTokens := maxOut
		if outTokens <= 0 {
			outTokens = UncappedReplyTokens
		}
		resp.Usage = truncatedUsage(u, req, outTokens)
		return resp, nil
	}
	if err := stream.Err(); err != nil {
		return Response{}, c.failure(err, p.streamError)
	}
	if finish == "" {
		if chunks == 0 {
			return Response{}, &APIError{Model: p.name, Retryable: true,
				Err: errors.New("the answer carried no stream chunk (is base_url a Chat Completions API?)")}
		}
		return Response{}, &APIError{Model: p.name, Retryable: true,
			Err: fmt.Errorf("the stream ended after %d chunks, before its finish_reason", chunks)}
	}
	if len(acc.Choices) == 0 {
		return Response{}, &APIError{Model: p.name, Err: errors.New("malformed stream: no choice")}
	}
	msg := acc.Choices[0].Message
	resp := Response{Text: msg.Content, ModelID: modelID, StopReason: finish}
	if resp.Text == "" && msg.Refusal != "" {
		resp.Text = msg.Refusal
	}
	for _, tc := range msg.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, ToolCall{
			ID: tc.ID, Name: tc.Function.Name, Arguments: toolArguments(tc.Function.Arguments),
		})
	}
	if hasUsage {
		resp.Usage = memory.Usage{
			InputTokens:  int(usage.PromptTokens),
			OutputTokens: int(usage.CompletionTokens),
			CachedTokens: int(usage.PromptTokensDetails.CachedTokens),
		}
	}
	return resp, nil
}

// chunkBytes is what a chunk adds to a reply: the text, refusals and tool
// calls of its choices.
func chunkBytes(c openai.ChatCompletionChunk) int {
	n := 0
	for _, ch := range c.Choices {
		n += len(ch.Delta.Content) + len(ch.Delta.Refusal)
		for _, tc := range ch.Delta.ToolCalls {
			n += len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	return n
}

// streamError classifies an error object the service sent in place of a
// chunk: {"error": {"message", "type", "code"}}.
func (p *OpenAI) streamError(err error) *APIError {
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		return nil
	}
	var v struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(se.Event.Data, &v)
	msg := v.Error.Message
	if msg == "" {
		msg = serviceMessage(se.Event.Data)
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

// body encodes req as a Chat Completions request: what the SDK would
// send for the same request (its parameters' encoding, field by field),
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
			enc, err := p.tools.get(toolKey(t), func() ([]byte, error) { return openAITool(t) })
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
		enc, err := p.system.get(req.System, func() ([]byte, error) { return json.Marshal(openai.SystemMessage(req.System)) })
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

// openAIMessage encodes one message as the SDK does.
func openAIMessage(m Message) ([]byte, error) {
	var u openai.ChatCompletionMessageParamUnion
	switch m.Role {
	case RoleUser:
		u = openai.UserMessage(m.Text)
	case RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if m.Text != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Text)
		}
		for _, tc := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: sentArguments(tc.Arguments)},
				},
			})
		}
		u = openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
	case RoleTool:
		u = openai.ToolMessage(toolResultText(m), m.ToolCallID)
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
	return u.MarshalJSON()
}

// toolResultText is a tool result's text as a Chat Completions tool
// message carries it: an error says so.
func toolResultText(m Message) string {
	if m.IsError && !strings.HasPrefix(strings.ToLower(m.Text), "error") {
		return "Error: " + m.Text
	}
	return m.Text
}

// openAITool encodes one tool definition as the SDK does.
func openAITool(t ToolSpec) ([]byte, error) {
	schema, err := schemaObject(t)
	if err != nil {
		return nil, err
	}
	fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
	if t.Description != "" {
		fn.Description = openai.String(t.Description)
	}
	b, err := json.Marshal(openai.ChatCompletionFunctionTool(fn))
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
