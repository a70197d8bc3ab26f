package bench

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/bench/workload"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
)

// BenchmarkEngine measures the engine alone on each call of the local mix,
// as the server runs it: the embedded default policy (every deny rule a
// user gets), a home directory, and a fresh goroutine per check, so stack
// growth is paid as an RPC without a warm worker pays it.
func BenchmarkEngine(b *testing.B) {
	cfg, err := config.Default()
	if err != nil {
		b.Fatal(err)
	}
	eng, _, err := cfg.NewEngine(config.Runtime{Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	project, err := workload.NewProject(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range workload.Local(project) {
		req := &engine.Request{
			Tool:             engine.ToolCall{Name: c.Req.GetTool().GetName(), Input: c.Req.GetTool().GetInput().AsMap()},
			WorkingDirectory: project,
			Mode:             engine.ModeAuto,
		}
		b.Run(c.Name, func(b *testing.B) {
			check := func() (engine.Result, error) {
				type out struct {
					res engine.Result
					err error
				}
				done := make(chan out, 1)
				go func() {
					res, err := eng.Check(b.Context(), req)
					done <- out{res, err}
				}()
				o := <-done
				return o.res, o.err
			}
			// Measure the path named, not a cheaper one it fell off.
			if res, err := check(); err != nil || res.Decision != engine.Allow || res.Source.String() != sourceName(c) {
				b.Fatalf("decided %v by %v (%s), %v; want allow by %s", res.Decision, res.Source, res.Reason, err, sourceName(c))
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := check(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// sourceName is the engine's name of the stage the call must be decided by.
func sourceName(c workload.Call) string {
	return strings.ToLower(strings.TrimPrefix(c.Source.String(), "DECISION_SOURCE_"))
}
