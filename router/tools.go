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

// DefaultMaxToolRounds bounds the tool rounds of one turn.
const DefaultMaxToolRounds = 8

// Tool is one tool a desk's model may call.
type Tool struct {
	Spec ToolSpec
	// Run runs the tool with arguments that passed the schema's checks.
	// An error is sent back to the model as the tool's result.
	Run func(ctx context.Context, args json.RawMessage) (string, error)
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
	// Timeout bounds one run (default 30s).
	Timeout time.Duration
	// MaxOutput caps the bytes of stdout sent to the model (default 16 KiB).
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
		timeout = 30 * time.Second
	}
	if limit <= 0 {
		limit = 16 << 10
	}
	return Tool{
		Spec: ToolSpec{Name: c.Name, Description: c.Description, Schema: c.Schema},
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
			out := stdout.String()
			if stdout.cut {
				out += fmt.Sprintf("\n[output cut at %d bytes]", limit)
			}
			return out, nil
		},
	}
}

// capped is a writer that keeps the first limit bytes. It is not a
// bytes.Buffer underneath, so that io.Copy cannot go around Write.
type capped struct {
	buf   []byte
	limit int
	cut   bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.limit - len(c.buf)
	if room < len(p) {
		c.cut = true
		c.buf = append(c.buf, p[:max(room, 0)]...)
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
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
				d := today()
				if err := folder.AppendNote(d, line); err != nil {
					return "", err
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
				Description: "Create or replace one of your skills. The previous version is kept in history.",
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
				if _, err := folder.WriteSkill(a.Name, content); err != nil {
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

// runTool checks a call's arguments against its tool's schema and runs it.
// Every failure becomes the tool's result, never the turn's.
func runTool(ctx context.Context, tools []Tool, call ToolCall) (result string, isError bool) {
	for _, t := range tools {
		if t.Spec.Name != call.Name {
			continue
		}
		args := call.Arguments
		if len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage("{}")
		}
		if err := checkArgs(t.Spec.Schema, args); err != nil {
			return "error: bad arguments for " + call.Name + ": " + err.Error(), true
		}
		out, err := safeRun(ctx, t, args)
		if err != nil {
			return "error: " + err.Error(), true
		}
		return out, false
	}
	return "error: no tool named " + call.Name, true
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
