package knowledge

import (
	"path"
	"strings"
)

// credPattern is a credential store as a sequence of path components below
// a home directory.
type credPattern struct {
	comps []string
	// subtree: everything below comps is credential too.
	subtree bool
	// homeOnly: only under a home directory (or a path climbing with ..),
	// because projects commonly keep a file of that name (.npmrc).
	homeOnly bool
	// except exempts files below a subtree by name (*.pub in ~/.ssh).
	except func(name string) bool
}

// credPatterns lists the well-known credential stores. The directories
// that hold them (~/.ssh, ~/.aws, ~/.docker, ~/.kube, ~/.config/gh) count
// too: a recursive reader of the directory reads the store. ~/.aws/config
// holds no secret and is not listed.
var credPatterns = []credPattern{
	{comps: []string{".ssh"}, subtree: true, except: func(n string) bool {
		return strings.HasSuffix(n, ".pub") || n == "known_hosts" || n == "known_hosts.old"
	}},
	{comps: []string{".aws"}},
	{comps: []string{".aws", "credentials"}},
	{comps: []string{".aws", "sso"}, subtree: true},
	{comps: []string{".aws", "cli"}, subtree: true},
	{comps: []string{".netrc"}},
	{comps: []string{".docker"}},
	{comps: []string{".docker", "config.json"}},
	{comps: []string{".kube"}},
	{comps: []string{".kube", "config"}},
	{comps: []string{".git-credentials"}},
	{comps: []string{".config", "git", "credentials"}},
	{comps: []string{".npmrc"}, homeOnly: true},
	{comps: []string{".pypirc"}, homeOnly: true},
	{comps: []string{".gnupg"}, subtree: true},
	{comps: []string{".config", "gh"}, subtree: true},
	{comps: []string{".config", "gcloud"}, subtree: true},
	{comps: []string{".azure"}, subtree: true},
	{comps: []string{".config", "hub"}},
	{comps: []string{".pgpass"}},
	{comps: []string{".vault-token"}},
	{comps: []string{".cargo", "credentials"}},
	{comps: []string{".cargo", "credentials.toml"}},
	{comps: []string{".gem", "credentials"}},
	{comps: []string{".terraform.d", "credentials.tfrc.json"}},
	{comps: []string{".password-store"}, subtree: true},
	{comps: []string{".local", "share", "keyrings"}, subtree: true},
	{comps: []string{".boto"}},
	{comps: []string{".s3cfg"}},
	// Coding agents' and tools' own sign-in tokens.
	{comps: []string{".claude", ".credentials.json"}},
	{comps: []string{".codex", "auth.json"}},
	{comps: []string{".gemini", "oauth_creds.json"}},
	{comps: []string{".config", "github-copilot"}, subtree: true},
	{comps: []string{".m2", "settings.xml"}},
	{comps: []string{".m2", "settings-security.xml"}},
	{comps: []string{".config", "rclone", "rclone.conf"}},
	// A repository's own config can hold tokens (CI extraheader, remote
	// URLs with credentials), which is why git config --list is refused.
	{comps: []string{".git", "config"}},
}

// credByFirst indexes credPatterns by their first component; credAll is
// every index, for a glob first component.
var credByFirst, credAll = func() (map[string][]int, []int) {
	m := map[string][]int{}
	var all []int
	for i, cp := range credPatterns {
		m[cp.comps[0]] = append(m[cp.comps[0]], i)
		all = append(all, i)
	}
	return m, all
}()

// IsCredentialPath reports whether p, as written, names a well-known
// credential store: anything in ~/.ssh except *.pub and known_hosts,
// ~/.aws/credentials (and SSO caches), ~/.netrc, ~/.docker/config.json,
// ~/.kube/config, ~/.git-credentials, ~/.npmrc, ~/.pypirc, ~/.gnupg/**,
// ~/.config/gh/**, ~/.config/gcloud/**, ~/.azure/** and a few more, or a
// directory holding one of them (~/.ssh, ~/.aws).
//
// p may start with ~, ~user, $HOME or ${HOME}, or be absolute: home is the
// user's home directory, and /root, /home/* and /Users/* count as homes
// whatever home is. Because relative paths (../../.ssh/id_rsa), odd
// spellings and symlinked homes reach the same files, stores with
// distinctive names match wherever they appear in the path; .npmrc and
// .pypirc, which projects keep too, match only under a home or after "..".
// Matching ignores case (macOS file systems do) and treats glob
// metacharacters in p as matching what they could match.
func IsCredentialPath(p, home string) bool { return credentialPath(p, home, true) }

