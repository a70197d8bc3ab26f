package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// shutdownTimeout is how long requests in flight get when the page stops.
const shutdownTimeout = 5 * time.Second

// Listen opens cfg.Listen, over TLS when cfg names a certificate (loaded
// now, so that a bad file fails at start).
func Listen(cfg Config) (net.Listener, error) {
	if cfg.Listen == "" {
		return nil, errors.New("approvals.web.listen: empty (no page is configured)")
	}
	var conf *tls.Config
	if cfg.TLSEnabled() {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("approvals.web.tls_cert_file: %w", err)
		}
		conf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	}
	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("approvals.web.listen: %w", err)
	}
	if conf != nil {
		lis = tls.NewListener(lis, conf)
	}
	return lis, nil
}

// Serve serves h on lis until ctx ends, then gives requests in flight
// shutdownTimeout to finish. Every phase of a request is bounded, so a
// client that sends slowly holds nothing long; New bounds the bodies.
func Serve(ctx context.Context, lis net.Listener, h http.Handler, log *zap.Logger) error {
	if log == nil {
		log = zap.NewNop()
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          stdlog.New(throttledWriter{t: newThrottle(time.Now), log: log.Named("approvals_web")}, "", 0),
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
		}
	}()
	err := srv.Serve(lis)
	close(done)
	<-stopped
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
