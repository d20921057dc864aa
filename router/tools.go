package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/deskd/deskd/memory"
)

// DefaultMaxToolRounds bounds the tool rounds of one turn (max_tool_rounds).
const DefaultMaxToolRounds = 8

// Defaults of a command tool (a desk's tools[]).
const (
	// DefaultToolTimeout bounds one run of a command tool (timeout).
	DefaultToolTimeout = 30 * time.Second
	// DefaultToolOutput caps the bytes of a command tool's stdout given to
	// the model (max_output).
	DefaultToolOutput = 16 << 10
)

// Caps on what the tools take from a model and give back to it.
const (
	// DefaultMaxToolCalls bounds the tool calls of one answer that are run
	// (Settings.MaxToolCalls): a model has no need of more in one answer,
	// and a runaway one should not place 200 orders. The calls past it
	// get an error result saying they were not run, and why.
	DefaultMaxToolCalls = 16
	// DefaultMaxToolResult caps the bytes of a tool's result sent to the
	// model and kept in the session (Tool.MaxResult; a command tool's cap
	// is its MaxOutput): about 8000 tokens. A longer result is cut, and
	// ends with a line saying how much was kept.
	DefaultMaxToolResult = 32 << 10
	// MaxNoteBytes caps a note the note tool writes: a note is one line of
	// the day's notes file, and every note is folded into Memory.md.
	MaxNoteBytes = 2 << 10
	// MaxSkillBytes caps a skill the skill_write tool writes (front matter
	// included); a bigger one is refused whole, never cut.
	MaxSkillBytes = 32 << 10
)

// truncMarkRoom is room for the line a cut result ends with.
const truncMarkRoom = 80

// Tool is one tool a desk's model may call.
type Tool struct {
	Spec ToolSpec
	// Run runs the tool with arguments that passed the schema's checks.
	// An error is sent back to the model as the tool's result.
	Run func(ctx context.Context, args json.RawMessage) (string, error)
	// MaxResult caps the bytes of the result (or error) sent back; 0 means
	// DefaultMaxToolResult. A longer one is cut, and says so.
	MaxResult int
	// Gate, when set, decides before each call whether it runs (an
	// operator's approval, a day's limit); nil runs every call.
	Gate Gate
	// Server is the MCP server the tool is on; "" for the built-in and
	// command tools.
	Server string
}

// CommandTool is an operator-defined tool: an argv command (no shell) that
// gets the call's arguments as JSON on stdin and answers on stdout. This is
// how a desk reaches a broker or a market-data service.
type CommandTool struct {
	Name        string
	Description string
	// Schema is the JSON schema of the arguments (an object schema).
	Schema json.RawMessage
	// Argv is the command and its arguments.
	Argv []string
	// Timeout bounds one run (default DefaultToolTimeout).
	Timeout time.Duration
	// MaxOutput caps the bytes of stdout sent to the model (default
	// DefaultToolOutput); a longer output is cut, and the result ends with
	// a line saying how much was kept ("[truncated: 16384 of 90000 bytes kept]").
	MaxOutput int
	// Dir is the working directory ("" for the daemon's).
	Dir string
}

// Tool returns the runnable tool. The command runs with a clean
// environment (PATH, LANG, TZ and DESKD_DESK only), so that API keys in
// deskd's own environment never reach it.
func (c CommandTool) Tool(desk string) Tool {
	timeout, limit := c.Timeout, c.MaxOutput
	if timeout <= 0 {
		timeout = DefaultToolTimeout
	}
	if limit <= 0 {
		limit = DefaultToolOutput
	}
	return Tool{
		Spec:      ToolSpec{Name: c.Name, Description: c.Description, Schema: c.Schema},
		MaxResult: limit + truncMarkRoom,
		Run: func(ctx context.Context, args json.RawMessage) (string, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
			cmd.Dir = c.Dir
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "TZ=UTC", "DESKD_DESK=" + desk}
			cmd.Stdin = bytes.NewReader(args)
			stdout := &capped{limit: limit}
			stderr := &capped{limit: 2048}
			cmd.Stdout, cmd.Stderr = stdout, stderr
			cmd.WaitDelay = time.Second
			err := cmd.Run()
			if ctx.Err() == context.DeadlineExceeded {
				return "", fmt.Errorf("tool %s: timed out after %s", c.Name, timeout)
			}
			if err != nil {
				return "", fmt.Errorf("tool %s: %v: %s", c.Name, err, strings.TrimSpace(stderr.String()))
			}
			if stdout.total > limit {
				return truncate(stdout.String(), limit, stdout.total), nil
			}
			return stdout.String(), nil
		},
	}
}

// capped is a writer that keeps the first limit bytes and counts them all.
// It is not a bytes.Buffer underneath, so that io.Copy cannot go around
// Write.
type capped struct {
	buf   []byte
	limit int
	total int
}

