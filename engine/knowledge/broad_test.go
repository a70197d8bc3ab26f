package knowledge

import (
	"fmt"
	"strings"
	"testing"
)

func TestBroadRoot(t *testing.T) {
	const home = "/home/dev"
	for _, tc := range []struct {
		dir  string
		home string // home when not the default
		want string // a substring of the reason; "" means not broad
	}{
		// The root, homes and what is above them.
		{"/", "", "root"},
		{"", "", "absolute"},
		{"relative/dir", "", "absolute"},
		{"/home/dev", "", "home"},
		{"/home", "", "above /home/dev"},
		{"/home/other", "", "/home/*"},
		{"/root", "", "home"},
		{"/Users/alice", "", "home"},
		{"/Users", "", "above"},
		{"/var/home/dev", "", "home"}, // Fedora Atomic's real /home
		{"/srv/jenkins", "/srv/jenkins", "home"},
		{"/srv", "/srv/jenkins", "/srv"},
		{"/data/users/dev", "/data/users/dev", "home"},
		{"/data/users", "/data/users/dev", "above /data/users/dev"},
		{"/data", "/data/users/dev", "above"},
		{"/data/users/dev/proj", "/data/users/dev", ""},
		{"/home/dev/src/toolgate", "", ""},
		{"/root/app", "", ""},
		{"/Users/alice/code/site", "", ""},
		{"/home/dev/go/src/example.com/x", "", ""},
		{"/home/dev/Documents/thesis", "", ""},
		// A home with glob characters is taken literally.
		{"/data/a[b]", "/data/a[b]", "home"},
		{"/data/ab", "/data/a[b]", ""},
		{"/data/a*/x", "/data/a*", ""},
		{"/data/abc", "/data/a*", ""},
		// System directories and what is beneath the trees.
		{"/etc", "", "/etc"},
		{"/etc/nginx", "", "inside /etc"},
		{"/private/etc/ssh", "", "inside /etc"},
		{"/private", "", "above /private/"},
		{"/boot/efi", "", "/boot"},
		{"/usr", "", "/usr"},
		{"/usr/bin", "", "/usr/bin"},
		{"/usr/lib/python3/dist-packages", "", "inside /usr/lib"},
		{"/usr/share/bash-completion", "", "inside /usr/share"},
		{"/usr/include", "", "/usr/include"},
		{"/usr/local", "", "/usr/local"},
		{"/usr/local/bin", "", "/usr/local/bin"},
		{"/usr/local/lib/node_modules/x", "", "inside /usr/local/lib"},
		{"/usr/local/etc/rc.d", "", "inside /usr/local/etc"},
		{"/usr/local/go/src", "", "inside /usr/local/go"},
		{"/usr/src", "", "/usr/src"},
		{"/usr/src/linux-headers-6.8.0", "", "/usr/src/linux*"},
		{"/usr/src/linux-6.8/drivers", "", "inside /usr/src/linux*"},
		{"/usr/src/kernels/6.8.0", "", "inside /usr/src/kernels"},
		{"/opt", "", "/opt"},
		{"/opt/homebrew", "", "/opt/homebrew"},
		{"/opt/homebrew/Cellar/go", "", "inside /opt/homebrew"},
		{"/opt/local/etc", "", "inside /opt/local"},
		{"/usr/local/Cellar/node", "", "inside /usr/local/cellar"},
		{"/var", "", "/var"},
		{"/private/var", "", "/var"},
		{"/var/lib/docker", "", "inside /var/lib"},
		{"/var/spool/cron/crontabs", "", "inside /var/spool"},
		{"/private/var/db/launchd.db", "", "inside /var/db"},
		{"/srv", "", "/srv"},
		{"/proc/self", "", "inside /proc"},
		{"/sys/kernel", "", "inside /sys"},
		{"/dev/shm", "", "inside /dev"},
		{"/run/user/1000", "", "inside /run"},
		{"/snap/core", "", "inside /snap"},
		{"/nix/store", "", "inside /nix"},
		{"/System/Library", "", "inside /System"},
		{"/Library/LaunchDaemons", "", "inside /Library"},
		{"/library/launchdaemons", "", "inside /Library"}, // case-insensitive APFS
		{"/Applications/Foo.app/Contents", "", "inside /Applications"},
		{"/lib64", "", "/lib64"},
		{"/sbin", "", "/sbin"},
		// Below system directories, where projects live.
		{"/usr/src/app", "", ""},
		{"/usr/local/src/project", "", ""},
		{"/usr/local/src", "", ""},
		{"/opt/myapp", "", ""},
		{"/srv/site", "", ""},
		{"/var/www/html", "", ""},
		{"/var/tmp/build", "", ""},
		{"/private/var/folders/xy/abc/T/proj", "", ""},
		{"/private/tmp/scratch", "", ""},
		{"/tmp/proj", "", ""},
		{"/workspace", "", ""},
		{"/testbed", "", ""},
		{"/etcetera/proj", "", ""},
		{"/usr-local/proj", "", ""},
		// Mount points.
		{"/mnt", "", "above /mnt/*"},
		{"/mnt/data", "", "/mnt/*"},
		{"/mnt/data/proj", "", ""},
		{"/media/dev/USB", "", "mount"},
		{"/media/dev/USB/proj", "", ""},
		{"/Volumes/External", "", "mount"},
		{"/Volumes", "", "above"},
		{"/Volumes/External/code/app", "", ""},
		// Windows under WSL.
		{"/mnt/c/Windows/System32", "", "inside /mnt/*/Windows"},
		{"/mnt/c/Program Files/App", "", "inside /mnt/*/Program Files"},
		{"/mnt/c/Users/dev", "", "home"},
		{"/mnt/c/Users", "", "above"},
		{"/mnt/c/Users/dev/AppData/Roaming", "", "inside ~/AppData"},
		{"/mnt/c/Users/dev/source/repos/app", "", ""},
		// Bin directories, wherever they are.
		{"/home/dev/bin", "", "~/bin"},
		{"/home/dev/bin/sub", "", "inside ~/bin"},
		{"/home/dev/go/bin", "", "~/go/bin"},
		{"/home/dev/go", "", "above ~/go/bin"},
		{"/home/dev/go/pkg/mod/x@v1", "", "inside ~/go/pkg"},
		{"/opt/conda/bin", "", "bin"},
		{"/opt/tool/sbin", "", "sbin"},
		{"/home/dev/proj/node_modules/.bin", "", ".bin"},
		{"/home/dev/proj/BIN", "", "bin"},
		{"/home/dev/proj/binaries", "", ""},
		{"/home/dev/proj/cmd/bin-tool", "", ""},
		// Home configuration directories, and any top-level dot-directory.
		{"/home/dev/.config", "", "~/.*"},
		{"/home/dev/.config/nvim", "", "inside ~/.*"},
		{"/home/dev/.local/bin", "", "inside ~/.*"},
		{"/home/dev/.local", "", "~/.*"},
		{"/home/dev/.ssh", "", "~/.*"},
		{"/home/dev/.aws", "", "~/.*"},
		{"/home/dev/.gnupg", "", "~/.*"},
		{"/home/dev/.kube", "", "~/.*"},
		{"/home/dev/.docker", "", "~/.*"},
		{"/home/dev/.cargo/bin", "", "inside ~/.*"},
		{"/home/dev/.npm-global/bin", "", "inside ~/.*"},
		{"/home/dev/.dotfiles", "", "~/.*"},
		{"/root/.config/app", "", "inside ~/.*"},
		{"/Users/alice/.zsh", "", "~/.*"},
		{"/Users/alice/.SSH", "", "~/.*"},
		{"/home/other/.config", "", "~/.*"},
		{"/home/dev/src/.hidden-proj", "", ""},
		{"/home/dev/proj/.config", "", ""},
		{"/home/dev/snap/code/common", "", "inside ~/snap"},
		// macOS Library and Applications; synced drives are projects.
		{"/Users/alice/Library", "", "~/Library"},
		{"/Users/alice/Library/LaunchAgents", "", "inside ~/Library"},
		{"/Users/alice/Applications/Tool.app", "", "inside ~/Applications"},
		{"/Users/alice/Library/CloudStorage", "", "inside ~/Library"},
		{"/Users/alice/Library/CloudStorage/Dropbox", "", "inside ~/Library"},
		{"/Users/alice/Library/CloudStorage/Dropbox/proj", "", ""},
		{"/Users/alice/Library/CloudStorage/Dropbox/proj/src", "", ""},
		{"/Users/alice/Library/Mobile Documents/com~apple~CloudDocs", "", "inside ~/Library"},
		{"/Users/alice/Library/Mobile Documents/com~apple~CloudDocs/site", "", ""},
		{"/Users/alice/Library/Mobile Documents/other.app/site", "", "inside ~/Library"},
		{"/Users/alice/Library/CloudStorage/Dropbox/proj/bin", "", "bin"},
	} {
		h := home
		if tc.home != "" {
			h = tc.home
		}
		got := BroadRoot(tc.dir, h)
		switch {
		case tc.want == "" && got != "":
			t.Errorf("BroadRoot(%q, %q) = %q, want not broad", tc.dir, h, got)
		case tc.want != "" && !strings.Contains(Fold(got), Fold(tc.want)):
			t.Errorf("BroadRoot(%q, %q) = %q, want a reason naming %q", tc.dir, h, got, tc.want)
		}
	}
}

