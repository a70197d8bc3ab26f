package knowledge

import (
	"path"
	"strings"
	"sync/atomic"

	"github.com/toolgate/toolgate/engine/memo"
)

// SystemDirs are the operating systems' own directories (Linux, macOS, the
// BSDs, Windows drives under WSL): a working or additional directory that
// is one of them, or holds one, takes no local edits. An entry ending in
// "/**" covers everything beneath it too: programs, libraries, headers,
// configuration, boot files, kernel interfaces, package stores and system
// state, where a write changes what the system or every build runs. An
// entry without it covers only the directory itself, because real
// projects live below it: /opt/<app>, /srv/<site>, /usr/src/app (the usual
// WORKDIR of container images), /usr/local/src/<project>, a mounted
// volume's folders. Components may be globs (Match syntax, folded). macOS
// keeps /etc and /var in /private; BroadRoot reads /private/etc and
// /private/var as /etc and /var.
var SystemDirs = []string{
	"/etc/**", "/boot/**", "/efi/**",
	"/bin/**", "/sbin/**", "/lib/**", "/lib32/**", "/lib64/**", "/libx32/**",
	"/usr", "/usr/bin/**", "/usr/sbin/**", "/usr/lib/**", "/usr/lib32/**", "/usr/lib64/**", "/usr/libx32/**",
	"/usr/libexec/**", "/usr/include/**", "/usr/share/**", "/usr/games/**",
	// Kernel trees that DKMS builds modules from as root; other /usr/src
	// directories are left to projects.
	"/usr/src", "/usr/src/linux*/**", "/usr/src/kernels/**",
	"/usr/local", "/usr/local/bin/**", "/usr/local/sbin/**", "/usr/local/lib/**", "/usr/local/lib64/**",
	"/usr/local/libexec/**", "/usr/local/include/**", "/usr/local/share/**", "/usr/local/etc/**",
	"/usr/local/var/**", "/usr/local/go/**",
	// Homebrew on Intel Macs, Homebrew on Apple silicon, MacPorts.
	"/usr/local/opt/**", "/usr/local/Cellar/**", "/usr/local/Caskroom/**", "/usr/local/Homebrew/**",
	"/usr/local/Frameworks/**", "/opt/homebrew/**", "/opt/local/**",
	"/opt", "/srv",
	"/proc/**", "/sys/**", "/dev/**", "/run/**",
	"/snap/**", "/nix/**", "/gnu/**", "/lost+found/**",
	// System state; cron and at spools run what they hold. /var/tmp,
	// /var/www and macOS's per-user /var/folders are left to projects.
	"/var", "/var/lib/**", "/var/log/**", "/var/spool/**", "/var/run/**", "/var/lock/**", "/var/cache/**",
	"/var/db/**", "/var/mail/**", "/var/backups/**", "/var/opt/**", "/var/snap/**", "/var/empty/**",
	"/var/at/**", "/var/cron/**", "/var/audit/**",
	"/private/etc/**",
	"/System/**", "/Library/**", "/Applications/**", "/cores/**",
	// Windows drives under WSL.
	"/mnt/*/Windows/**", "/mnt/*/Program Files/**", "/mnt/*/Program Files (x86)/**", "/mnt/*/ProgramData/**",
}

// mountDirs are mount points: a volume's root holds a whole disk, and
// what is above them holds every volume. Folders on a volume are left to
// projects.
var mountDirs = []string{"/mnt/*", "/media/*", "/media/*/*", "/Volumes/*"}

// homeDirs are directories that are somebody's home, besides the one
// BroadRoot is given. A home holds shell startup files, keys and every
// tool's configuration.
var homeDirs = []string{
	"/root", "/home/*", "/Users/*", "/var/home/*", "/var/root", "/mnt/*/Users/*",
}

// homeBroad are directories below a home, "~/" standing for every home,
// with the same "/**" convention as SystemDirs.
var homeBroad = []string{
	// Dot-directories hold tools' configuration, credentials, caches and
	// the programs that shells, editors and agents load on start:
	// ~/.config, ~/.local/bin, ~/.ssh, ~/.aws, ~/.cargo/bin, ~/.npm-global,
	// a dotfiles repository whose files are linked into the home.
	"~/.*/**",
	"~/bin/**", "~/go/bin/**",
	"~/go/pkg/**", // the module cache every build reads
	"~/snap/**",
	"~/Applications/**",
	// macOS: LaunchAgents run at login; preferences, application support.
	"~/Library/**",
	// Windows homes under WSL: the Startup folder runs at login.
	"~/AppData/**",
}

const homeBroadWhy = "a home's configuration, state or programs"

// homeBroadExcept are folders of synced drives that people keep projects
// in: homeBroad's subtrees do not reach them or what is beneath them. The
// drives' roots stay refused, like a volume's.
var homeBroadExcept = []string{
	"~/Library/Mobile Documents/com~apple~CloudDocs/*",
	"~/Library/CloudStorage/*/*",
}

// binNames are names of directories of programs, as on PATH: anything in
// one (/opt/conda/bin, ~/proj/node_modules/.bin) is refused wherever it is.
var binNames = []string{"bin", "sbin", ".bin"}

// broadEntry is one compiled entry of the lists above.
type broadEntry struct {
	show  string   // as written, for the reason
	comps []string // folded components
	tree  bool     // everything beneath too
	why   string
}

