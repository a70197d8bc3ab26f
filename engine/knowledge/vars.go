package knowledge

import "strings"

// harmlessVars are environment and shell variables whose values are safe to
// print into an agent's transcript: locations, locale, terminal and
// toolchain settings, shell bookkeeping. Anything else may hold a secret
// under a name nobody listed (*_PASS, *_URL with a password, *WEBHOOK*),
// so printing it is not local. Proxy and registry URLs are left out on
// purpose: they carry credentials in their user info.
var harmlessVars = map[string]bool{
	"HOME": true, "PWD": true, "OLDPWD": true, "PATH": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TERM": true, "COLORTERM": true, "TZ": true, "HOSTNAME": true, "HOSTTYPE": true,
	"OSTYPE": true, "MACHTYPE": true, "UID": true, "EUID": true, "PPID": true, "SHLVL": true, "TMPDIR": true,
	"EDITOR": true, "VISUAL": true, "COLUMNS": true, "LINES": true, "IFS": true, "RANDOM": true, "LINENO": true,
	"SECONDS": true, "BASH": true, "BASH_VERSION": true, "BASHPID": true, "BASH_SOURCE": true, "FUNCNAME": true,
	"PIPESTATUS": true, "GROUPS": true, "DIRSTACK": true, "REPLY": true, "OPTIND": true, "OPTARG": true,
	"GOPATH": true, "GOROOT": true, "GOOS": true, "GOARCH": true, "GOBIN": true, "GOCACHE": true, "GOMODCACHE": true,
	"GOVERSION": true, "GOTOOLCHAIN": true, "CGO_ENABLED": true, "CARGO_HOME": true, "RUSTUP_HOME": true,
	"JAVA_HOME": true, "NODE_ENV": true, "VIRTUAL_ENV": true, "CONDA_PREFIX": true, "CONDA_DEFAULT_ENV": true,
	"PYTHONPATH": true, "PYENV_ROOT": true, "NVM_DIR": true, "XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true,
	"XDG_CACHE_HOME": true, "XDG_STATE_HOME": true, "XDG_RUNTIME_DIR": true, "CI": true, "DISPLAY": true,
	"NO_COLOR": true, "CLICOLOR": true,
}

// HarmlessVar reports whether printing the variable name is harmless: a
// listed name, a locale variable (LC_*), or one of the shell's special
// parameters ($?, $#, $1, $@ ...).
func HarmlessVar(name string) bool {
	if harmlessVars[name] || strings.HasPrefix(name, "LC_") && !strings.ContainsAny(name[3:], "abcdefghijklmnopqrstuvwxyz") {
		return true
	}
	switch name {
	case "?", "#", "$", "!", "@", "*", "-", "_", "0":
		return true
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return name != ""
}
