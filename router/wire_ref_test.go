package router

import (
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// The SDK parameters path, as deskd built its requests before it wrote
// their bodies itself (see wire.go): the reference of wire_test.go and the
// "before" of wire_bench_test.go.

// paramsRef is the SDK parameters of req: the request as deskd built it
// before it wrote the body itself (plus prompt_cache_key), the reference
// the written body must equal.
func (p *OpenAI) paramsRef(req Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(p.model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if n := outputCap(p.maxOut, req.MaxOutputTokens); n > 0 {
		params.MaxCompletionTokens = openai.Int(int64(n))
	}
	if req.CacheKey != "" {
		params.PromptCacheKey = openai.String(req.CacheKey)
	}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Text))
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, tc := range m.ToolCalls {
				args := sentArguments(tc.Arguments)
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			text := m.Text
			if m.IsError && !strings.HasPrefix(strings.ToLower(text), "error") {
				text = "Error: " + text
			}
			params.Messages = append(params.Messages, openai.ToolMessage(text, m.ToolCallID))
		default:
			return params, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	tools, callable := definedTools(req)
	if len(tools) > 0 && !callable {
		params.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String(string(openai.ChatCompletionToolChoiceOptionAutoNone))}
	}
	for _, t := range tools {
		schema, err := schemaObject(t)
		if err != nil {
			return params, err
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	return params, nil
}

// paramsRef is the SDK parameters of req: the request as deskd built it
// before it wrote the body itself, plus the cache marks (cache_control on
// the last tool, the system prompt, the last message of the history and
// the last message), the reference the written body must equal.
func (p *Anthropic) paramsRef(req Request) (anthropic.MessageNewParams, error) {
	n := outputCap(p.maxOut, req.MaxOutputTokens)
	if n <= 0 {
		n = DefaultMaxOutputTokens
	}
	params := anthropic.MessageNewParams{Model: p.model, MaxTokens: int64(n)}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	// Tool results go back in a user message; the results of one assistant
	// message's calls, and any user text after them, make one user turn.
	var user []anthropic.ContentBlockParamUnion
	flush := func() {
		if len(user) > 0 {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(user...))
			user = nil
		}
	}
	// marked is the request's messages to mark: the history's last and
	// the last.
	marked := func(i int) bool {
		return i == len(req.Messages)-1 || (i == req.Prefix-1 && req.Prefix < len(req.Messages))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			blk := anthropic.NewTextBlock(nonEmpty(m.Text))
			if marked(i) {
				blk.OfText.CacheControl = anthropic.NewCacheControlEphemeralParam()
			}
			user = append(user, blk)
		case RoleTool:
			tr := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Text != "" {
				tr.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Text}}}
			}
			if m.IsError {
				tr.IsError = anthropic.Bool(true)
			}
			if marked(i) {
				tr.CacheControl = anthropic.NewCacheControlEphemeralParam()
			}
			user = append(user, anthropic.ContentBlockParamUnion{OfToolResult: &tr})
		case RoleAssistant:
			flush()
			var blocks []anthropic.ContentBlockParamUnion
			if strings.TrimSpace(m.Text) != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, objectArguments(tc.Arguments), tc.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock(nonEmpty("")))
			}
			if marked(i) {
				switch last := blocks[len(blocks)-1]; {
				case last.OfText != nil:
					last.OfText.CacheControl = anthropic.NewCacheControlEphemeralParam()
				case last.OfToolUse != nil:
					last.OfToolUse.CacheControl = anthropic.NewCacheControlEphemeralParam()
				}
			}
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		default:
			return params, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	flush()
	tools, callable := definedTools(req)
	if len(tools) > 0 && !callable {
		params.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	}
	for _, t := range tools {
		schema, err := schemaObject(t)
		if err != nil {
			return params, err
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
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	if len(params.Tools) > 0 {
		params.Tools[len(params.Tools)-1].OfTool.CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	return params, nil
}
