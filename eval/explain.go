package eval

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/engine"
)

// Explain decides each case as Run does (in its fixture's project, as an
// in-process caller) with eng.Explain, and hands f the request, the
// result and the trace while the fixture still exists. It stops at the
// first error, f's included.
func Explain(ctx context.Context, eng *engine.Engine, cases []Case, f func(c Case, req *engine.Request, res engine.Result, tr *engine.Trace) error) error {
	fx, err := buildFixtures(ctx, cases)
	defer fx.remove()
	if err != nil {
		return err
	}
	for _, c := range cases {
		req := request(fx.apply(c))
		res, tr, err := eng.Explain(ctx, req)
		if err != nil {
			return fmt.Errorf("%s (%s): %w", c.Where, c.ID, err)
		}
		if err := f(c, req, res, tr); err != nil {
			return err
		}
	}
	return nil
}

// Judge compares a decision with the case's label, as a run does.
func Judge(c Case, res engine.Result) Outcome { return judge(c, res) }
