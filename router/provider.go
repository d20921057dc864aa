package router

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/deskd/deskd/memory"
)

// Task says what a model call is for. Real models see only the prompt; the
// offline scripted model uses the task to answer deterministically.
type Task string

// The tasks a router asks of a model.
const (
	TaskTurn    Task = "turn"
	TaskSummary Task = memory.SummaryKind // its event record is memory's
	TaskFold    Task = "fold"
	// TaskCompact asks for a checkpoint summary of older exchanges.
	TaskCompact Task = "compact"
	// TaskCurate asks for the skill curator's operations (JSON).
	TaskCurate Task = "curate"
	// TaskFlush is the silent turn before a compaction, in which the desk
	// writes notes of what it must not forget.
	TaskFlush Task = "flush"
)

// Roles of a message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleTool carries a tool's result back to the model.
	RoleTool = "tool"
)

// Message is one message of a conversation.
type Message struct {
	// Role is RoleUser, RoleAssistant or RoleTool.
	Role string
	// Text is the message's text; for RoleTool, the tool's result.
	Text string
	// ToolCalls are the tools an assistant message asks to run.
	ToolCalls []ToolCall
	// ToolCallID answers the ToolCall of that id (RoleTool only).
	ToolCallID string
	// ToolName is the name of the tool that answered (RoleTool only).
	ToolName string
	// IsError marks a tool result that is an error (RoleTool only).
	IsError bool

	// wire keeps the message's encodings for the providers (see
	// wireCache); nil encodes it anew on every call.
	wire *wireCache
}

// ToolSpec describes a tool the model may call.
type ToolSpec struct {
	Name        string
	Description string
	// Schema is the JSON schema of the arguments (an object schema).
	Schema json.RawMessage
}

// ToolCall is the model's request to run a tool; it is stored in the
// session as it is (memory owns the record's shape).
type ToolCall = memory.ToolCall

// ToolChoice says whether the model may call the tools a request defines.
type ToolChoice string

// The tool choices of a request.
const (
	// ToolChoiceAuto lets the model call any tool of the request, or answer.
	ToolChoiceAuto ToolChoice = ""
	// ToolChoiceNone makes the model answer in text: it still sees the
	// tools (and the calls the conversation made), but calls none.
	ToolChoiceNone ToolChoice = "none"
)

// Request is one call to a model.
type Request struct {
	Task     Task
	System   string
	Messages []Message
	// Tools are the tools the request defines. The router defines the
	// desk's tools in every request that carries the session's
	// conversation, so that the model sees what it called; whether it may
	// call them is ToolChoice. A provider also defines, as stubs, any tool
	// the messages called that Tools lacks (a service refuses a
	// conversation with tool calls and no tools), and with Tools empty the
	// model may call none of them.
	Tools []ToolSpec
	// ToolChoice says whether the model may call Tools.
	ToolChoice ToolChoice
	// MaxOutputTokens caps the answer; 0 means the model's configured cap.
	MaxOutputTokens int
	// Fold carries the parts of a fold request (Task == TaskFold).
	Fold *FoldInput
	// Prefix is how many of Messages are the session's history before
	// this call's own messages: the stable prefix that the next calls
	// repeat. The Messages API client marks its last message for the
	// service's prompt cache (as it marks the tools, the system prompt and
	// the last message).
	Prefix int
	// CacheKey names the desk's requests for the service's prompt cache
	// (OpenAI's prompt_cache_key), so that they are routed to the cache
	// that holds their prefix; "" sends none. It holds no secret.
	CacheKey string
}

// stubDescription describes a tool that a conversation called and that the
// request does not define any more.
const stubDescription = "A tool called earlier in this conversation. It is not available now."

// toolName is what both services accept as a tool's name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// definedTools returns the tools a provider sends for req: req.Tools, then
// a stub for every other tool its messages called, and whether the model
// may call them. A request that defines no tools of its own lets the
// model call none, stubs or not.
func definedTools(req Request) (tools []ToolSpec, callable bool) {
	tools = req.Tools
	have := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		have[t.Name] = true
	}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if have[c.Name] || !toolName.MatchString(c.Name) {
				continue
			}
			have[c.Name] = true
			tools = append(tools[:len(tools):len(tools)], ToolSpec{Name: c.Name, Description: stubDescription})
		}
	}
	return tools, len(req.Tools) > 0 && req.ToolChoice != ToolChoiceNone
}

// FoldInput is what a fold folds: the current Memory.md and the notes.
type FoldInput struct {
	Date   memory.Date
	Memory string
	Notes  string
}

// Response is a model's answer.
type Response struct {
	// Text is the answer's text (may be empty when ToolCalls is not).
	Text string
	// ToolCalls are the tools the model asks to run before it answers.
	ToolCalls []ToolCall
	// Usage is what the service reported (estimated by the scripted model).
	Usage memory.Usage
	// ModelID is the provider's own id of the model that answered, as the
	// service reported it.
	ModelID string
	// StopReason is the service's reason for ending the answer.
	StopReason string
	// Truncated is true when the answer passed its cap (ReplyCap) and the
	// rest of the stream was not read: Text holds what came before the
	// cap, ToolCalls is empty (a cut call is never run), and Usage counts
	// the whole output cap where the service had not reported it yet.
	Truncated bool
}

