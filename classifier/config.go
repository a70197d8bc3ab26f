// Package classifier decides, through a cheap LLM side-query, the tool calls
// that no local stage of the engine could. It implements engine.Classifier
// with openai-go (Chat Completions or the Responses API) or
// anthropic-sdk-go (the Messages API), a pool of backends with breakers
// and bounded queueing, coalescing, a cache and per-session block limits.
// Every failure fails closed.
package classifier

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/ownfile"

	"github.com/toolgate/toolgate/internal/sessionblocks"
)

// API names which API a backend speaks: OpenAI's Chat Completions or
// Responses, or Anthropic's Messages.
const (
	APIChat      = "chat"
	APIResponses = "responses"
	APIAnthropic = "anthropic"
)

// validAPI reports whether api names an API a backend can speak.
func validAPI(api string) bool {
	return api == APIChat || api == APIResponses || api == APIAnthropic
}

// Config configures the classifier. It runs when Backends is not empty.
// Field paths in errors match the YAML config (classifier.*).
type Config struct {
	Backends []BackendConfig `yaml:"backends"`
	// API is the default API for backends: chat (default), responses or
	// anthropic.
	API string `yaml:"api"`
	// TwoStage first asks for should_block alone with a tiny token budget
	// and only asks for reasoning when that says block.
	TwoStage bool `yaml:"two_stage"`
	// Timeout bounds one classification, retries and failover included. It
	// never extends the caller's deadline.
	Timeout time.Duration `yaml:"timeout"`
	// QueueTimeout bounds the wait for a free backend slot.
	QueueTimeout time.Duration `yaml:"queue_timeout"`
	// OnUnavailable is the decision when the classifier fails: deny or ask.
	OnUnavailable string `yaml:"on_unavailable"`
	// MaxActionBytes caps the JSON-encoded tool input in the prompt.
	MaxActionBytes int `yaml:"max_action_bytes"`
	// MaxTokens is the output budget of a full classification.
	MaxTokens int `yaml:"max_tokens"`
	// Coalesce shares one upstream call among identical classifications
	// in flight.
	Coalesce *bool       `yaml:"coalesce"`
	Cache    CacheConfig `yaml:"cache"`
	// SessionBlockLimits bring a human in when a session keeps getting
	// blocked.
	SessionBlockLimits SessionLimits `yaml:"session_block_limits"`
	Breaker            BreakerConfig `yaml:"breaker"`
	// DumpFile, when set, receives every side-query and answer as JSON
	// lines, with credentials redacted.
	DumpFile string `yaml:"dump_file"`
}

// DumpBackups are the globs of the files the dump writes besides its own:
// what it found planted at its path and set aside, beside it. Empty
// without a dump file.
func (c Config) DumpBackups() []string {
	if c.DumpFile == "" {
		return nil
	}
	return ownfile.Backups(c.DumpFile)
}

// BackendConfig is one OpenAI-compatible or Anthropic endpoint.
type BackendConfig struct {
	Name string `yaml:"name"`
	// BaseURL is the API's base: with /v1 for the OpenAI APIs
	// (https://api.openai.com/v1), without it for anthropic
	// (https://api.anthropic.com), whose SDK adds /v1/messages.
	BaseURL string `yaml:"base_url"`
	Model   string `yaml:"model"`
	// APIKeyEnv names the environment variable holding the API key
	// (default OPENAI_API_KEY, or ANTHROPIC_API_KEY for anthropic); the
	// key itself never appears in config files or logs.
	APIKeyEnv     string `yaml:"api_key_env"`
	API           string `yaml:"api"`
	MaxConcurrent int    `yaml:"max_concurrent"`
	// Timeout bounds one HTTP attempt; default: half the classifier
	// timeout, so that a hanging backend fails (and counts against its
	// breaker) while time is left to fail over or retry.
	Timeout  time.Duration `yaml:"timeout"`
	Priority int           `yaml:"priority"`
	// Price is what the model's tokens cost, for toolgate eval's cost
	// line; the server itself counts tokens, not money.
	Price Price `yaml:"price"`
}

// Price is the USD cost of a million tokens.
type Price struct {
	Input  float64 `yaml:"input" json:"input"`
	Output float64 `yaml:"output" json:"output"`
	// CachedInput is the price of input tokens read from the provider's
	// prompt cache; unset (0), they cost Input.
	CachedInput float64 `yaml:"cached_input,omitempty" json:"cached_input,omitempty"`
}

func validPrice(p float64) bool { return p >= 0 && !math.IsInf(p, 0) }

// CacheConfig sizes the verdict cache.
type CacheConfig struct {
	Enabled *bool         `yaml:"enabled"`
	Size    int           `yaml:"size"`
	TTL     time.Duration `yaml:"ttl"`
}

// SessionLimits are counted per session_id.
type SessionLimits = sessionblocks.Limits

// BreakerConfig tunes each backend's circuit breaker.
type BreakerConfig struct {
	Failures int           `yaml:"failures"`
	Cooldown time.Duration `yaml:"cooldown"`
}

// DefaultConfig returns the defaults, with no backend.
func DefaultConfig() Config {
	return Config{
		API:            APIChat,
		Timeout:        5 * time.Second,
		QueueTimeout:   time.Second,
		OnUnavailable:  "deny",
		MaxActionBytes: 8 << 10,
		MaxTokens:      1024,
		// On unless set to false; pointers so that config show prints
		// what is in force (true), not null.
		Coalesce:           ptrTo(true),
		Cache:              CacheConfig{Enabled: ptrTo(true), Size: 4096, TTL: 10 * time.Minute},
		SessionBlockLimits: SessionLimits{Consecutive: 3, Total: 20},
		Breaker:            BreakerConfig{Failures: 5, Cooldown: 10 * time.Second},
	}
}

