// Package config loads toolgate's YAML configuration: the server settings,
// the classifier and the named policies. It holds no policy logic, and it
// imports none of the runtime (gRPC, OpenTelemetry, Prometheus), so that
// what only reads policies (toolgate eval and validate, the corpus test)
// stays light: the server and classifier sections are kept as Sections,
// which the runtime decodes with their owners' types and defaults. The
// policies are compiled into an engine by NewEngine, the one place an
// engine.Config is made.
//
// # Layers
//
// A config file's policies add to the built-in policy (the embedded
// default's "default" policy): the rules a file writes, and those its
// Claude Code settings import, come after the built-in ones, and every
// named policy extends the built-in one, not only "default". A file that
// writes four allow rules still denies all the built-in policy denies: a
// policy written to add rules cannot drop protections by leaving them out.
//
// Dropping built-in rules takes a setting that says so, which validate
// reports as a warning and serve logs: remove_builtin names each built-in
// rule to drop (a name that is not a built-in rule is an error, so that a
// typo cannot look like a removal), and extends: none starts the policy
// from nothing. Neither touches what is built into the engine itself (the
// protected paths, the secret names, toolgate's own files).
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
//
// # Paths in rules
//
// A "/path" pattern in a rule is relative to the request's working
// directory, like "./path", imported rules included: anchored at the config
// file's directory instead, a deny rule written for projects would match
// nothing in them.
package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/engine"
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the embedded default configuration.
func DefaultYAML() []byte { return bytes.Clone(defaultYAML) }

// defaultName stands for the embedded default in messages.
const defaultName = "(embedded default)"

// Config is the whole configuration file.
type Config struct {
	// Server and Classifier are the sections the server and classifier
	// packages own, kept as written: the runtime expands and decodes them
	// with their owners' types and defaults (Section.Decode).
	Server     Section `yaml:"server,omitempty"`
	Classifier Section `yaml:"classifier,omitempty"`
	// Upstream is the central toolgate a local server forwards to; the
	// upstream package owns it.
	Upstream Section `yaml:"upstream,omitempty"`
	// Approvals is where a central toolgate keeps pending approvals,
	// learned rules and the fleet's decision records; approvals/store
	// owns it.
	Approvals Section `yaml:"approvals,omitempty"`
	// Engine bounds the engine's work; config decodes it itself (the
	// engine is light) into fs.
	Engine   Section           `yaml:"engine,omitempty"`
	Policies map[string]Policy `yaml:"policies"`

	// name names the file in messages: the path as given, or defaultName.
	name string
	// served is the document FromServed read, which Served returns as it
	// is: the version in force is the hash of the bytes the centre sent,
	// whichever encoder made them.
	served []byte
	// dir is the config file's directory, which anchors the relative
	// paths the file names (imports); empty for the embedded default.
	dir string
	// files are the files Load read: the config file, then the imported
	// settings files; sum is the sum of their contents as read.
	files []string
	sum   Sum
	// written holds, by field path, the text as written of each value that
	// ${...} expansion changed.
	written map[string]string
	// layers records, by policy name, where each rule came from and the
	// built-in rules the policy removed.
	layers map[string]*layers
	// fs is the engine section, decoded, with the engine's defaults.
	fs engine.FSConfig
}

// FS returns the engine section: the bounds on a check's file-system work.
func (c *Config) FS() engine.FSConfig { return c.fs }

// Policy is one named policy as written in YAML. After Load it is the
// effective policy: its lists hold the built-in policy's rules, less those
// removed, then the file's own and the imported ones (see layers.go).
type Policy struct {
	// Extends is builtin (the default: the policy adds to the built-in
	// one) or none (it starts from nothing, which validate reports).
	Extends string `yaml:"extends,omitempty"`
	// RemoveBuiltin names built-in rules the policy drops, each exactly as
	// the built-in policy writes it; validate reports each one.
	RemoveBuiltin  *Removals         `yaml:"remove_builtin,omitempty"`
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
	// ClientAllowRules lets checks bring allow rules of their own (a
	// request's rules, a session's, toolgate check --allow, settings a
	// hook imports). Unset, a config file's policy lets them and a policy
	// served by a central toolgate does not: under it, clients add deny
	// and ask rules only, and an allow rule they send is ignored with a
	// note in the reason.
	ClientAllowRules *bool `yaml:"client_allow_rules,omitempty"`
	// ClientBypass lets checks use bypass mode (a client's word, which
	// allows whatever no deny or ask rule catches). Unset, a config
	// file's policy lets them and a policy served by a central toolgate
	// does not: under it, a check in bypass mode is decided as in auto
	// mode, with a note in the reason. The served form carries it only
	// when true, so that local servers built before it accept the sets
	// of policies that do not let clients bypass.
	ClientBypass *bool `yaml:"client_bypass,omitempty"`
	// Unattended says what becomes of a question for a check nobody is
	// at the terminal to answer.
	Unattended *Unattended `yaml:"unattended,omitempty"`
	// ClaudeSettings names a Claude Code settings.json whose permissions
	// and autoMode lists are added to this policy's. After Load it is an
	// absolute path and the lists above include the imported rules.
	ClaudeSettings string `yaml:"claude_settings,omitempty"`
}

