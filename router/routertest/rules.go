package routertest

import (
	"fmt"
	"strings"
)

// Problems returns the rules of api's service that a request body breaks,
// in the service's own words (none for a request the service accepts). It
// checks what the real services enforce on a conversation with tool
// calls: see anthropicProblems and openAIProblems.
func Problems(api API, body map[string]any) []string {
	if api == Messages {
		return anthropicProblems(body)
	}
	return openAIProblems(body)
}

// blocks returns a Messages API message's content as blocks (a string
// content is one text block).
func blocks(m map[string]any) []map[string]any {
	switch c := m["content"].(type) {
	case string:
		return []map[string]any{{"type": "text", "text": c}}
	case []any:
		var out []map[string]any
		for _, b := range c {
			bm, _ := b.(map[string]any)
			out = append(out, bm)
		}
		return out
	}
	return nil
}

// anthropicProblems checks a Messages API request as the service does:
// the first message is the user's and the roles alternate; text blocks are
// not blank; every tool_result answers a tool_use of the assistant message
// just before it, and every tool_use is answered by tool_result blocks at
// the start of the next message; a request with tool_use or tool_result
// blocks defines tools; tool_choice, if any, is one the API knows.
func anthropicProblems(body map[string]any) []string {
	var out []string
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return []string{"messages: at least one message is required"}
	}
	toolBlocks := false
	var prevRole string
	var prevUses []string
	for i, raw := range msgs {
		m, _ := raw.(map[string]any)
		role, _ := m["role"].(string)
		if i == 0 && role != "user" {
			out = append(out, `messages: first message must use the "user" role`)
		}
		if i > 0 && role == prevRole {
			out = append(out, fmt.Sprintf(`messages: roles must alternate between "user" and "assistant", but found multiple %q roles in a row`, role))
		}
		bs := blocks(m)
		if len(bs) == 0 {
			out = append(out, fmt.Sprintf("messages.%d: all messages must have non-empty content", i))
		}
		var uses []string
		answered := map[string]bool{}
		leading := true
		for j, b := range bs {
			switch b["type"] {
			case "text":
				leading = false
				if s, _ := b["text"].(string); strings.TrimSpace(s) == "" {
					out = append(out, fmt.Sprintf("messages.%d.content.%d.text: text content blocks must contain non-whitespace text", i, j))
				}
			case "tool_use":
				toolBlocks = true
				leading = false
				id, _ := b["id"].(string)
				uses = append(uses, id)
			case "tool_result":
				toolBlocks = true
				id, _ := b["tool_use_id"].(string)
				if !contains(prevUses, id) || role != "user" {
					out = append(out, fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
						"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id))
				}
				if leading {
					answered[id] = true
				}
			default:
				leading = false
			}
		}
		var missing []string
		for _, id := range prevUses {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
				"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", ")))
		}
		prevRole, prevUses = role, uses
	}
	if len(prevUses) > 0 {
		out = append(out, fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
			"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(msgs)-1, strings.Join(prevUses, ", ")))
	}
	tools, _ := body["tools"].([]any)
	if toolBlocks && len(tools) == 0 {
		out = append(out, "Requests which include `tool_use` or `tool_result` blocks must define tools.")
	}
	if tc, ok := body["tool_choice"]; ok {
		switch JSONAt(tc, "type") {
		case "auto", "any", "tool", "none":
		default:
			out = append(out, fmt.Sprintf("tool_choice: unknown type %v", JSONAt(tc, "type")))
		}
	}
	return out
}

// openAIProblems checks a Chat Completions request as the service does: a
// "tool" message answers a tool_call id of the assistant message before it
// (other tool messages between them), every tool_call of an assistant
// message is answered before the next message of another role, and
// tool_choice is set only with tools.
func openAIProblems(body map[string]any) []string {
	var out []string
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return []string{"[] is too short - 'messages'"}
	}
	var open []string // the tool_call ids of the last assistant message not answered yet
	var calls []string
	inTools := false
	for i, raw := range msgs {
		m, _ := raw.(map[string]any)
		role, _ := m["role"].(string)
		if role == "tool" {
			id, _ := m["tool_call_id"].(string)
			if !inTools || !contains(calls, id) {
				out = append(out, fmt.Sprintf("Invalid parameter: messages[%d]: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", i))
			}
			open = remove(open, id)
			continue
		}
		if len(open) > 0 {
			out = append(out, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "+
				"The following tool_call_ids did not have response messages: "+strings.Join(open, ", "))
		}
		open, calls, inTools = nil, nil, false
		if role == "assistant" {
			tcs, _ := m["tool_calls"].([]any)
			for _, tc := range tcs {
				id, _ := JSONAt(tc, "id").(string)
				calls = append(calls, id)
			}
			open = append(open, calls...)
			inTools = len(calls) > 0
		}
	}
	if len(open) > 0 {
		out = append(out, "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "+
			"The following tool_call_ids did not have response messages: "+strings.Join(open, ", "))
	}
	tools, _ := body["tools"].([]any)
	if tc, ok := body["tool_choice"]; ok && len(tools) == 0 {
		out = append(out, fmt.Sprintf("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified (got %v).", tc))
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func remove(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
