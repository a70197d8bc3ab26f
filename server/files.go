package server

import (
	"context"
	"net"

	"google.golang.org/grpc/peer"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// filesOf says whose files a check's paths name, for the engine: always a
// remote caller, with its attestation, and whether its connection comes
// from this machine (loopback or a Unix socket) when the configuration
// lets such a peer count as sharing the server's disk.
func (s *Service) filesOf(ctx context.Context, req *pb.CheckRequest) engine.Files {
	f := engine.Files{Remote: true}
	if a := req.GetAttestation(); a != nil {
		f.Attestation = &engine.Attestation{BootID: a.GetBootId(), Dev: a.GetWorkingDirectoryDevice(), Ino: a.GetWorkingDirectoryInode(),
			MountNS: a.GetMountNamespace(), RootDev: a.GetRootDevice(), RootIno: a.GetRootInode()}
	}
	if s.cfg.UnattestedFiles == UnattestedLocalPeers {
		f.LocalPeer = localPeer(ctx)
	}
	return f
}

// localPeer reports whether the call came over a connection from this
// machine: a Unix socket, or TCP from a loopback address.
func localPeer(ctx context.Context) bool {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return false
	}
	switch a := p.Addr.(type) {
	case *net.UnixAddr:
		return true
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	}
	return false
}
