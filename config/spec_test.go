package config_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/deskd/deskd/config"
	"github.com/deskd/deskd/router"
)

// TestModelSpec: a model's spec carries its options and prices, and reads
// its key only when asked, from where the config names it.
func TestModelSpec(t *testing.T) {
	m := config.Model{Name: "gpt", Provider: router.OpenAIProvider, BaseURL: "http://localhost:8000/v1", Model: "llama",
		APIKeyEnv: "DESKD_SPEC_TEST_KEY", ContextWindow: 8000, MaxOutputTokens: 512, Timeout: time.Minute,
		Prices: &config.Prices{Input: 1, Output: 2, CachedInput: 0.5}}
	s := m.Spec()
	want := router.Spec{Name: "gpt", Provider: router.OpenAIProvider, BaseURL: "http://localhost:8000/v1", Model: "llama",
		ContextWindow: 8000, MaxOutputTokens: 512, Timeout: time.Minute, Prices: router.Prices{Input: 1, Output: 2, CachedInput: 0.5}}
	got := s
	got.Key = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Spec() = %+v, want %+v", got, want)
	}
	if s.Key == nil {
		t.Fatal("Spec().Key is nil")
	}
	if _, err := s.Key(); err == nil {
		t.Error("Key() with the variable unset = nil error")
	}
	t.Setenv("DESKD_SPEC_TEST_KEY", " sk-spec \n")
	if k, err := s.Key(); err != nil || k != "sk-spec" {
		t.Errorf("Key() = %q, %v; want sk-spec", k, err)
	}
	if p := (config.Model{Name: "offline", Provider: router.ScriptedProvider}).Spec().Prices; p != (router.Prices{}) {
		t.Errorf("Spec() of a model without prices has prices %+v", p)
	}
}
