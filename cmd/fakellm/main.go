// Command fakellm runs the fake classifier LLM of package fakellm, which
// speaks OpenAI's Chat Completions and Responses APIs and Anthropic's
// Messages API, for demos and benchmarks of toolgate without network
// access.
//
//	fakellm --listen 127.0.0.1:8081 --latency 50ms --block-pattern 'rm -rf' \
//	    --fault-rate 0.1 --fault server_error --api-key sk-fake --seed 1
//
// It prints the OpenAI base URL ("http://127.0.0.1:8081/v1") on stdout (an
// Anthropic client takes it without the /v1), logs one line per request on
// stderr, and shuts down gracefully on SIGINT/SIGTERM.
// Every answer blocks when the user text matches --block-pattern and allows
// otherwise, naming --block-category or --allow-category when the request's
// schema asks for a category; --fault replaces the answer on a --fault-rate fraction of the
// requests, drawn from a generator seeded with --seed (so a run is
// reproducible for a given arrival order; 0 picks a random seed).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/fakellm"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8081", "address to listen on (host:port, port 0 for a free one)")
	latency := fs.Duration("latency", 0, "delay before every answer")
	pattern := fs.String("block-pattern", fakellm.BlockMarker, "block when the user text matches this regular expression")
	blockCategory := fs.String("block-category", "", "the policy category a block names (default: "+fakellm.DefaultBlockCategory+", which toolgate records as a block in no category)")
	allowCategory := fs.String("allow-category", "", "the policy category an allow names (default: "+fakellm.DefaultAllowCategory+" when the policy has it)")
	faultRate := fs.Float64("fault-rate", 0, "fraction of requests, in [0,1], answered with --fault")
	faultName := fs.String("fault", string(fakellm.FaultServerError), "fault injected by --fault-rate: "+faultList())
	retryAfter := fs.Duration("retry-after", 0, "Retry-After sent with rate_limit (0 means 1s) and server_error faults")
	apiKey := fs.String("api-key", "", `require "Authorization: Bearer KEY" ("x-api-key: KEY" for /v1/messages; empty: no check)`)
	seed := fs.Uint64("seed", 1, "seed of the fault draws (0: random)")
	shutdownTimeout := fs.Duration("shutdown-timeout", 5*time.Second, "how long requests in progress may take to finish on shutdown")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	re, err := regexp.Compile(*pattern)
	if err != nil {
		return fmt.Errorf("--block-pattern: %w", err)
	}
	if *faultRate < 0 || *faultRate > 1 {
		return fmt.Errorf("--fault-rate %v: want a number in [0,1]", *faultRate)
	}
	fault := fakellm.Fault(*faultName)
	if !slices.Contains(fakellm.Faults, fault) {
		return fmt.Errorf("--fault %q: want one of %s", *faultName, faultList())
	}
	if *seed == 0 {
		*seed = rand.Uint64()
	}

	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(*seed, *seed))
	handler := func(r *fakellm.Request) fakellm.Reply {
		reply := fakellm.Reply{
			Latency:    *latency,
			RetryAfter: *retryAfter,
			Thinking:   fmt.Sprintf("fakellm: user text checked against /%s/.", re),
			Reason:     fmt.Sprintf("fakellm: no match for /%s/", re),
			Category:   *allowCategory,
		}
		if loc := re.FindStringIndex(r.User); loc != nil {
			reply.Block, reply.Category = true, *blockCategory
			reply.Reason = fmt.Sprintf("fakellm: matched /%s/ (%q)", re, r.User[loc[0]:loc[1]])
		}
		if *faultRate > 0 {
			mu.Lock()
			hit := rng.Float64() < *faultRate
			mu.Unlock()
			if hit {
				reply.Fault = fault
			}
		}
		return reply
	}

	logger := log.New(stderr, "", log.LstdFlags|log.Lmicroseconds)
	opts := []fakellm.Option{fakellm.WithLogf(logger.Printf)}
	if *apiKey != "" {
		opts = append(opts, fakellm.WithAPIKey(*apiKey))
	}
	srv := fakellm.New(handler, opts...)
	if err := srv.Listen(*listen); err != nil {
		return err
	}
	fmt.Fprintln(stdout, srv.URL())
	logger.Printf("fakellm: serving %s, and %s for Anthropic clients (block-pattern /%s/, latency %s, fault %s at rate %v, seed %d)",
		srv.URL(), srv.AnthropicURL(), re, *latency, fault, *faultRate, *seed)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	stop()
	logger.Printf("fakellm: shutting down (%d requests served)", srv.Count())
	sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Printf("fakellm: stopped")
	return nil
}

func faultList() string {
	names := make([]string, len(fakellm.Faults))
	for i, f := range fakellm.Faults {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}
