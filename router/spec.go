package router

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// This file holds what every model provider shares: the provider names,
// the defaults of a model entry, the one shape of a client's options and
// its checks, how each call of a client starts, and Spec, a configured
// model that CheckSpec validates and NewModel builds.

// ProviderName names a kind of model service: the provider of a model
// entry (models.<name>.provider), as the config, the session records, the
// events and the status give it.
type ProviderName string

// The providers.
const (
	// ScriptedProvider is the offline, deterministic model (Scripted), for
	// demos, rehearsals and tests.
	ScriptedProvider ProviderName = "scripted"
	// OpenAIProvider is the Chat Completions API at any base URL (OpenAI).
	OpenAIProvider ProviderName = "openai"
	// AnthropicProvider is the Anthropic Messages API (Anthropic).
	AnthropicProvider ProviderName = "anthropic"
)

// Defaults of a model entry. The config applies them; a client built with
// zero options falls back on the same values.
const (
	// DefaultTimeout bounds one model call, the whole stream included
	// (timeout).
	DefaultTimeout = 120 * time.Second
	// DefaultMaxOutputTokens caps one answer (max_output_tokens). The
	// Messages API requires a cap, so an Anthropic client sends this one
	// when neither its options nor the request set one.
	DefaultMaxOutputTokens = 4096
	// DefaultContextWindow is the context size, in tokens, of an openai or
	// anthropic model (context_window); a scripted model's is 0, unknown.
	DefaultContextWindow = 128000
	// DefaultOpenAIBaseURL is OpenAI's own endpoint, used when no base URL is set.
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
	// DefaultAnthropicBaseURL is Anthropic's own endpoint, used when no
	// base URL is set.
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
)

// ClientOptions configure the client of a model service: the one shape
// every provider's constructor takes (NewOpenAI, NewAnthropic). A
// constructor reads nothing from the environment: the options are the
// whole configuration.
type ClientOptions struct {
	// Name is the model's name in the config; every error names it
	// (default: Model).
	Name string
	// BaseURL is the API's root: for openai up to and including /v1
	// (https://api.openai.com/v1, vLLM, Ollama's http://localhost:11434/v1,
	// a llama.cpp server, ...); for anthropic without /v1 (a trailing /v1
	// is dropped). Empty means the provider's default.
	BaseURL string
	// Model is the service's model id, sent with every request (required).
	Model string
	// APIKey authenticates the calls; empty sends none (local servers).
	// It never appears in an error.
	APIKey string
	// MaxOutputTokens caps every answer; 0 leaves the cap to the request
	// (and, for openai, to the service; anthropic sends
	// DefaultMaxOutputTokens).
	MaxOutputTokens int
	// Timeout bounds one call, the whole stream included; 0 means
	// DefaultTimeout. It bounds each call's context, never the
	// HTTPClient, which clients share.
	Timeout time.Duration
	// HTTPClient makes the requests: a daemon gives every model client
	// its Pool's (kept-alive connections, HTTP/2). nil means a client of
	// its own on http.DefaultTransport (two idle connections per service).
	HTTPClient *http.Client
}

// OpenAIOptions configure a Chat Completions client: the shared shape.
type OpenAIOptions = ClientOptions

// AnthropicOptions configure a Messages API client: the shared shape.
type AnthropicOptions = ClientOptions

// remote describes a provider that is a client of a model service.
type remote struct {
	// baseURL is the provider's default base URL.
	baseURL string
	// build makes the client of checked options.
	build func(o ClientOptions) (Provider, error)
}

// remoteOf returns the description of provider p, and whether p is one
// of the remote providers. It is the constructor table: one entry per
// remote provider.
func remoteOf(p ProviderName) (remote, bool) {
	switch p {
	case OpenAIProvider:
		return remote{baseURL: DefaultOpenAIBaseURL, build: func(o ClientOptions) (Provider, error) { return NewOpenAI(o) }}, true
	case AnthropicProvider:
		return remote{baseURL: DefaultAnthropicBaseURL, build: func(o ClientOptions) (Provider, error) { return NewAnthropic(o) }}, true
	}
	return remote{}, false
}

// checked applies the defaults of provider p to o and checks it: the
// checks every remote provider's constructor makes, before it builds
// anything.
func (o ClientOptions) checked(p ProviderName) (ClientOptions, error) {
	if o.Name == "" {
		o.Name = o.Model
	}
	if o.Model == "" {
		return o, fmt.Errorf("model %s: %s: no model id", o.Name, p)
	}
	if o.BaseURL == "" {
		r, _ := remoteOf(p)
		o.BaseURL = r.baseURL
	}
	if err := CheckBaseURL(o.BaseURL); err != nil {
		return o, fmt.Errorf("model %s: base_url: %w", o.Name, err)
	}
	if o.MaxOutputTokens < 0 {
		return o, fmt.Errorf("model %s: max_output_tokens %d is negative", o.Name, o.MaxOutputTokens)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	return o, nil
}

// CheckBaseURL checks a model's base URL: an http:// or https:// URL with
// a host. Its errors do not quote the URL, which may carry credentials
// (user info, a key in the query).
func CheckBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL: want an http:// or https:// URL with a host")
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return errors.New("want an http:// or https:// URL with a host")
	}
	return nil
}

