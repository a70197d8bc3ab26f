package app

import (
	"net"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/server"
)

// listenHook binds the hook listeners of server.hook (agents' hooks over
// HTTP), closed after the server that serves them.
func (a *App) listenHook(c server.Config) error {
	var err error
	if c.Hook.Listen != "" {
		if a.hookLis, err = net.Listen("tcp", c.Hook.Listen); err != nil {
			return err
		}
		a.onClose("hook listener", func() { _ = a.hookLis.Close() })
	}
	if c.Hook.UnixSocket != "" {
		mode, err := c.SocketMode()
		if err != nil {
			return err
		}
		if a.hookUnix, err = listenUnix("server.hook.unix_socket", c.Hook.UnixSocket, mode); err != nil {
			return err
		}
		a.onClose("hook unix socket", func() { _ = a.hookUnix.Close() })
	}
	return nil
}

// serveHook serves the hook listeners; done takes the first to fail.
func (a *App) serveHook(done func(error)) {
	serve := func(l net.Listener) {
		if err := a.srv.ServeHook(l); err != nil {
			done(err)
		}
	}
	if a.hookLis != nil {
		a.log.Info("serving hooks over HTTP", zap.String("addr", a.hookLis.Addr().String()))
		go serve(a.hookLis)
	}
	if a.hookUnix != nil {
		a.log.Info("serving hooks over HTTP on a unix socket", zap.String("path", a.hookUnix.path))
		go serve(a.hookUnix)
	}
}

// HookAddr is the hook listener's TCP address; nil without one.
func (a *App) HookAddr() net.Addr {
	if a.hookLis == nil {
		return nil
	}
	return a.hookLis.Addr()
}
