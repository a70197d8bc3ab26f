package config

import (
	"bytes"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// urlMask replaces credentials in a URL's user info.
const urlMask = "xxxxx"

// MarshalShow returns the configuration, as loaded, as YAML that is safe to
// print and loads back to the same configuration:
//   - the server and classifier sections are printed as decoded
//     (Section.Decode), their owners' defaults included, or as written
//     when they were not decoded;
//   - values that ${...} expansion changed are shown as written
//     (${OPENAI_PROXY_PASSWORD}), never with a variable's value;
//   - credentials in backend base URLs (user info) are masked;
//   - imported Claude Code settings are shown merged into the policy's
//     lists, with a comment naming the file instead of claude_settings.
func (c *Config) MarshalShow() ([]byte, error) {
	shown := *c
	shown.Policies = maps.Clone(c.Policies)
	imported := map[string]string{}
	for name, p := range shown.Policies {
		if p.ClaudeSettings != "" {
			imported[name] = p.ClaudeSettings
			p.ClaudeSettings = ""
			shown.Policies[name] = p
		}
	}
	var root yaml.Node
	if err := root.Encode(&shown); err != nil {
		return nil, err
	}
	walkScalars(&root, "", func(n *yaml.Node, path string) {
		if w, ok := c.written[path]; ok {
			n.Value, n.Tag, n.Style = w, "!!str", 0
		}
		// Any URL in server or classifier (a backend, a tracing endpoint)
		// may carry credentials in its user info or query.
		if strings.HasPrefix(path, "server.") || strings.HasPrefix(path, "classifier.") {
			n.Value = maskQuerySecrets(maskUserinfo(n.Value))
		}
	})
	if pol := mappingValue(&root, "policies"); pol != nil {
		for i := 0; i+1 < len(pol.Content); i += 2 {
			if f, ok := imported[pol.Content[i].Value]; ok {
				pol.Content[i].HeadComment = "permissions and auto_mode include the rules imported from " + f
			}
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, fmt.Errorf("config show: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config show: %w", err)
	}
	return buf.Bytes(), nil
}

// walkScalars calls f on every scalar value under n with its field path
// (server.listen, classifier.backends[0].base_url).
func walkScalars(n *yaml.Node, path string, f func(*yaml.Node, string)) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walkScalars(c, path, f)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if path != "" {
				p = path + "." + p
			}
			walkScalars(n.Content[i+1], p, f)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			walkScalars(c, path+"["+strconv.Itoa(i)+"]", f)
		}
	case yaml.ScalarNode:
		f(n, path)
	}
}

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// maskUserinfo masks the user info of a URL: the password when there is
// one, else the whole user name (which is then usually a token). It works
// on the text, so that the rest of the URL, ${...} included, is printed as
// written.
func maskUserinfo(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	start := i + 3
	end := len(s)
	if j := strings.IndexAny(s[start:], "/?#"); j >= 0 {
		end = start + j
	}
	at := strings.LastIndexByte(s[start:end], '@')
	if at < 0 {
		return s
	}
	at += start
	if colon := strings.IndexByte(s[start:at], ':'); colon >= 0 {
		return s[:start+colon+1] + urlMask + s[at:]
	}
	return s[:start] + urlMask + s[at:]
}

// secretQueryKeys are query parameter names (lowercased, without - and _)
// whose values are credentials.
var secretQueryKeys = []string{"key", "apikey", "token", "accesstoken", "secret", "password", "passwd", "pwd", "sig", "signature", "auth", "code", "credential", "credentials"}

// maskQuerySecrets masks the values of a URL's query parameters whose names
// say they are credentials (?api-key=..., ?token=...).
func maskQuerySecrets(s string) string {
	q := strings.IndexByte(s, '?')
	if q < 0 || !strings.Contains(s[:q], "://") {
		return s
	}
	end := len(s)
	if h := strings.IndexByte(s[q:], '#'); h >= 0 {
		end = q + h
	}
	params := strings.Split(s[q+1:end], "&")
	for i, p := range params {
		name, _, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		norm := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(name))
		for _, k := range secretQueryKeys {
			if norm == k || strings.HasSuffix(norm, k) {
				params[i] = name + "=" + urlMask
				break
			}
		}
	}
	return s[:q+1] + strings.Join(params, "&") + s[end:]
}
