package rules

import "testing"

func fetch(url string) Call { return Call{Tool: "WebFetch", Kind: "web_fetch", URL: url} }

func TestWebFetchDomain(t *testing.T) {
	tests := []struct {
		rule, url   string
		allow, deny bool
	}{
		{"domain:example.com", "https://example.com/", true, true},
		{"domain:example.com", "https://example.com", true, true},
		{"domain:example.com", "http://example.com/a?b#c", true, true},
		{"domain:example.com", "https://api.example.com/x", true, true},
		{"domain:example.com", "https://a.b.example.com/x", true, true},
		{"domain:example.com", "https://EXAMPLE.Com/x", true, true},
		{"domain:EXAMPLE.com", "https://example.com/x", true, true},
		{"domain:example.com", "HTTPS://example.com/x", true, true},
		{"domain:example.com", "https://example.com:8443/x", true, true},
		{"domain:example.com", "https://example.com./x", true, true},
		{"domain:example.com.", "https://example.com/x", true, true},
		{"domain:example.com", "https://notexample.com/", false, false},
		{"domain:example.com", "https://example.com.evil.com/", false, false},
		{"domain:example.com", "https://evil.com/example.com", false, false},
		{"domain:example.com", "https://evil.com/?u=https://example.com", false, false},
		// User info: never vouched for; deny also checks it as a host.
		{"domain:example.com", "https://example.com@evil.com/", false, true},
		{"domain:evil.com", "https://example.com@evil.com/", false, true},
		{"domain:example.com", "https://evil.com@example.com/", false, true},
		{"domain:example.com", "https://user:pass@example.com/", false, true},
		{"domain:other.com", "https://example.com@evil.com/", false, false},
		// Unparsable or not an http(s) URL with a host: deny yes, allow no.
		{"domain:example.com", "not a url", false, true},
		{"domain:example.com", "", false, false}, // nothing to check
		{"domain:example.com", "example.com/x", false, true},
		{"domain:example.com", "//example.com/x", false, true},
		{"domain:example.com", "ftp://example.com/x", false, true},
		{"domain:example.com", "file:///etc/passwd", false, true},
		{"domain:example.com", "https://exa mple.com/", false, true},
		{"domain:example.com", `https://evil.com\@example.com/`, false, true},
		{"domain:example.com", "https://example.com%00.evil.com/", false, true},
		{"domain:example.com", "https://%zz/", false, true},
		{"domain:example.com", "https:///x", false, true},
		{"domain:example.com", "mailto:a@example.com", false, true},
		// IDN: compare the ASCII (punycode) form.
		{"domain:xn--bcher-kva.example", "https://xn--bcher-kva.example/", true, true},
		{"domain:xn--bcher-kva.example", "https://XN--BCHER-KVA.example/", true, true},
		{"domain:xn--bcher-kva.example", "https://bücher.example/", false, true},
		{"domain:example.com", "https://bücher.example/", false, true},
		// Subdomains only, any host.
		{"domain:*.example.com", "https://example.com/", false, false},
		{"domain:*.example.com", "https://a.example.com/", true, true},
		{"domain:*", "https://anything.test/", true, true},
		{"domain:*", "not a url", false, true},
		// IP addresses: only the canonical form is vouched for.
		{"domain:127.0.0.1", "http://127.0.0.1:8080/", true, true},
		{"domain:127.0.0.1", "http://127.1/", false, true},
		{"domain:127.0.0.1", "http://2130706433/", false, true},
		{"domain:127.0.0.1", "http://0x7f.0.0.1/", false, true},
		{"domain:127.0.0.1", "http://127.0.0.2/", false, false},
		{"domain:[::1]", "http://[::1]:8080/", true, true},
		{"domain:[::1]", "http://[0:0::1]/", true, true},
		{"domain:[::1]", "http://[::2]/", false, false},
		{"domain:example.com", "http://[::1]/", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.rule+" "+tt.url, func(t *testing.T) {
			allow, deny := verdicts(t, "WebFetch("+tt.rule+")", fetch(tt.url), testEnv)
			if allow != tt.allow || deny != tt.deny {
				t.Errorf("WebFetch(%s) on %q: allow %v deny %v; want allow %v deny %v", tt.rule, tt.url, allow, deny, tt.allow, tt.deny)
			}
		})
	}
}

func TestWebFetchBare(t *testing.T) {
	for _, rule := range []string{"WebFetch", "WebFetch(*)"} {
		for _, url := range []string{"https://example.com/", "not a url", ""} {
			allow, deny := verdicts(t, rule, fetch(url), testEnv)
			if !allow || !deny {
				t.Errorf("%s on %q: allow %v deny %v; want both", rule, url, allow, deny)
			}
		}
	}
}