var (
	systemEntries = append(compileBroad(SystemDirs, "", "a system directory"),
		compileBroad(mountDirs, "", "a mount point")...)
	homeEntries = compileBroad(homeDirs, "", "a home directory")
	// Per fixed home, its broad subtrees and exceptions.
	fixedHomeBroad  = expandHomes(homeDirs, homeBroad, homeBroadWhy)
	fixedHomeExcept = expandHomes(homeDirs, homeBroadExcept, "")
)

// compiledHome is the entries for one given home followed by the fixed
// ones.
type compiledHome struct {
	home                 string
	homes, broad, except []broadEntry
}

// homeCache holds the entries of the last home BroadRoot was given: a
// server has one.
var homeCache atomic.Pointer[compiledHome]

func compileHome(home string) *compiledHome {
	lit := escapeGlob(home)
	own := compileBroad([]string{lit}, "", "a home directory")
	own[0].show = home
	return &compiledHome{
		home:   home,
		homes:  append(own, homeEntries...),
		broad:  append(compileBroad(homeBroad, lit, homeBroadWhy), fixedHomeBroad...),
		except: append(compileBroad(homeBroadExcept, lit, ""), fixedHomeExcept...),
	}
}

// escapeGlob makes a literal path a glob matching only itself.
func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// compileBroad compiles absolute entries (a leading ~ is replaced by home).
func compileBroad(list []string, home, why string) []broadEntry {
	var out []broadEntry
	for _, s := range list {
		show := s
		if rest, ok := strings.CutPrefix(s, "~"); ok {
			s = home + rest
		}
		e := broadEntry{show: show, why: why}
		if t, ok := strings.CutSuffix(s, "/**"); ok {
			s, e.tree = t, true
		}
		e.comps = splitPath(Fold(s))
		out = append(out, e)
	}
	return out
}

// expandHomes compiles the ~/ entries under every home pattern.
func expandHomes(homes, list []string, why string) []broadEntry {
	var out []broadEntry
	for _, h := range homes {
		out = append(out, compileBroad(list, h, why)...)
	}
	return out
}

// BroadRoot reports why dir, an absolute directory already resolved (no
// symlinks, no "." or ".."), is too broad to accept edits in as a working
// or additional directory, or "" when it is not. Too broad: "/"; a home
// (the one given, /root, /home/*, /Users/*, ...) or a directory above
// one; a system directory (SystemDirs); a home's dot-directories, bin and
// Library directories and what is beneath them; any directory named bin,
// sbin or .bin and what is beneath it; and any directory above one of
// these. Names are compared folded (macOS and Windows file systems ignore
// case); refusing a name that only differs in case on Linux costs a local
// edit, never a wrong allow. A relative or empty dir is refused.
//
// Answers are remembered (broadMemo): the function is pure, and every
// check asks it about the same few working directories.
func BroadRoot(dir, home string) string {
	if len(dir)+len(home) > maxBroadKey {
		return broadRoot(dir, home)
	}
	key := broadKey{dir, home}
	if why, ok := broadMemo.Get(key); ok {
		return why
	}
	why := broadRoot(dir, home)
	broadMemo.Put(key, why)
	return why
}

// maxBroadKey bounds the memo's keys: PATH_MAX for dir and home each.
const maxBroadKey = 8192

type broadKey struct{ dir, home string }

// broadMemo is bounded in entries and, by maxBroadKey, in key size.
var broadMemo = memo.New[broadKey, string](1024)

func broadRoot(dir, home string) string {
	if !strings.HasPrefix(dir, "/") {
		return "not an absolute directory"
	}
	comps := splitPath(Fold(path.Clean(dir)))
	if len(comps) == 0 {
		return "the file system root"
	}
	if len(comps) >= 2 && comps[0] == "private" && (comps[1] == "etc" || comps[1] == "var") {
		comps = comps[1:]
	}
	homes, broad, except := homeEntries, fixedHomeBroad, fixedHomeExcept
	if home = path.Clean(home); path.IsAbs(home) && home != "/" {
		c := homeCache.Load()
		if c == nil || c.home != home {
			c = compileHome(home)
			homeCache.Store(c)
		}
		homes, broad, except = c.homes, c.broad, c.except
	}
	for _, e := range homes {
		if why := e.judge(comps, nil); why != "" {
			return why
		}
	}
	for _, e := range systemEntries {
		if why := e.judge(comps, nil); why != "" {
			return why
		}
	}
	for _, e := range broad {
		if why := e.judge(comps, except); why != "" {
			return why
		}
	}
	for _, c := range comps {
		for _, b := range binNames {
			if c == b {
				return "inside a " + b + " directory (programs run from PATH)"
			}
		}
	}
	return ""
}

// judge reports why comps is the entry, beneath it (for a tree entry, and
// not at or beneath an exception), or above it; "" when none.
func (e broadEntry) judge(comps []string, except []broadEntry) string {
	show := strings.TrimSuffix(e.show, "/**")
	switch n := len(e.comps); {
	case len(comps) < n:
		if matchComps(e.comps[:len(comps)], comps) {
			return "above " + show + " (" + e.why + ")"
		}
	case !matchComps(e.comps, comps[:n]):
	case len(comps) == n:
		return show + " (" + e.why + ")"
	case e.tree:
		for _, x := range except {
			if len(comps) >= len(x.comps) && matchComps(x.comps, comps[:len(x.comps)]) {
				return ""
			}
		}
		return "inside " + show + " (" + e.why + ")"
	}
	return ""
}

// matchComps reports whether each folded component of comps matches the
// glob at the same place in pats (same lengths).
func matchComps(pats, comps []string) bool {
	for i, p := range pats {
		if m, ok := match(p, comps[i]); !m || !ok {
			return false
		}
	}
	return true
}
