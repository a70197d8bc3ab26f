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
//   - each policy is shown as it runs, in layers: a comment above it names
//     them (the built-in policy, the file, imported Claude Code settings),
//     its lists hold the rules of every layer, each marked with the layer
//     it came from, and extends and remove_builtin are shown as written
//     (loading the output again drops the same built-in rules, and takes
//     the built-in rules it lists for the built-in ones);
//   - claude_settings is left out, its rules being in the lists.
func (c *Config) MarshalShow() ([]byte, error) {
	shown := *c
	shown.Policies = maps.Clone(c.Policies)
	for name, p := range shown.Policies {
		p.ClaudeSettings = ""
		shown.Policies[name] = p
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
			c.annotateLayers(pol.Content[i], pol.Content[i+1])
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

// annotateLayers marks a shown policy with its layers and each rule of
// its lists with the layer it came from.
func (c *Config) annotateLayers(key, policy *yaml.Node) {
	l := c.layers[key.Value]
	if l == nil {
		return
	}
	key.HeadComment = l.comment()
	for _, f := range layeredLists {
		list := policy
		for _, k := range strings.Split(f.path, ".") {
			if list = mappingValue(list, k); list == nil {
				break
			}
		}
		if list == nil || list.Kind != yaml.SequenceNode {
			continue
		}
		from := l.from[f.path]
		for i, item := range list.Content {
			if i < len(from) {
				item.LineComment = from[i]
			}
		}
		// One rule a line, so that each carries its comment.
		list.Style = 0
	}
	for i := 0; i+1 < len(policy.Content); i += 2 {
		if policy.Content[i].Value == "auto_mode" {
			// What the classifier is told of the environment, the
			// assumptions of empty trust lists included.
			p := c.Policies[key.Value]
			policy.Content[i].HeadComment = "the classifier is told of the environment:\n- " + strings.Join(p.AutoMode.Classifier().Trust.Lines(), "\n- ")
		}
	}
	if cats := mappingValue(mappingValue(policy, "auto_mode"), "categories"); cats != nil && cats.Kind == yaml.SequenceNode {
		for i, item := range cats.Content {
			if name := mappingValue(item, "name"); name != nil && i < len(l.categories) {
				name.LineComment = l.categories[i]
			}
		}
	}
	if mappingValue(policy, "remove_builtin") != nil {
		for i := 0; i+1 < len(policy.Content); i += 2 {
			if policy.Content[i].Value == "remove_builtin" {
				policy.Content[i].HeadComment = "built-in rules this policy drops, as " + c.name + " says (validate reports each)"
			}
		}
	}
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
	if n == nil || n.Kind != yaml.MappingNode {
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
