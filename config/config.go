// Package config loads toolgate's YAML configuration: the server settings,
// the classifier and the named policies. It only wires the config structs
// the other packages own; it holds no policy logic.
//
// # Environment variables
//
// String values in the server and classifier sections may name environment
// variables: ${NAME} is the variable's value, ${NAME:-default} its value or,
// when it is unset or empty, the default, and $$ is a literal "$". An unset
// variable without a default is an error naming the file, the line, the
// field and the variable (never a value). Expansion works on the parsed
// document, so a value is only ever the text of one string: it cannot add
// keys or lists. Numbers and durations are not expanded.
//
// Policies are never expanded: their rules are shell and path patterns in
// which "$" is literal text (Bash(echo ${HOME}) is a rule about that exact
// command). API keys stay out of the file altogether: a backend names the
// variable holding its key (api_key_env). Config.MarshalShow prints
// expanded values as written, ${NAME}, never their values.
//
// # Claude Code settings
//
// A policy may name a Claude Code settings file (claude_settings: PATH;
// relative to the config file's directory, or ~/...). Its permissions
// (allow, ask, deny) and autoMode (allow, soft_deny, hard_deny, environment)
// lists are added to the policy's own lists; nothing is removed, and deny
// still beats ask and allow whichever file a rule came from. autoMode's
// "$defaults" entries are dropped (the policy's own lists play the role of
// Claude Code's built-in ones) and other settings are ignored. Malformed
// JSON, wrongly typed lists and rules toolgate cannot parse are errors
// naming the settings file and the field. The file is read on every Load;
// Config.Files lists it for a watcher.
package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

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

	// files are the files Load read: the config file, then the imported
	// settings files.
	files []string
	// written holds, by field path, the text as written of each value that
	// ${...} expansion changed.
	written map[string]string
}

// Policy is one named policy as written in YAML.
type Policy struct {
	Permissions    Permissions       `yaml:"permissions"`
	SafeTools      []string          `yaml:"safe_tools"`
	ToolAliases    map[string]string `yaml:"tool_aliases"`
	ProtectedPaths []string          `yaml:"protected_paths"`
	// ReadRoots add directories outside the project that may be read
	// locally (absolute or ~/); they never remove the secret-name checks.
	ReadRoots []string `yaml:"read_roots"`
	// AcceptEdits is on unless set to false.
	AcceptEdits *bool `yaml:"accept_edits"`
	// AutoMode holds the classifier's natural-language rules.
	AutoMode AutoMode `yaml:"auto_mode"`
	// ClaudeSettings names a Claude Code settings.json whose permissions
	// and autoMode lists are added to this policy's. After Load it is an
	// absolute path and the lists above include the imported rules.
	ClaudeSettings string `yaml:"claude_settings,omitempty"`
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
	c, err := parse("(embedded default)", defaultYAML, "", osLookup)
	if err != nil {
		return nil, fmt.Errorf("embedded default config: %w", err)
	}
	return c, nil
}

// Load reads a config file and the Claude Code settings files its policies
// import; it is a function of those files and the environment, so calling
// it again reloads. Server settings the file leaves out keep their
// defaults; its policies replace the embedded ones (a file that names no
// default policy gets an empty one, not the embedded one, so that what
// runs is what the file says).
func Load(path string) (*Config, error) {
	return load(path, osLookup)
}

func load(path string, lookup func(string) (string, bool)) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := parse(path, data, filepath.Dir(abs), lookup)
	if err != nil {
		return nil, err
	}
	if len(c.Policies) == 0 {
		// An empty or truncated file (a write cut short, a full disk) would
		// otherwise load, and hot reload would drop every rule.
		return nil, fmt.Errorf("%s: policies: none defined; a config file must define its policies (toolgate config defaults prints the default ones)", path)
	}
	if _, ok := c.Policies[engine.DefaultPolicy]; !ok {
		// Requests that name no policy get it; an unnoticed typo in its
		// name ("defualt") would leave them with no rules at all.
		return nil, fmt.Errorf("%s: policies.%s: missing; requests that name no policy use it (define it, if only as %s: {}; policies defined: %s)",
			path, engine.DefaultPolicy, engine.DefaultPolicy, strings.Join(c.PolicyNames(), ", "))
	}
	c.files = slices.Insert(c.files, 0, abs)
	return c, nil
}

// Files returns the absolute paths of the files Load read, the config file
// first: what a watcher should watch to reload. It is empty for Default.
func (c *Config) Files() []string { return slices.Clone(c.files) }

// parse decodes, expands and imports; relative claude_settings paths
// resolve against dir.
func parse(name string, data []byte, dir string, lookup func(string) (string, bool)) (*Config, error) {
	// A strict decode of the text as written reports unknown fields and
	// bad values with their lines; yaml's Node.Decode cannot be strict.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(newConfig()); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// The same text as a tree, expanded, decoded again: its shape is the
	// one just checked, and expansion only changes strings.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := newConfig()
	used := map[string]string{}
	if err := expandDoc(&doc, lookup, c.written, used); err != nil {
		return nil, inFile(name, err)
	}
	if doc.Kind != 0 {
		if err := doc.Decode(c); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := c.importClaudeSettings(dir); err != nil {
		return nil, inFile(name, err)
	}
	if err := c.Validate(); err != nil {
		return nil, scrub(inFile(name, err), used)
	}
	return c, nil
}

func newConfig() *Config {
	return &Config{Server: server.DefaultConfig(), Classifier: classifier.DefaultConfig(), written: map[string]string{}}
}

// inFile prefixes each of err's joined errors with the file name, so that
// every line of a multi-line error names the file.
func inFile(name string, err error) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	if len(errs) == 1 {
		return fmt.Errorf("%s: %w", name, err)
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = fmt.Errorf("%s: %w", name, e)
	}
	return errors.Join(out...)
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
			ReadRoots:          p.ReadRoots,
			DisableAcceptEdits: p.AcceptEdits != nil && !*p.AcceptEdits,
		}
	}
	return out
}

// PolicyNames returns the configured policy names, sorted.
func (c *Config) PolicyNames() []string {
	return slices.Sorted(maps.Keys(c.Policies))
}
