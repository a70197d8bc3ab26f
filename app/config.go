package app

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/web"

	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/upstream"
)

// Config is a config file read for running: the file (policies, the files
// it read, their sum) and its server and classifier sections decoded with
// their owners' types and defaults.
type Config struct {
	File       *config.Config
	Server     server.Config
	Classifier classifier.Config
	// Upstream makes this a local server: what its stages leave open is
	// classified by the central toolgate there.
	Upstream upstream.Config
	// Approvals is a central server's approval queue, its store and the
	// approvers' page.
	Approvals ApprovalsConfig
}

// LoadConfig loads the config file at path, or the embedded default when
// path is empty, and decodes its sections.
func LoadConfig(path string) (*Config, error) {
	var f *config.Config
	var err error
	if path == "" {
		f, err = config.Default()
	} else {
		f, err = config.Load(path)
	}
	if err != nil {
		return nil, err
	}
	return Decode(f)
}

// Decode decodes and validates the server and classifier sections of f;
// what the file leaves out keeps the owners' defaults. The problems of
// both sections are reported together.
func Decode(f *config.Config) (*Config, error) {
	c := &Config{File: f, Server: server.DefaultConfig(), Classifier: classifier.DefaultConfig(), Upstream: upstream.DefaultConfig(), Approvals: ApprovalsConfig{Config: approvals.DefaultConfig(), Web: web.DefaultConfig()}}
	err := errors.Join(
		f.Server.Decode(&c.Server, c.Server.Validate),
		f.Classifier.Decode(&c.Classifier, c.validateClassifier),
		f.Upstream.Decode(&c.Upstream, c.Upstream.Validate),
		f.Approvals.Decode(&c.Approvals, c.Approvals.Validate),
	)
	if err == nil {
		err = c.validateRoles()
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Validate checks the sections again, after a caller (flags, a benchmark)
// has changed them.
func (c *Config) Validate() error {
	return errors.Join(c.Server.Validate(), c.validateClassifier(), c.Upstream.Validate(), c.Approvals.Validate(), c.validateRoles())
}

// ApprovalsConfig is the approvals section: the queue's and store's
// fields (package approvals), and the page's (approvals.web), which
// imports the queue and so cannot be a field of its config.
type ApprovalsConfig struct {
	approvals.Config `yaml:",inline"`
	Web              web.Config `yaml:"web"`
}

// Validate reports every bad field of the section.
func (c *ApprovalsConfig) Validate() error {
	return errors.Join(c.Config.Validate(), c.Web.Validate())
}

// validateRoles refuses a server that would be both: a local server
// classifies through its upstream, and a backend of its own would leave
// unclear which answers.
func (c *Config) validateRoles() error {
	if c.Upstream.Enabled() && c.Classifier.Enabled() {
		return fmt.Errorf("upstream.address: a server with an upstream classifies through it; remove classifier.backends (%d configured, --classifier-url included) or the upstream", len(c.Classifier.Backends))
	}
	if c.Approvals.Web.Listen != "" && c.Server.TokenFile == "" {
		return fmt.Errorf("approvals.web.listen: approvers sign in with tokens of role approver in server.token_file, and there is no token file")
	}
	return nil
}

func (c *Config) validateClassifier() error {
	c.Classifier.WithBackendDefaults()
	return c.Classifier.Validate()
}

// NewEngine compiles the policies into an engine deciding for the agents of
// home, with cls for what the local stages leave open (nil: none). It
// protects toolgate's TLS and token files besides the config's own, and
// the files it writes: the audit log with its backups, and the classifier's
// dump file (an agent that could remove or rewrite them could hide what it
// did). See config.Config.NewEngine, the one place an engine is
// configured.
func (c *Config) NewEngine(home string, cls *classifier.Classifier) (*engine.Engine, []string, error) {
	if cls == nil {
		// A nil *Classifier in the interface is not nil.
		return c.newEngine(home, nil, nil, nil)
	}
	return c.newEngine(home, cls, nil, nil)
}

// newEngine is NewEngine with the file-system work run on pool (nil:
// inline), as a server runs it.
func (c *Config) newEngine(home string, cls engine.Classifier, apr engine.Approver, pool *engine.Pool) (*engine.Engine, []string, error) {
	tls, up := c.Server.TLS, c.Upstream
	rt := config.Runtime{
		Home:                    home,
		OnClassifierUnavailable: engine.Deny,
		OwnFiles: []string{tls.CertFile, tls.ClientCAFile, c.Server.Audit.File, c.Classifier.DumpFile, c.Server.UnixSocket,
			up.TLS.CAFile, up.TLS.CertFile},
		OwnPatterns: append(c.Server.Audit.Backups(), c.Classifier.DumpBackups()...),
		SecretFiles: []string{tls.KeyFile, c.Server.TokenFile, up.TLS.KeyFile, up.TokenFile},
		Classifier:  cls,
		Approver:    apr,
		Pool:        pool,
	}
	if up.StateDir != "" {
		// The policy kept there is loaded at the next start: an agent
		// that rewrote it would write its own policy.
		rt.OwnFiles = append(rt.OwnFiles, up.StateDir)
		rt.OwnPatterns = append(rt.OwnPatterns, filepath.Join(up.StateDir, "*"))
	}
	if c.Classifier.OnUnavailable == "ask" {
		rt.OnClassifierUnavailable = engine.Ask
	}
	return c.File.NewEngine(rt)
}

// ClassifierRules returns each policy's natural-language rules.
func (c *Config) ClassifierRules() map[string]classifier.Rules {
	out := make(map[string]classifier.Rules, len(c.File.Policies))
	for name, p := range c.File.Policies {
		out[name] = p.AutoMode.Classifier()
	}
	return out
}
