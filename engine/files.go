package engine

import (
	"fmt"
	"syscall"

	"github.com/toolgate/toolgate/engine/pathcheck"
	"github.com/toolgate/toolgate/internal/attest"
)

// Files says whose files a request's paths name. Every proof the engine
// makes from the disk (links resolved, reads placed, trees walked, globs
// expanded, git's repository found) is about the disk of the machine the
// engine runs on; it holds for the agent's files only when the agent sees
// the same ones. The zero value is an in-process caller (eval, tests, a
// one-shot command): its files are this process's. A server sets Remote on
// every request it receives.
type Files struct {
	// Remote: the request came from another process, whose files are its
	// own until shown to be this server's.
	Remote bool
	// LocalPeer: that process is on this machine (a loopback or Unix-socket
	// connection, as the server's configuration lets it count).
	LocalPeer bool
	// Attestation is where the client says it stands; nil when it sent
	// none.
	Attestation *Attestation
}

// Attestation is a client's view of the agent's machine: the kernel it
// runs on and the working directory it sees.
type Attestation struct {
	BootID   string
	Dev, Ino uint64
	// MountNS, RootDev and RootIno place the client's whole view: its
	// mount namespace and root directory. Zero when not sent.
	MountNS, RootDev, RootIno uint64
}

// filesView says how much of the disk this server sees as the caller does.
// All of it (blind "", roots nil): an in-process caller; a client whose
// attestation matches this kernel, its mount namespace and root, and the
// working directory this server finds at the same path (device and
// inode); or, without an attestation, a peer on this machine whose
// working directory exists here. Only the working directory (roots, with
// why): a client that matches the kernel and the directory but not the
// namespace or root, as a container beside the server or a sidecar on
// the agent's volume does: the files below it are the same, the rest
// (its home, /etc, a link's target elsewhere) its own. Nothing (blind
// says why): anyone else. The working directory is looked up through pr,
// the check's proofs, so that a foreign or hanging mount is refused as
// for any look.
func filesView(req *Request, pr *pathcheck.Proofs) (blind string, roots []string, why string) {
	f := req.Files
	if !f.Remote {
		return "", nil, ""
	}
	a := f.Attestation
	if a == nil && !f.LocalPeer {
		return "the client sent no attestation of where it runs, and it is not on this server's machine", nil, ""
	}
	if a != nil {
		if own := attest.BootID(); own == "" || a.BootID != own {
			// This server's boot id is not told: it is half of an
			// attestation a caller could forge.
			return fmt.Sprintf("the client runs on another machine (boot id %q)", truncate(a.BootID, 64)), nil, ""
		}
	}
	wd := req.WorkingDirectory
	if wd == "" {
		return "the request names no working directory to compare", nil, ""
	}
	fi, resolved, err := pr.Look().Stat(wd)
	if err != nil {
		return fmt.Sprintf("the working directory %s cannot be looked at here: %v", truncate(wd, 200), truncate(err.Error(), 200)), nil, ""
	}
	if !fi.IsDir() {
		return fmt.Sprintf("the working directory %s is not a directory here", truncate(wd, 200)), nil, ""
	}
	if a == nil {
		return "", nil, ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || uint64(st.Dev) != a.Dev || uint64(st.Ino) != a.Ino {
		return fmt.Sprintf("this server sees another directory at %s than the client does", truncate(wd, 200)), nil, ""
	}
	if v := attest.View(); v == ([3]uint64{}) || v != [3]uint64{a.MountNS, a.RootDev, a.RootIno} {
		if resolved == "/" {
			// Confined to / is not confined: another namespace's mounts
			// anywhere below are not this server's.
			return "the client runs in another mount namespace or under another root, from /", nil, ""
		}
		return "", []string{resolved}, "the client runs in another mount namespace or under another root, where only the working directory is the same"
	}
	return "", nil, ""
}