// TestBroadRootHomes checks the answer does not depend on which home came
// before: the compiled home is cached.
func TestBroadRootHomes(t *testing.T) {
	for range 2 {
		for _, h := range []string{"/srv/a", "/srv/b", "", "/", "relative"} {
			for _, other := range []string{"/srv/a", "/srv/b"} {
				got := BroadRoot(other, h)
				if want := other == h; (got != "") != want {
					t.Errorf("BroadRoot(%q, %q) = %q, want broad %v", other, h, got, want)
				}
			}
		}
	}
}

// TestSystemDirsCompile checks every entry is absolute, clean and in
// supported glob syntax, and is refused itself.
func TestSystemDirsCompile(t *testing.T) {
	for _, list := range [][]string{SystemDirs, mountDirs, homeDirs} {
		for _, d := range list {
			p := strings.TrimSuffix(d, "/**")
			if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") || strings.HasSuffix(p, "/") {
				t.Errorf("entry %q is not an absolute, clean path", d)
			}
			for _, c := range splitPath(p) {
				if !GlobSupported(c) {
					t.Errorf("entry %q: component %q is unsupported glob syntax", d, c)
				}
			}
			dir := strings.ReplaceAll(p, "*", "x")
			if BroadRoot(dir, "") == "" {
				t.Errorf("BroadRoot(%q) is not broad, but %q lists it", dir, d)
			}
		}
	}
}

func BenchmarkBroadRoot(b *testing.B) {
	for b.Loop() {
		if BroadRoot("/home/dev/src/github.com/acme/project", "/home/dev") != "" {
			b.Fatal("broad")
		}
	}
}

// TestBroadRootMemo: remembered answers are the function's, for more
// directories than a memo generation holds, and the memo itself is tested in engine/memo.
func TestBroadRootMemo(t *testing.T) {
	dirs := []string{"/", "/etc", "/home/u", "/home/u/.config/x", "/home/u/src/app", "/usr/local/bin/x", "/work/app", "rel"}
	for i := range 3000 {
		dirs = append(dirs, fmt.Sprintf("/work/p%d/src", i), fmt.Sprintf("/home/u/.cache/p%d", i))
	}
	for round := range 2 {
		for _, d := range dirs {
			for _, home := range []string{"/home/u", ""} {
				if got, want := BroadRoot(d, home), broadRoot(d, home); got != want {
					t.Fatalf("round %d: BroadRoot(%q, %q) = %q, want %q", round, d, home, got, want)
				}
			}
		}
	}
}
