package resilience

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/toolgate/toolgate/bench/inproc"
	"github.com/toolgate/toolgate/bench/workload"
	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// long scales the loads up. CI runs the short form, which already goes
// several times past every bound under test; the long form is for hunting
// slow leaks and rare interleavings before a release, and takes minutes.
var long = flag.Bool("long", false, "run the resilience tests with several times more load")

// scale is n, or n times 5 with -long.
func scale(n int) int {
	if *long {
		return n * 5
	}
	return n
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(cleanupM{m},
		// The audit log's rotation goroutine is global to lumberjack.
		goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"),
	)
}

// cleanupM removes the toolgate binary the tests built, and stops the
// PostgreSQL cluster they started, once they ran.
type cleanupM struct{ m *testing.M }

func (c cleanupM) Run() int {
	defer removeSharedToolgate()
	defer stopPostgres()
	return c.m.Run()
}

// fake is the fake model behind an HTTP server that holds each request
// for latency and counts the requests held, to check the pool's bound from
// the outside. A request leaves the count before its answer is written,
// so a client's next request can never be counted with it.
type fake struct {
	*fakellm.Server
	url string

	mu             sync.Mutex
	latency        time.Duration
	active, maxAct int
}

func startFake(t *testing.T, h fakellm.Handler, latency time.Duration) *fake {
	t.Helper()
	f := &fake{Server: fakellm.New(h), latency: latency}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.active++
		f.maxAct = max(f.maxAct, f.active)
		d := f.latency
		f.mu.Unlock()
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
		f.Server.ServeHTTP(w, r)
	}))
	f.url = ts.URL + "/v1"
	t.Cleanup(func() {
		// Close the fake first: it releases requests that hang.
		_ = f.Server.Close()
		ts.Close()
	})
	return f
}

// inFlight is the number of requests the fake holds now.
func (f *fake) inFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.active
}

func (f *fake) maxActive() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxAct
}

// stack starts toolgate in process, with the fake model behind it when f
// is not nil, and a client; both are stopped when the test ends.
func stack(t *testing.T, f *fake, cls func(*classifier.Config)) (*inproc.Stack, pb.PermissionServiceClient) {
	t.Helper()
	opts := inproc.Options{Classifier: cls}
	if f != nil {
		opts.ClassifierURL = f.url
	}
	st, err := inproc.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	conn, client, err := inproc.Dial(st.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		if err := st.Stop(); err != nil {
			t.Errorf("stopping toolgate: %v", err)
		}
	})
	if err := inproc.WaitReady(t.Context(), client, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	return st, client
}

// project makes the workload's project directory.
func project(t *testing.T) string {
	t.Helper()
	p, err := workload.NewProject(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// answer is one unary call's outcome.
type answer struct {
	resp *pb.CheckResponse
	err  error
}

// callAll makes each call from its own goroutine, all at once, and
// returns the outcomes in order. Each call has a deadline far beyond what
// any answer should take, so a hang fails the test instead of stalling it.
func callAll(ctx context.Context, client pb.PermissionServiceClient, reqs []*pb.CheckRequest, opts ...grpc.CallOption) []answer {
	out := make([]answer, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			resp, err := client.Check(cctx, r, opts...)
			out[i] = answer{resp, err}
		})
	}
	wg.Wait()
	return out
}
