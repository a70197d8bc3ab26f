package app

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// unixListener is a Unix socket the server listens on, with the identity
// of the file it bound, so that closing removes that file and no other.
type unixListener struct {
	net.Listener
	path     string
	dev, ino uint64
}

// listenUnix binds a Unix socket at path with mode; errors name the
// config field. The mode is set on the
// socket before bind, so the file is made with it (Linux takes a socket
// file's mode from the socket, less the umask): no client connects in a
// window before a chmod. A socket already at path is removed only when no
// server answers on it (one left by a server that died); anything else
// there is an error, never removed.
func listenUnix(field, path string, mode fs.FileMode) (*unixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s: %s exists and is not a socket; toolgate removes only a socket no server answers on", field, path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s: %s: a server is listening there", field, path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("%s: removing the stale socket: %w", field, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer func() { _ = f.Close() }() // FileListener holds a copy
	if err := unix.Fchmod(fd, uint32(mode.Perm())); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", field, path, err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	l, err := net.FileListener(f)
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return &unixListener{Listener: l, path: path, dev: uint64(st.Dev), ino: st.Ino}, nil
}

// Close closes the listener and removes its socket file if the path still
// names the one it bound.
func (l *unixListener) Close() error {
	err := l.Listener.Close()
	var st syscall.Stat_t
	if syscall.Lstat(l.path, &st) == nil && uint64(st.Dev) == l.dev && st.Ino == l.ino {
		_ = os.Remove(l.path)
	}
	return err
}
