package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/bench/inproc"
	toolgate "github.com/toolgate/toolgate/server"
)

// serveInproc serves toolgate inside this process (bench/inproc's wiring,
// logging to stdout like toolgate serve) with a CPU profile running, until
// SIGTERM; then it writes a heap profile. Profile mode drives it with the
// same loads as the real binary.
func serveInproc(args []string) error {
	fs := flag.NewFlagSet("serve-inproc", flag.ContinueOnError)
	cpu := fs.String("cpuprofile", "", "write a CPU profile here")
	heap := fs.String("heapprofile", "", "write a heap profile here on exit")
	workers := fs.Int("stream-workers", -1, "server.stream_workers (0: a goroutine per RPC; -1 keeps the default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	app.TuneGC(os.Getenv) // the collector of toolgate serve
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	opts := inproc.Options{Log: os.Stdout}
	if *workers >= 0 {
		opts.Server = func(c *toolgate.Config) { c.StreamWorkers = uint32(*workers) }
	}
	st, err := inproc.Start(opts)
	if err != nil {
		return err
	}
	// The line the harness waits for, as toolgate serve writes it.
	line, _ := json.Marshal(map[string]string{"level": "info", "msg": "serving", "addr": st.Addr})
	fmt.Println(string(line))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	if err := st.Stop(); err != nil {
		return err
	}
	if *heap != "" {
		f, err := os.Create(*heap)
		if err != nil {
			return err
		}
		defer f.Close()
		runtime.GC()
		return pprof.Lookup("allocs").WriteTo(f, 0)
	}
	return nil
}