func (c *capped) Write(p []byte) (int, error) {
	c.total += len(p)
	room := c.limit - len(c.buf)
	if room < len(p) {
		c.buf = append(c.buf, p[:max(room, 0)]...)
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

// truncate returns the first limit bytes of s (backing off to a UTF-8
// boundary), of total bytes in all, and a line saying how much was kept.
func truncate(s string, limit, total int) string {
	kept := cutText(s, limit)
	return kept + fmt.Sprintf("\n[truncated: %d of %d bytes kept]", len(kept), total)
}

func (c *capped) String() string { return string(c.buf) }

// BuiltinTools returns the tools every desk has: note, memory_search,
// skill_read and skill_write, over the desk's folder. today gives the
// trading date of now.
func BuiltinTools(folder *memory.Folder, today func() memory.Date) []Tool {
	return []Tool{
		{
			Spec: ToolSpec{
				Name:        "note",
				Description: "Append one line to today's notes. Notes are folded into Memory.md at the end of the trading day.",
				Schema:      json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"the note, one line"}},"required":["text"]}`),
			},
			Run: func(_ context.Context, raw json.RawMessage) (string, error) {
				var a struct{ Text string }
				if err := json.Unmarshal(raw, &a); err != nil {
					return "", err
				}
				line := strings.Join(strings.Fields(a.Text), " ")
				if line == "" {
					return "", errors.New("note: empty text")
				}
				total := len(line)
				if total > MaxNoteBytes {
					line = strings.TrimSpace(cutText(line, MaxNoteBytes))
				}
				d := today()
				if err := folder.AppendNote(d, line); err != nil {
					return "", err
				}
				if len(line) < total {
					return fmt.Sprintf("noted in notes/%s.md, truncated: %d of %d bytes kept (a note is at most %d bytes)",
						d, len(line), total, MaxNoteBytes), nil
				}
				return "noted in notes/" + d.String() + ".md", nil
			},
		},
		{
			Spec: ToolSpec{
				Name:        "memory_search",
				Description: "Search Memory.md, your notes and your past summaries. Returns the best-matching lines with where they come from.",
				Schema:      json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","description":"at most this many results (default 8)"}},"required":["query"]}`),
			},
			Run: func(_ context.Context, raw json.RawMessage) (string, error) {
				var a struct {
					Query string
					Limit int
				}
				if err := json.Unmarshal(raw, &a); err != nil {
					return "", err
				}
				hits, err := SearchMemory(folder, a.Query, a.Limit)
				if err != nil {
					return "", err
				}
				if len(hits) == 0 {
					return "no matches", nil
				}
				var b strings.Builder
				for _, h := range hits {
					fmt.Fprintf(&b, "%s:%d: %s\n", h.Source, h.Line, h.Text)
				}
				return b.String(), nil
			},
		},
		{
			Spec: ToolSpec{
				Name:        "skill_read",
				Description: "Read one of your skills (skills/<name>/SKILL.md). With no name, list your skills.",
				Schema:      json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`),
			},
			Run: func(_ context.Context, raw json.RawMessage) (string, error) {
				var a struct{ Name string }
				if err := json.Unmarshal(raw, &a); err != nil {
					return "", err
				}
				if a.Name == "" {
					return SkillsIndex(folder)
				}
				return folder.ReadSkill(a.Name)
			},
		},
		{
			Spec: ToolSpec{
				Name:        "skill_write",
				Description: "Create or replace one of your skills. The previous version is kept in history. A skill the operator pinned cannot be replaced.",
				Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"lowercase, digits, - and _"},` +
					`"description":{"type":"string","description":"one line: when to use it"},"body":{"type":"string","description":"the skill, Markdown"}},"required":["name","description","body"]}`),
			},
			Run: func(_ context.Context, raw json.RawMessage) (string, error) {
				var a struct{ Name, Description, Body string }
				if err := json.Unmarshal(raw, &a); err != nil {
					return "", err
				}
				desc := strings.Join(strings.Fields(a.Description), " ")
				if desc == "" {
					return "", errors.New("skill_write: empty description")
				}
				content := fmt.Sprintf("---\nname: %s\ndescription: %q\n---\n\n%s\n", a.Name, desc, strings.TrimSpace(a.Body))
				if len(content) > MaxSkillBytes {
					return "", fmt.Errorf("skill_write: skill %q is %d bytes, more than the %d a skill may have; nothing was written",
						a.Name, len(content), MaxSkillBytes)
				}
				if _, err := folder.WriteSkillAs(memory.ByDesk, a.Name, content); err != nil {
					return "", err
				}
				return "skill " + a.Name + " written", nil
			},
		},
	}
}

