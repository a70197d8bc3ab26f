package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/engine"
)

// Bounds of a served policy set a local server takes: a bigger one is
// refused and the set in force stays. They are far above any real
// organisation's policies (the built-in policy is 4 KiB and 35 rules); they
// bound what a broken or hostile centre can make a local server compile.
const (
	MaxServedBytes = 1 << 20
	MaxServedRules = 20000
)

// VersionPrefix starts every policy version: the content hash of a
// policy set's served form.
const VersionPrefix = "sha256:"

// served is the form in which a central toolgate serves its policies to
// local ones: every policy as it runs (every layer applied, imported
// settings included), with nothing left to resolve against files or the
// built-in policy. Encoded as YAML it is canonical (fields in their
// declared order, map keys sorted), so the same policies give the same
// bytes and the same version.
type served struct {
	Policies map[string]Policy `yaml:"policies"`
}

// Served returns the policies in their served form and its version,
// "sha256:" and the hex SHA-256 of it. In that form each policy says
// whether clients may bring allow rules (client_allow_rules) and use
// bypass mode (client_bypass): a policy that does not say so lets them in
// a config file and not when served.
func (c *Config) Served() (doc []byte, version string, err error) {
	if c.served != nil {
		return c.served, Version(c.served), nil
	}
	s := served{Policies: make(map[string]Policy, len(c.Policies))}
	for name, p := range c.Policies {
		p = clonePolicy(p)
		p.Extends, p.RemoveBuiltin, p.ClaudeSettings = "", nil, ""
		p.AcceptEdits = ptr(p.AcceptEdits == nil || *p.AcceptEdits)
		p.ClientAllowRules = ptr(p.ClientAllowRules != nil && *p.ClientAllowRules)
		// Said only when true (see Policy.ClientBypass): unset, a served
		// policy refuses bypass mode.
		if p.ClientBypass != nil && !*p.ClientBypass {
			p.ClientBypass = nil
		}
		// Said only when it is ask: unset means deny, and local servers
		// built before the setting refuse a set that names it, as
		// they would any unknown field.
		if p.Unattended.onAsk() == engine.Deny && p.Unattended.approval() == nil {
			p.Unattended = nil
		}
		s.Policies[name] = p
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&s); err != nil {
		return nil, "", fmt.Errorf("policies: encoding the served form: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, "", fmt.Errorf("policies: encoding the served form: %w", err)
	}
	return buf.Bytes(), Version(buf.Bytes()), nil
}

// Version is the version of a served document.
func Version(doc []byte) string {
	sum := sha256.Sum256(doc)
	return VersionPrefix + hex.EncodeToString(sum[:])
}

func ptr[T any](v T) *T { return &v }

// FromServed is the config of a local toolgate whose policies come from a
// central one: doc is their served form, from, where it came from (the
// upstream's address, the state directory's copy), named in messages and
// by config show. The policies are taken as they are: the centre has
// applied the built-in layer already. Like Load, it checks the shape; the
// rules are compiled by NewEngine.
func FromServed(doc []byte, from string) (*Config, error) {
	if len(doc) > MaxServedBytes {
		return nil, fmt.Errorf("%s: the policy set is %d bytes, over the limit of %d", from, len(doc), MaxServedBytes)
	}
	var s served
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	if _, ok := s.Policies[engine.DefaultPolicy]; !ok {
		return nil, fmt.Errorf("%s: policies.%s: missing (policies served: %s)", from, engine.DefaultPolicy, strings.Join(slices.Sorted(maps.Keys(s.Policies)), ", "))
	}
	rules := 0
	for _, p := range s.Policies {
		rules += len(p.Permissions.Allow) + len(p.Permissions.Ask) + len(p.Permissions.Deny) + len(p.ProtectedPaths) + len(p.ReadRoots)
	}
	if rules > MaxServedRules {
		return nil, fmt.Errorf("%s: the policy set has %d rules and paths, over the limit of %d", from, rules, MaxServedRules)
	}
	c := newConfig()
	c.name, c.Policies, c.fs, c.served = from, s.Policies, engine.DefaultFSConfig(), slices.Clone(doc)
	for name, p := range c.Policies {
		if p.Extends != "" || p.RemoveBuiltin != nil || p.ClaudeSettings != "" {
			return nil, fmt.Errorf("%s: policies.%s: extends, remove_builtin and claude_settings have no place in a served policy", from, name)
		}
		if err := p.Unattended.validate(from + ": policies." + name); err != nil {
			return nil, err
		}
		if err := p.AutoMode.Classifier().Validate(); err != nil {
			return nil, prefixEach(from+": policies."+name+".auto_mode: ", err)
		}
		if p.ClientAllowRules == nil {
			// A served policy lets clients allow only when it says so.
			p.ClientAllowRules = ptr(false)
		}
		if p.ClientBypass == nil {
			// Nor bypass mode.
			p.ClientBypass = ptr(false)
		}
		c.Policies[name] = p
		c.layers[name] = newLayers(from, &p)
	}
	return c, nil
}
