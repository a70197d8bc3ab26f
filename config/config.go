// Package config loads toolgate's YAML configuration: the server settings
// and the named policies. It only wires the config structs the other
// packages own; it holds no policy logic.
package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/server"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the embedded default configuration.
func DefaultYAML() []byte { return bytes.Clone(defaultYAML) }

// Config is the whole configuration file.
type Config struct {
	Server     server.Config     `yaml:"server"`
	Classifier classifier.Config `yaml:"classifier"`
	Policies   map[string]Policy `yaml:"policies"`
}

// Policy is one named policy as written in YAML.
type Policy struct {
	Permissions    Permissions       `yaml:"permissions"`
	SafeTools      []string          `yaml:"safe_tools"`
	ToolAliases    map[string]string `yaml:"tool_aliases"`
	ProtectedPaths []string          `yaml:"protected_paths"`
	// AcceptEdits is on unless set to false.
	AcceptEdits *bool `yaml:"accept_edits"`
	// AutoMode holds the classifier's natural-language rules.
	AutoMode AutoMode `yaml:"auto_mode"`
}

// AutoMode are the classifier rules of a policy.
type AutoMode struct {
	Allow       []string `yaml:"allow"`
	SoftDeny    []string `yaml:"soft_deny"`
	HardDeny    []string `yaml:"hard_deny"`
	Environment []string `yaml:"environment"`
}

// Permissions are the deterministic rule lists.
type Permissions struct {
	Allow []string `yaml:"allow"`
	Ask   []string `yaml:"ask"`
	Deny  []string `yaml:"deny"`
}

// Default returns the embedded configuration.
func Default() (*Config, error) {
	c, err := parse("(embedded default)", defaultYAML)
	if err != nil {
		return nil, fmt.Errorf("embedded default config: %w", err)
	}
	return c, nil
}

// Load reads a config file. Server settings it leaves out keep their
// defaults; its policies replace the embedded ones (a file that names no
// default policy gets an empty one, not the embedded one, so that what
// runs is what the file says).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(path, data)
}

func parse(name string, data []byte) (*Config, error) {
	c := &Config{Server: server.DefaultConfig(), Classifier: classifier.DefaultConfig()}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// Validate checks the server settings and compiles every policy.
func (c *Config) Validate() error {
	if err := c.Server.Validate(); err != nil {
		return err
	}
	c.Classifier.WithBackendDefaults()
	if err := c.Classifier.Validate(); err != nil {
		return err
	}
	_, err := engine.New(engine.Config{Policies: c.EnginePolicies()})
	return err
}

// ClassifierRules returns each policy's natural-language rules.
func (c *Config) ClassifierRules() map[string]classifier.Rules {
	out := make(map[string]classifier.Rules, len(c.Policies))
	for name, p := range c.Policies {
		out[name] = classifier.Rules{Allow: p.AutoMode.Allow, SoftDeny: p.AutoMode.SoftDeny, HardDeny: p.AutoMode.HardDeny, Environment: p.AutoMode.Environment}
	}
	return out
}

// EnginePolicies converts the policies to the engine's specs.
func (c *Config) EnginePolicies() map[string]engine.PolicySpec {
	out := make(map[string]engine.PolicySpec, len(c.Policies))
	for name, p := range c.Policies {
		aliases := make(map[string]engine.Kind, len(p.ToolAliases))
		for k, v := range p.ToolAliases {
			aliases[k] = engine.Kind(v)
		}
		out[name] = engine.PolicySpec{
			Permissions:        engine.RuleSet{Allow: p.Permissions.Allow, Ask: p.Permissions.Ask, Deny: p.Permissions.Deny},
			SafeTools:          p.SafeTools,
			ToolAliases:        aliases,
			ProtectedPaths:     p.ProtectedPaths,
			DisableAcceptEdits: p.AcceptEdits != nil && !*p.AcceptEdits,
		}
	}
	return out
}

// PolicyNames returns the configured policy names, sorted.
func (c *Config) PolicyNames() []string {
	return slices.Sorted(maps.Keys(c.Policies))
}
