package routertest

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Meaning decodes a request body into what it means to the service: its
// JSON values (numbers as written), with a Messages API message's or tool
// result's string content as the one text block it is shorthand for. Two
// bodies that differ only in their strings' escapes (\u003c or <) or in
// that shorthand mean the same.
func Meaning(api API, body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the body is not JSON: %w", err)
	}
	if api != Messages {
		return v, nil
	}
	obj, _ := v.(map[string]any)
	msgs, _ := obj["messages"].([]any)
	for _, m := range msgs {
		m, _ := m.(map[string]any)
		expand(m)
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			if b, ok := b.(map[string]any); ok && b["type"] == "tool_result" {
				expand(b)
			}
		}
	}
	return v, nil
}

// expand writes obj's string content, if it has one, as the text block it
// stands for.
func expand(obj map[string]any) {
	if s, ok := obj["content"].(string); ok {
		obj["content"] = []any{map[string]any{"type": "text", "text": s}}
	}
}