func ptrTo[T any](v T) *T { return &v }

// Enabled reports whether any backend is configured.
func (c *Config) Enabled() bool { return len(c.Backends) > 0 }

// CoalesceOn reports whether coalescing is on (default on).
func (c *Config) CoalesceOn() bool { return c.Coalesce == nil || *c.Coalesce }

// CacheOn reports whether the cache is on (default on).
func (c *Config) CacheOn() bool { return c.Cache.Enabled == nil || *c.Cache.Enabled }

// Validate reports every bad field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("classifier.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	if !validAPI(c.API) {
		bad("api", "must be chat, responses or anthropic, got %q", c.API)
	}
	if c.Timeout <= 0 {
		bad("timeout", "must be positive, got %s", c.Timeout)
	}
	// The dump's set-aside files are kept from the agents by glob (see
	// DumpBackups): a path that is itself a glob would guard other files.
	if strings.ContainsAny(c.DumpFile, "*?[]\\") {
		bad("dump_file", "%q may not hold glob characters (*?[]\\): toolgate keeps the files it sets aside beside it from the agents by glob", c.DumpFile)
	}
	if c.QueueTimeout <= 0 {
		bad("queue_timeout", "must be positive, got %s", c.QueueTimeout)
	}
	if c.OnUnavailable != "deny" && c.OnUnavailable != "ask" {
		bad("on_unavailable", "must be deny or ask, got %q", c.OnUnavailable)
	}
	if c.MaxActionBytes < 256 {
		bad("max_action_bytes", "must be at least 256, got %d", c.MaxActionBytes)
	}
	if c.MaxTokens < 16 {
		bad("max_tokens", "must be at least 16, got %d", c.MaxTokens)
	}
	if c.CacheOn() && (c.Cache.Size <= 0 || c.Cache.TTL <= 0) {
		bad("cache", "size and ttl must be positive when the cache is on, got %d and %s", c.Cache.Size, c.Cache.TTL)
	}
	if c.SessionBlockLimits.Consecutive <= 0 || c.SessionBlockLimits.Total <= 0 {
		bad("session_block_limits", "consecutive and total must be positive, got %d and %d", c.SessionBlockLimits.Consecutive, c.SessionBlockLimits.Total)
	}
	if c.Breaker.Failures <= 0 || c.Breaker.Cooldown <= 0 {
		bad("breaker", "failures and cooldown must be positive, got %d and %s", c.Breaker.Failures, c.Breaker.Cooldown)
	}
	names := map[string]bool{}
	for i, b := range c.Backends {
		f := fmt.Sprintf("backends[%d]", i)
		if b.Name == "" {
			bad(f+".name", "is required")
		} else if names[b.Name] {
			bad(f+".name", "%q is used twice", b.Name)
		}
		names[b.Name] = true
		api := b.API
		if api == "" {
			api = c.API
		}
		if u, err := url.Parse(b.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(f+".base_url", "must be an http(s) URL, got %q", b.BaseURL)
		} else if api == APIAnthropic && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
			// The SDK posts to {base_url}/v1/messages: a base ending in /v1
			// (the OpenAI habit) would ask /v1/v1/messages, a 404 that
			// fails every check closed.
			bad(f+".base_url", "for api anthropic, give the API root without /v1 (the client adds /v1/messages), got %q", b.BaseURL)
		}
		if b.Model == "" {
			bad(f+".model", "is required")
		}
		if b.API != "" && !validAPI(b.API) {
			bad(f+".api", "must be chat, responses or anthropic, got %q", b.API)
		}
		if b.MaxConcurrent <= 0 {
			bad(f+".max_concurrent", "must be positive, got %d", b.MaxConcurrent)
		}
		if !validPrice(b.Price.Input) || !validPrice(b.Price.Output) || !validPrice(b.Price.CachedInput) {
			bad(f+".price", "input, output and cached_input are USD per million tokens, 0 or more, got %v, %v and %v", b.Price.Input, b.Price.Output, b.Price.CachedInput)
		}
		if b.Timeout < 0 || (b.Timeout > 0 && c.Timeout > 0 && b.Timeout >= c.Timeout) {
			bad(f+".timeout", "must be positive and shorter than classifier.timeout (%s) so a hanging backend fails over in time, got %s", c.Timeout, b.Timeout)
		}
	}
	return errors.Join(errs...)
}

// WithBackendDefaults fills the per-backend fields a config may leave out.
func (c *Config) WithBackendDefaults() {
	for i := range c.Backends {
		b := &c.Backends[i]
		if b.Name == "" {
			b.Name = fmt.Sprintf("backend-%d", i)
		}
		if b.API == "" {
			b.API = c.API
		}
		if b.APIKeyEnv == "" {
			b.APIKeyEnv = "OPENAI_API_KEY"
			if b.API == APIAnthropic {
				b.APIKeyEnv = "ANTHROPIC_API_KEY"
			}
		}
		if b.MaxConcurrent == 0 {
			b.MaxConcurrent = 8
		}
		if b.Timeout == 0 {
			b.Timeout = c.Timeout / 2
		}
	}
}