// IsCredentialPathLiteral is IsCredentialPath for a path known to hold no
// glob (a resolved directory): its metacharacters are plain characters.
func IsCredentialPathLiteral(p, home string) bool { return credentialPath(p, home, false) }

// credentialPath is IsCredentialPath; glob says whether metacharacters in p
// are live (an unquoted glob) or literal.
func credentialPath(p, home string, glob bool) bool {
	if p == "" {
		return false
	}
	rest, anchored := stripHome(p, home)
	comps := splitPath(path.Clean(strings.ToLower(p)))
	for i := range comps {
		if matchCred(comps[i:], false, glob) {
			return true
		}
	}
	if anchored {
		return matchCred(splitPath(strings.ToLower(rest)), true, glob)
	}
	if isRelative(p) {
		// ../.npmrc may climb to a home.
		i := 0
		for i < len(comps) && comps[i] == ".." {
			i++
		}
		if i > 0 {
			return matchCred(comps[i:], true, glob)
		}
	}
	return false
}

// matchCred reports whether comps starts with a credential pattern; with
// home set, home-only patterns are tried too.
func matchCred(comps []string, home, glob bool) bool {
	if len(comps) == 0 {
		return false
	}
	// Only the patterns whose first component is this one can match,
	// unless it is a glob that may name any of them.
	idx, all := credByFirst[comps[0]], glob && HasMeta(comps[0])
	if all {
		idx = credAll
	}
	for _, i := range idx {
		cp := &credPatterns[i]
		if cp.homeOnly && !home {
			continue
		}
		if len(comps) < len(cp.comps) || (!cp.subtree && len(comps) != len(cp.comps)) {
			continue
		}
		ok := true
		for j, want := range cp.comps {
			if comps[j] != want && !(glob && compMatch(comps[j], want)) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if cp.except != nil && len(comps) > len(cp.comps) && cp.except(comps[len(comps)-1]) {
			continue
		}
		return true
	}
	return false
}

// stripHome returns p relative to the home directory it starts with, if any.
func stripHome(p, home string) (string, bool) {
	cut := func(prefix string) (string, bool) {
		if p == prefix {
			return ".", true
		}
		if strings.HasPrefix(p, prefix+"/") {
			return path.Clean(p[len(prefix)+1:]), true
		}
		return "", false
	}
	if strings.HasPrefix(p, "~") {
		_, rest, _ := strings.Cut(p, "/")
		return path.Clean(rest), true
	}
	for _, prefix := range []string{"$HOME", "${HOME}"} {
		if r, ok := cut(prefix); ok {
			return r, true
		}
	}
	if !strings.HasPrefix(p, "/") {
		return "", false
	}
	p = path.Clean(p)
	if home != "" && home != "/" {
		if r, ok := cut(path.Clean(home)); ok {
			return r, true
		}
	}
	if r, ok := cut("/root"); ok {
		return r, true
	}
	for _, base := range []string{"/home/", "/Users/"} {
		if strings.HasPrefix(p, base) {
			user, rest, _ := strings.Cut(p[len(base):], "/")
			if user != "" {
				return path.Clean(rest), true
			}
		}
	}
	return "", false
}

// isCredentialAncestor reports whether a recursive reader of p may reach a
// credential store: p is a home directory, a directory above homes, a
// directory on the way to a store (~/.config), or a relative path that
// climbs with "..".
func isCredentialAncestor(p string) bool {
	if p == "" {
		return false
	}
	if rest, ok := stripHome(p, ""); ok {
		comps := splitPath(strings.ToLower(rest))
		if len(comps) == 0 || comps[0] == ".." {
			return true
		}
		for i := range credPatterns {
			cp := credPatterns[i].comps
			if len(comps) < len(cp) {
				match := true
				for j := range comps {
					if !compMatch(comps[j], cp[j]) {
						match = false
						break
					}
				}
				if match {
					return true
				}
			}
		}
		return false
	}
	c := path.Clean(p)
	switch c {
	case "/", "/home", "/Users", "/root", "/var", "/var/root":
		return true
	}
	if isRelative(p) && (c == ".." || strings.HasPrefix(c, "../")) {
		return true
	}
	return HasMeta(c) && strings.Count(c, "/") <= 2 && strings.HasPrefix(c, "/")
}

// IsCredentialAncestor reports whether a recursive search rooted at p (as
// written: ~, $HOME, absolute, relative) may sweep a credential store along:
// a home directory, a directory above homes, or one on the way to a store
// (~/.config).
func IsCredentialAncestor(p string) bool { return isCredentialAncestor(p) }
