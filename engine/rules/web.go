package rules

import (
	"net"
	"net/url"
	"strings"
)

// domainPattern is a WebFetch "domain:" specifier compiled.
type domainPattern struct {
	any     bool   // "domain:*"
	host    string // lower-case ASCII, no trailing dot
	subOnly bool   // "domain:*.example.com": subdomains, not the host itself
}

// compileDomain compiles a WebFetch specifier; a non-empty problem says why
// it cannot be.
func compileDomain(spec string) (*domainPattern, string) {
	d, ok := strings.CutPrefix(spec, "domain:")
	if !ok {
		return nil, "WebFetch specifiers are domain:HOST (e.g. WebFetch(domain:example.com))"
	}
	d = strings.ToLower(strings.TrimSpace(d))
	if d == "*" {
		return &domainPattern{any: true}, ""
	}
	p := &domainPattern{}
	if rest, ok := strings.CutPrefix(d, "*."); ok {
		p.subOnly, d = true, rest
	}
	d = strings.TrimSuffix(d, ".")
	if strings.HasPrefix(d, "[") && strings.HasSuffix(d, "]") && !p.subOnly {
		ip := net.ParseIP(d[1 : len(d)-1])
		if ip == nil || ip.To4() != nil {
			return nil, "bad IPv6 address " + quote(d)
		}
		p.host = ip.String()
		return p, ""
	}
	if d == "" {
		return nil, "empty domain (write domain:example.com)"
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c >= 0x80 {
			return nil, "non-ASCII domain " + quote(d) + " (write its punycode form, xn--...)"
		}
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return nil, "bad domain " + quote(d) + " (a host name only: no scheme, port, path or wildcard)"
		}
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" {
			return nil, "bad domain " + quote(d) + " (empty label)"
		}
	}
	if h, ok := canonicalHost(d); !ok || h != d {
		return nil, "bad IP address " + quote(d) + " (write it as a dotted quad, e.g. 127.0.0.1)"
	}
	p.host = d
	return p, ""
}

// matchHost reports whether a lower-case host matches.
func (p *domainPattern) matchHost(h string) bool {
	if p.any {
		return true
	}
	if h == "" {
		return false
	}
	if h == p.host && !p.subOnly {
		return true
	}
	return strings.HasSuffix(h, "."+p.host)
}

// match reports whether the URL raw matches. Under allow the URL must parse
// as an absolute http or https URL with an ASCII host and no user info (an
// "https://example.com@evil.com/" is never vouched for). Under deny (deny
// and ask rules) a URL that does not meet those conditions matches, and the
// user info is checked as a host too.
func (p *domainPattern) match(raw string, deny bool) bool {
	u, err := url.Parse(raw)
	ok := err == nil && u.Opaque == "" && u.Host != "" &&
		(strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https"))
	var host string
	if ok {
		host, ok = canonicalHost(u.Hostname())
	}
	if !deny {
		return ok && u.User == nil && p.matchHost(host)
	}
	if !ok || p.matchHost(host) {
		return true
	}
	if u.User != nil {
		return p.matchHost(strings.TrimSuffix(strings.ToLower(u.User.Username()), "."))
	}
	return false
}

// canonicalHost lower-cases a URL's host and reports whether it can be
// compared with a rule: ASCII only, and an IP address in its canonical form.
// Clients read "127.1", "2130706433" or "0x7f.0.0.1" as 127.0.0.1, so a
// numeric host that is not a canonical dotted quad cannot be vouched for.
func canonicalHost(h string) (string, bool) {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			return h, false
		}
	}
	if strings.Contains(h, ":") {
		ip := net.ParseIP(h)
		if ip == nil {
			return h, false
		}
		return ip.String(), true
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	numeric := last != "" && (strings.HasPrefix(last, "0x") || strings.Trim(last, "0123456789") == "")
	if numeric {
		ip := net.ParseIP(h)
		return h, ip != nil && ip.String() == h
	}
	return h, true
}
