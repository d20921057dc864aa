package router_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deskd/deskd/router"
)

// TestCheckSpec: CheckSpec refuses what NewModel would, and never reads
// the key.
func TestCheckSpec(t *testing.T) {
	tests := []struct {
		name string
		spec router.Spec
		want string // a part of the error; "" for none
	}{
		{"scripted", router.Spec{Name: "offline", Provider: router.ScriptedProvider}, ""},
		{"openai", router.Spec{Name: "gpt", Provider: router.OpenAIProvider, Model: "gpt-4.1"}, ""},
		{"anthropic at a base URL", router.Spec{Name: "claude", Provider: router.AnthropicProvider, Model: "claude-x",
			BaseURL: "https://proxy.example/v1"}, ""},
		{"unknown provider", router.Spec{Name: "x", Provider: "gemini", Model: "g"}, `model x: unknown provider "gemini"`},
		{"no provider", router.Spec{Name: "x", Model: "g"}, `model x: unknown provider ""`},
		{"no model id", router.Spec{Name: "gpt", Provider: router.OpenAIProvider}, "model gpt: openai: no model id"},
		{"base URL not http", router.Spec{Name: "gpt", Provider: router.OpenAIProvider, Model: "m", BaseURL: "ftp://user:pw@host/v1"},
			"model gpt: base_url: want an http:// or https:// URL with a host"},
		{"negative cap", router.Spec{Name: "claude", Provider: router.AnthropicProvider, Model: "m", MaxOutputTokens: -1},
			"model claude: max_output_tokens -1 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.spec
			s.Key = func() (string, error) {
				t.Error("CheckSpec read the key")
				return "", errors.New("no key")
			}
			err := router.CheckSpec(s)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckSpec = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("CheckSpec = %v, want an error with %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "pw") {
				t.Errorf("CheckSpec = %v: it quotes the base URL's password", err)
			}
		})
	}
}

// TestNewModel: NewModel reads the key of a remote model once, and only
// then builds its client; a key it cannot read is its error.
func TestNewModel(t *testing.T) {
	reads := 0
	s := router.Spec{Name: "gpt", Provider: router.OpenAIProvider, Model: "gpt-4.1", ContextWindow: 1000,
		Timeout: time.Minute, Prices: router.Prices{Input: 1},
		Key: func() (string, error) { reads++; return "sk-test", nil }}
	m, err := router.NewModel(s)
	if err != nil {
		t.Fatalf("NewModel: %v", err)
	}
	if _, ok := m.Client.(*router.OpenAI); !ok || m.Name != "gpt" || m.Provider != router.OpenAIProvider ||
		m.ContextWindow != 1000 || m.Prices.Input != 1 || m.Scripted() {
		t.Errorf("NewModel = %+v", m)
	}
	if reads != 1 {
		t.Errorf("the key was read %d times, want once", reads)
	}

	s.Provider, s.Model = router.AnthropicProvider, "claude-x"
	s.Key = func() (string, error) { return "", errors.New("model gpt: environment variable KEY is not set") }
	if _, err := router.NewModel(s); err == nil || !strings.Contains(err.Error(), "KEY is not set") {
		t.Errorf("NewModel without its key = %v, want the key's error", err)
	}

	s.Model = ""
	s.Key = func() (string, error) { t.Error("NewModel read the key of a model it refuses"); return "k", nil }
	if _, err := router.NewModel(s); err == nil {
		t.Error("NewModel without a model id = nil error")
	}

	m, err = router.NewModel(router.Spec{Name: "offline", Provider: router.ScriptedProvider})
	if _, ok := m.Client.(router.Scripted); err != nil || !ok || !m.Scripted() {
		t.Errorf("NewModel(scripted) = %+v, %v", m, err)
	}
}