// Unattended is a policy's unattended section.
type Unattended struct {
	// OnAsk is what an ASK becomes for an unattended check (one whose
	// request says nobody is at the terminal): deny (the default), ask to
	// leave the question to the client, or approve to queue it for an
	// approver at the central toolgate (approvals). Never allow: nobody
	// agreed to the call.
	OnAsk string `yaml:"on_ask,omitempty"`
	// ApprovalTimeout is how long a queued question waits for an answer
	// (on_ask: approve); 10m when unset, at most 24h.
	ApprovalTimeout time.Duration `yaml:"approval_timeout,omitempty"`
	// OnTimeout is the outcome when nobody answers in time: deny (the
	// default) or allow.
	OnTimeout string `yaml:"on_timeout,omitempty"`
	// ApproveSources are the decision sources whose questions are queued
	// (rule, mode, no_classifier, classifier, ...); the others are
	// denied. Empty means all.
	ApproveSources []string `yaml:"approve_sources,omitempty"`
}

// Unattended's on_ask values.
const (
	OnAskDeny    = "deny"
	OnAskAsk     = "ask"
	OnAskApprove = "approve"
)

// validate checks the section of the policy at field (policies.NAME).
func (u *Unattended) validate(field string) error {
	if u == nil {
		return nil
	}
	var errs []error
	switch u.OnAsk {
	case "", OnAskDeny, OnAskAsk, OnAskApprove:
	default:
		errs = append(errs, fmt.Errorf("%s.unattended.on_ask: must be deny, ask or approve, got %q", field, u.OnAsk))
	}
	if u.OnAsk != OnAskApprove && (u.ApprovalTimeout != 0 || u.OnTimeout != "" || len(u.ApproveSources) > 0) {
		errs = append(errs, fmt.Errorf("%s.unattended: approval_timeout, on_timeout and approve_sources apply only with on_ask: approve", field))
	}
	for i, n := range u.ApproveSources {
		if src, ok := engine.ParseSource(n); !ok || src >= engine.SourceApproval {
			errs = append(errs, fmt.Errorf("%s.unattended.approve_sources[%d]: %q is not a decision source that asks", field, i, n))
		}
	}
	if u.OnTimeout != "" && u.OnTimeout != OnAskDeny && u.OnTimeout != "allow" {
		errs = append(errs, fmt.Errorf("%s.unattended.on_timeout: must be deny or allow, got %q", field, u.OnTimeout))
	} else if _, err := u.approval().Compile(); err != nil && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s.%w", field, err))
	}
	return errors.Join(errs...)
}

// onAsk is the engine's decision for the section: Deny unless it says ask.
func (u *Unattended) onAsk() engine.Decision {
	if u != nil && u.OnAsk == OnAskAsk {
		return engine.Ask
	}
	return engine.Deny
}

// approval is the engine's approval spec for the section; nil unless it
// says approve. A bad value is carried for Compile to report.
func (u *Unattended) approval() *engine.ApprovalSpec {
	if u == nil || u.OnAsk != OnAskApprove {
		return nil
	}
	a := &engine.ApprovalSpec{Timeout: u.ApprovalTimeout}
	switch u.OnTimeout {
	case "", OnAskDeny:
		a.OnTimeout = engine.Deny
	case "allow":
		a.OnTimeout = engine.Allow
	default:
		a.OnTimeout = engine.Ask // refused by Compile
	}
	for _, n := range u.ApproveSources {
		src, _ := engine.ParseSource(n) // an unknown name is refused by Compile
		a.Sources = append(a.Sources, src)
	}
	return a
}

// AutoMode are the classifier's instructions of a policy: named
// categories, free-text rules (each list the model sees as one category,
// extra_hard_deny and so on), and the environment.
type AutoMode struct {
	// Categories layer by name: a file's category of a built-in name
	// replaces it, a new name adds one, and remove_builtin drops one.
	Categories  []policy.Category `yaml:"categories,omitempty"`
	Allow       []string          `yaml:"allow"`
	SoftDeny    []string          `yaml:"soft_deny"`
	HardDeny    []string          `yaml:"hard_deny"`
	Environment []string          `yaml:"environment"`
	// What the organisation trusts and calls production; empty lists
	// mean the assumptions the classifier's prompt states.
	TrustedDomains     []string `yaml:"trusted_domains,omitempty"`
	TrustedBuckets     []string `yaml:"trusted_buckets,omitempty"`
	SourceControlOrgs  []string `yaml:"source_control_orgs,omitempty"`
	InternalRegistries []string `yaml:"internal_registries,omitempty"`
	ProductionMarkers  []string `yaml:"production_markers,omitempty"`
}