// SkillsIndex lists the desk's skills, one line each: name and description.
func SkillsIndex(folder *memory.Folder) (string, error) {
	skills, err := folder.Skills()
	if err != nil {
		return "", err
	}
	if len(skills) == 0 {
		return "no skills yet", nil
	}
	var b strings.Builder
	for _, s := range skills {
		fmt.Fprintf(&b, "- %s: %s\n", s.Name, s.Description)
	}
	return b.String(), nil
}

// toolAnswer is what became of one tool call: the result the model
// hears, whether it is an error, the call's outcome, and the operator's
// decision when it waited for one.
type toolAnswer struct {
	result  string
	isError bool
	outcome string
	server  string
	// unknown is true when no tool of the desk has the call's name.
	unknown bool
}

// runTool checks a call's arguments against its tool's schema, asks the
// tool's gate, and runs it, if it is one of runnable (the others of
// defined are not available in this turn). An operator's decision on the
// call is handed to record before the call runs (or is answered): when
// record fails, the call does not run and runTool returns its error. The
// result is cut at the tool's cap. Every other failure becomes the tool's
// result, never the turn's.
func runTool(ctx context.Context, defined, runnable []Tool, call ToolCall, gc GateCall, record func(Decision) error) (toolAnswer, error) {
	for _, t := range runnable {
		if t.Spec.Name != call.Name {
			continue
		}
		limit := t.MaxResult
		if limit <= 0 {
			limit = DefaultMaxToolResult
		}
		args := call.Arguments
		if len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage("{}")
		}
		if err := checkArgs(t.Spec.Schema, args); err != nil {
			return toolAnswer{result: capResult("error: bad arguments for "+call.Name+": "+err.Error(), limit), isError: true,
				outcome: OutcomeRefused, server: t.Server}, nil
		}
		if t.Gate != nil {
			gc.ID, gc.Tool, gc.Arguments = call.ID, call.Name, args
			v := t.Gate(ctx, gc)
			if v.Decision != nil {
				if err := record(*v.Decision); err != nil {
					return toolAnswer{}, err
				}
			}
			if !v.Run {
				outcome := v.Outcome
				if outcome == "" {
					outcome = OutcomeRefused
				}
				return toolAnswer{result: capResult(v.Result, limit), isError: true, outcome: outcome, server: t.Server}, nil
			}
		}
		out, err := safeRun(ctx, t, args)
		if err != nil {
			return toolAnswer{result: capResult("error: "+err.Error(), limit), isError: true, outcome: OutcomeError, server: t.Server}, nil
		}
		return toolAnswer{result: capResult(out, limit), outcome: OutcomeOK, server: t.Server}, nil
	}
	for _, t := range defined {
		if t.Spec.Name == call.Name {
			names := make([]string, 0, len(runnable))
			for _, t := range runnable {
				names = append(names, t.Spec.Name)
			}
			return toolAnswer{result: fmt.Sprintf("error: %s is not available in this turn; only %s may be called", call.Name, strings.Join(names, ", ")),
				isError: true, outcome: OutcomeRefused, server: t.Server}, nil
		}
	}
	names := make([]string, 0, len(runnable))
	for _, t := range runnable {
		names = append(names, t.Spec.Name)
	}
	return toolAnswer{result: fmt.Sprintf("error: no tool named %s; the tools you may call are %s", call.Name, strings.Join(names, ", ")),
		isError: true, outcome: OutcomeRefused, unknown: true}, nil
}

// capResult cuts a tool's result at limit bytes.
func capResult(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return truncate(s, limit, len(s))
}

// notRun is the result of a call past the cap on the calls of one answer.
func notRun(call ToolCall, calls, limit int) string {
	return fmt.Sprintf("error: %s was not run: the answer asked for %d tool calls, and deskd runs at most %d of one answer "+
		"(the first %d ran). Call it again in your next answer if you still need it.", call.Name, calls, limit, limit)
}

// safeRun runs t, turning a panic into an error.
func safeRun(ctx context.Context, t Tool, args json.RawMessage) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %s failed: %v", t.Spec.Name, r)
		}
	}()
	return t.Run(ctx, args)
}

// checkArgs checks args against the parts of a JSON schema that matter for
// a tool call: an object, its required properties, and each property's type.
func checkArgs(schema, args json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return fmt.Errorf("arguments are not a JSON object: %v", err)
	}
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("tool schema: %v", err)
	}
	var missing []string
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	for name, raw := range obj {
		p, ok := s.Properties[name]
		if !ok || p.Type == nil {
			continue
		}
		if want, ok := p.Type.(string); ok && !hasType(raw, want) {
			return fmt.Errorf("%s: want %s", name, want)
		}
	}
	return nil
}

func hasType(raw json.RawMessage, want string) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch want {
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return true
}
