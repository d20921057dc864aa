package routertest

import (
	"fmt"
	"strings"
)

// Stream returns the events the service streams for reply (its Text,
// ToolCalls, Usage and Model) as the answer to request n, each without
// its trailing empty line.
func Stream(api API, n int, reply Reply) []string {
	if reply.Text == "" && len(reply.ToolCalls) == 0 {
		reply.Text = "ok"
	}
	if reply.Usage == (Usage{}) {
		reply.Usage = Usage{Input: 10, Output: 5}
	}
	if reply.Model == "" {
		reply.Model = "fake"
	}
	if api == Messages {
		return messagesStream(n, reply)
	}
	return chatStream(n, reply)
}

// chatStream is a Chat Completions stream: a chunk of text or one per tool
// call, the finish, the usage, [DONE].
func chatStream(n int, r Reply) []string {
	chunk := func(choices, usage string) string {
		return fmt.Sprintf(`data: {"id":"chatcmpl-%d","object":"chat.completion.chunk","created":1767225600,"model":%s,"choices":[%s],"usage":%s}`,
			n, jsonString(r.Model), choices, usage)
	}
	var out []string
	if r.Text != "" {
		out = append(out, chunk(`{"index":0,"delta":{"role":"assistant","content":`+jsonString(r.Text)+`},"finish_reason":null}`, "null"))
	}
	for i, c := range r.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n, i+1)
		}
		out = append(out, chunk(fmt.Sprintf(`{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":%s}}]},"finish_reason":null}`,
			i, jsonString(id), jsonString(c.Name), jsonString(c.Args)), "null"))
	}
	finish := "stop"
	if len(r.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	u := r.Usage
	return append(out,
		chunk(`{"index":0,"delta":{},"finish_reason":"`+finish+`"}`, "null"),
		chunk("", fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}`,
			u.Input, u.Output, u.Input+u.Output, u.Cached)),
		"data: [DONE]")
}

// messagesStream is a Messages stream: message_start, a text block and a
// block per tool call, message_delta with the stop reason, message_stop.
func messagesStream(n int, r Reply) []string {
	u := r.Usage
	out := []string{sse("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","content":[],"model":%s,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d,"output_tokens":1}}}`,
		n, jsonString(r.Model), u.Input-u.Cached-u.CacheWrite, u.Cached, u.CacheWrite))}
	index := 0
	block := func(start, delta string) {
		out = append(out, sse("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, index, start)))
		if delta != "" {
			out = append(out, sse("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, index, delta)))
		}
		out = append(out, sse("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, index)))
		index++
	}
	if r.Text != "" {
		block(`{"type":"text","text":""}`, `{"type":"text_delta","text":`+jsonString(r.Text)+`}`)
	}
	for i, c := range r.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%d_%d", n, i+1)
		}
		delta := ""
		if c.Args != "" {
			delta = `{"type":"input_json_delta","partial_json":` + jsonString(c.Args) + `}`
		}
		block(`{"type":"tool_use","id":`+jsonString(id)+`,"name":`+jsonString(c.Name)+`,"input":{}}`, delta)
	}
	stop := "end_turn"
	if len(r.ToolCalls) > 0 {
		stop = "tool_use"
	}
	return append(out,
		sse("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"%s","stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, u.Output)),
		sse("message_stop", `{"type":"message_stop"}`))
}

// sse is one named Server-Sent Event.
func sse(name, data string) string {
	return strings.Join([]string{"event: " + name, "data: " + data}, "\n")
}