// Classifier returns the policy's instructions as the classifier takes
// them.
func (a AutoMode) Classifier() policy.Policy {
	return policy.Policy{
		Categories: a.Categories, Allow: a.Allow, SoftDeny: a.SoftDeny, HardDeny: a.HardDeny, Environment: a.Environment,
		Trust: policy.Trust{Domains: a.TrustedDomains, Buckets: a.TrustedBuckets, SourceControl: a.SourceControlOrgs,
			Registries: a.InternalRegistries, Production: a.ProductionMarkers},
	}
}

// Permissions are the deterministic rule lists.
type Permissions struct {
	Allow []string `yaml:"allow"`
	Ask   []string `yaml:"ask"`
	Deny  []string `yaml:"deny"`
}

// Default returns the embedded configuration.
func Default() (*Config, error) {
	c, err := parse(defaultName, defaultYAML, "", osLookup, &reader{}, originBuiltin)
	if err != nil {
		return nil, fmt.Errorf("embedded default config: %w", err)
	}
	return c, nil
}

// Load reads a config file and the Claude Code settings files its policies
// import, each once; it is a function of those files and the environment,
// so calling it again reloads. Sections the file leaves out, and fields of
// them, keep their owners' defaults; each of its policies adds to the
// built-in policy unless it says otherwise (layers.go), and a file that
// names no default policy is refused (a typo in its name would go
// unnoticed).
//
// Load checks the file's shape and the imported settings; the rules are
// compiled, and reported, by NewEngine, so that a load compiles them once.
func Load(path string) (*Config, error) {
	return load(path, osLookup)
}

func load(path string, lookup func(string) (string, bool)) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	r := &reader{}
	data, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	r.add(abs, data)
	c, err := parse(path, data, filepath.Dir(abs), lookup, r, path)
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
	if err := c.extendBuiltin(); err != nil {
		return nil, inFile(path, err)
	}
	return c, nil
}

// Files returns the absolute paths of the files Load read, the config file
// first: what a watcher should watch to reload. It is empty for Default.
func (c *Config) Files() []string { return slices.Clone(c.files) }

// Sum returns the sum of the files Load read, as it read them: SumFiles of
// Files equals it while the files are unchanged.
func (c *Config) Sum() Sum { return c.sum }

// Dir returns the config file's directory, which anchors the relative
// paths the file names; it is empty for Default.
func (c *Config) Dir() string { return c.dir }

// parse decodes and imports; relative claude_settings paths resolve
// against dir, and r reads (and remembers) the imported files. The owned
// sections are expanded (with lookup) and checked when they are decoded.
// layer names the file's layer for config show.
func parse(name string, data []byte, dir string, lookup func(string) (string, bool), r *reader, layer string) (*Config, error) {
	// A strict decode reports unknown fields and bad values with their
	// lines; the owned sections are taken as they come, and checked the
	// same way when they are decoded.
	c := newConfig()
	c.name, c.dir = name, dir
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		if explained := yamlErrors(name, data, reflect.TypeFor[Config]()); explained != nil {
			return nil, explained
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	src := &origin{name: name, data: data, lookup: lookup, written: c.written}
	c.Server.bind("server", src)
	c.Classifier.bind("classifier", src)
	c.Upstream.bind("upstream", src)
	c.Approvals.bind("approvals", src)
	c.Engine.bind("engine", src)
	c.fs = engine.DefaultFSConfig()
	if err := c.Engine.Decode(&c.fs, func() error { return c.fs.Validate() }); err != nil {
		return nil, err
	}
	var errs []error
	for _, name := range c.PolicyNames() {
		p := c.Policies[name]
		c.layers[name] = newLayers(layer, &p)
		if err := (policy.Policy{Categories: p.AutoMode.Categories}).Validate(); err != nil {
			errs = append(errs, prefixEach("policies."+name+".auto_mode.", err))
		}
	}
	if len(errs) > 0 {
		return nil, inFile(name, errors.Join(errs...))
	}
	if err := c.importClaudeSettings(dir, r); err != nil {
		return nil, inFile(name, err)
	}
	c.files, c.sum = r.paths, r.sum()
	return c, nil
}

func newConfig() *Config {
	return &Config{written: map[string]string{}, layers: map[string]*layers{}}
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

// PolicyNames returns the configured policy names, sorted.
func (c *Config) PolicyNames() []string {
	return slices.Sorted(maps.Keys(c.Policies))
}