// Caps on a model's streamed answer. A reply may carry ReplyBytesPerToken
// bytes of text and tool arguments for each token of its output cap, and
// at least MinReplyBytes: a model that keeps to its max_output_tokens never
// comes near it (text averages about four bytes a token). The stream
// itself, framing and all, may be ReplyStreamFactor times as long: it
// bounds what a service can make deskd buffer with events that carry no
// text. Past either, deskd stops reading, hangs up, and keeps the reply as
// truncated.
const (
	// ReplyBytesPerToken is the bytes a reply may carry per token of its
	// output cap.
	ReplyBytesPerToken = 32
	// MinReplyBytes is the least a reply may carry, whatever its cap.
	MinReplyBytes = 256 << 10
	// ReplyStreamFactor is how many times a reply's cap the stream that
	// carries it may be.
	ReplyStreamFactor = 16
	// UncappedReplyTokens is the output cap a reply's cap is computed from
	// when the model has none configured.
	UncappedReplyTokens = 32768
)

// ReplyCap is how many bytes of text and tool arguments a reply may carry
// when its output cap is maxOutputTokens (0: none configured).
func ReplyCap(maxOutputTokens int) int {
	if maxOutputTokens <= 0 {
		maxOutputTokens = UncappedReplyTokens
	}
	return max(MinReplyBytes, ReplyBytesPerToken*min(maxOutputTokens, 1<<24))
}

// replyMeter counts a streamed reply's bytes against its cap.
type replyMeter struct {
	limit, used int
}

// add counts n more bytes and reports whether the reply is still within
// its cap.
func (m *replyMeter) add(n int) bool {
	m.used += n
	return m.used <= m.limit
}

// cutText returns the first n bytes of s, backing off to the start of a
// UTF-8 sequence.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// truncatedUsage is what a cut reply is charged: what the service reported
// before the cut, but at least the request's estimate and the whole output
// cap, which it was on its way past.
func truncatedUsage(u memory.Usage, req Request, outputTokens int) memory.Usage {
	u.InputTokens = max(u.InputTokens, int(requestTokens(req)))
	u.OutputTokens = max(u.OutputTokens, outputTokens)
	return u
}

// Provider is one model service: the scripted model, or a client of a real
// model API. Complete makes one attempt; the router retries and falls back.
// A failure should be an *APIError where the service answered.
type Provider interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// APIError is a failed call to a model service.
type APIError struct {
	// Model is the configured model's name.
	Model string
	// Status is the HTTP status, or 0 when no answer came (timeout, dropped
	// connection, stream cut mid-way).
	Status int
	// Retryable is true for 429, 5xx, 529 (overloaded), timeouts and dropped
	// connections; false for the request's own faults (400, 401, 403, 404,
	// a context overflow).
	Retryable bool
	// ContextOverflow is true when the service said the request is larger
	// than the model's context window.
	ContextOverflow bool
	// RetryAfter is the wait the service asked for (Retry-After), if any.
	RetryAfter time.Duration
	// Err is the underlying error; it never holds an API key.
	Err error
}

// Error names the model and the status.
func (e *APIError) Error() string {
	if e.Status == 0 {
		return "model " + e.Model + ": " + e.Err.Error()
	}
	return "model " + e.Model + ": status " + strconv.Itoa(e.Status) + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *APIError) Unwrap() error { return e.Err }

// Model is one entry of a desk's route: a configured model and its client.
type Model struct {
	// Name is the model's key in the config's models map.
	Name string
	// Provider is the kind of service.
	Provider ProviderName
	// Client makes the calls.
	Client Provider
	// ContextWindow is the model's context size in tokens (0: unknown).
	ContextWindow int
	// Prices are per million tokens; zero when not set.
	Prices Prices
}

// Prices of a model, per million tokens.
type Prices struct {
	// Input prices the prompt's tokens that were neither read from nor
	// written to the prompt cache, and Output the answer's.
	Input, Output float64
	// CachedInput prices the prompt's tokens read from the prompt cache
	// (a router defaults it to the provider's share of Input: see
	// WithDefaults).
	CachedInput float64
	// CacheWrite prices the prompt's tokens written to the prompt cache
	// (defaulted as CachedInput is).
	CacheWrite float64
}

// The shares of the input price that a model's cached tokens cost when
// its prices do not say (the services' list prices): OpenAI bills tokens
// read from its prompt cache at half the input price and does not bill
// writes apart; Anthropic bills reads at a tenth of the input price and
// writes (to its five-minute cache) at 1.25 times. Other services bill
// cached tokens as input.
const (
	// OpenAICachedInputShare is the share of Input an OpenAI model's
	// cached token costs.
	OpenAICachedInputShare = 0.5
	// AnthropicCachedInputShare is the share of Input an Anthropic
	// model's cached token costs.
	AnthropicCachedInputShare = 0.1
	// AnthropicCacheWriteShare is the share of Input a token an Anthropic
	// model writes to its cache costs.
	AnthropicCacheWriteShare = 1.25
)

// WithDefaults returns the prices with the cache's prices that are not set
// (zero) computed from Input by the shares of provider's service.
func (p Prices) WithDefaults(provider ProviderName) Prices {
	read, write := 1.0, 1.0
	switch provider {
	case OpenAIProvider:
		read = OpenAICachedInputShare
	case AnthropicProvider:
		read, write = AnthropicCachedInputShare, AnthropicCacheWriteShare
	}
	if p.CachedInput == 0 {
		p.CachedInput = read * p.Input
	}
	if p.CacheWrite == 0 {
		p.CacheWrite = write * p.Input
	}
	return p
}

// Scripted reports whether the model is the offline scripted one.
func (m Model) Scripted() bool { return m.Provider == ScriptedProvider }