// client is what every remote client keeps of its checked options.
type client struct {
	name, model string
	key         string
	maxOut      int
	timeout     time.Duration
	now         func() time.Time // reads an HTTP-date Retry-After without a Date header
}

// newClient keeps checked options o.
func newClient(o ClientOptions) client {
	return client{name: o.Name, model: o.Model, key: o.APIKey, maxOut: o.MaxOutputTokens, timeout: o.Timeout, now: time.Now}
}

// attempt is one call of a client under way: its context, bounded by the
// client's timeout, the meter of its reply, the recorder of its answer,
// and the call that classifies its failure.
type attempt struct {
	ctx    context.Context
	cancel context.CancelFunc
	meter  replyMeter
	rec    *recorder
	call   call
}

// begin starts one call under ctx whose reply is capped by an output cap
// of maxOut tokens (ReplyCap). The caller defers a.cancel.
func (c client) begin(ctx context.Context, maxOut int) attempt {
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	meter := replyMeter{limit: ReplyCap(maxOut)}
	rec := &recorder{limit: int64(ReplyStreamFactor) * int64(meter.limit)}
	return attempt{
		ctx: callCtx, cancel: cancel, meter: meter, rec: rec,
		call: call{model: c.name, key: c.key, timeout: c.timeout, ctx: ctx, callCtx: callCtx, rec: rec, now: c.now},
	}
}

// failed wraps err, a request the client could not even make, as the
// call's *APIError.
func (c client) failed(err error) *APIError { return &APIError{Model: c.name, Err: err} }

// Spec is one configured model (models.<name>): everything its client is
// built from, and where its key comes from. CheckSpec validates it
// without reading the key; NewModel reads the key and builds the client.
type Spec struct {
	// Name is the model's key in the config's models; every error names it.
	Name string
	// Provider is the kind of service.
	Provider ProviderName
	// BaseURL, Model, MaxOutputTokens and Timeout are the client's
	// options (see ClientOptions).
	BaseURL         string
	Model           string
	MaxOutputTokens int
	Timeout         time.Duration
	// ContextWindow is the model's context size in tokens (0: unknown).
	ContextWindow int
	// Prices are per million tokens; zero when not set.
	Prices Prices
	// Key reads the API key of a remote provider. Only NewModel calls it,
	// once, when it builds the client; nil sends no key.
	Key func() (string, error)
	// HTTPClient makes the requests (ClientOptions.HTTPClient): a
	// daemon's Pool's client; nil means a client of its own.
	HTTPClient *http.Client
}

// options returns the client options of s, with key.
func (s Spec) options(key string) ClientOptions {
	return ClientOptions{Name: s.Name, BaseURL: s.BaseURL, Model: s.Model, APIKey: key,
		MaxOutputTokens: s.MaxOutputTokens, Timeout: s.Timeout, HTTPClient: s.HTTPClient}
}

// CheckSpec reports what NewModel would refuse in s, short of its key: an
// unknown provider, or the options its constructor checks. It neither
// reads the key nor builds a client, so a reload can validate every
// desk's route with it.
func CheckSpec(s Spec) error {
	if s.Provider == ScriptedProvider {
		return nil
	}
	if _, ok := remoteOf(s.Provider); !ok {
		return fmt.Errorf("model %s: unknown provider %q", s.Name, s.Provider)
	}
	_, err := s.options("").checked(s.Provider)
	return err
}

// NewModel makes the route entry of s: for a remote provider, it reads
// the key (s.Key) and builds the client, which is the only place the key
// is kept.
func NewModel(s Spec) (Model, error) {
	m := Model{Name: s.Name, Provider: s.Provider, ContextWindow: s.ContextWindow, Prices: s.Prices}
	if s.Provider == ScriptedProvider {
		m.Client = Scripted{}
		return m, nil
	}
	r, ok := remoteOf(s.Provider)
	if !ok {
		return Model{}, fmt.Errorf("model %s: unknown provider %q", s.Name, s.Provider)
	}
	if err := CheckSpec(s); err != nil {
		return Model{}, err
	}
	var key string
	if s.Key != nil {
		k, err := s.Key()
		if err != nil {
			return Model{}, err
		}
		key = k
	}
	c, err := r.build(s.options(key))
	if err != nil {
		return Model{}, err
	}
	m.Client = c
	return m, nil
}
