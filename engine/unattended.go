package engine

import (
	"context"
	"fmt"
)

// UnattendedStep is the name of the step that follows every stage for an
// unattended check, as explain shows it.
const UnattendedStep = "unattended"

// unattended is a check's last step, after every stage, the classifier and
// the file-system deadline: when nobody is at the agent's terminal
// (Request.Unattended), an Ask nobody could answer becomes the policy's
// unattended.on_ask, Deny unless it says ask. Every source of an Ask is
// turned alike (a rule's, a mode's, no classifier, a failing one set to
// ask, the file system): a Deny is never less safe than an Ask, and no
// Ask is kept for safety's sake. It changes only an Ask: into a Deny, or,
// when the policy queues the question (on_ask: approve), into what an
// approver answered; nothing else it does can allow.
// The source stays the stage that asked, so that clients and metrics see
// who asked; the reason says nobody could answer, and who asked.
// step is the trace's record of it.
func (e *Engine) unattended(ctx context.Context, p *policy, req *Request, res Result, traced bool) (_ Result, step StageTrace, err error) {
	step = StageTrace{Name: UnattendedStep, Verdict: StagePassed}
	if !req.Unattended {
		return res, step, nil
	}
	if res.Decision != Ask {
		step.Why = fmt.Sprintf("the call was not asked about (%s): only an ask changes", res.Decision)
		return res, step, nil
	}
	// Named as the API names it: the source, or the rule.
	asker := "source " + res.Source.String()
	if res.MatchedRule != "" {
		asker = "rule " + res.MatchedRule
	}
	if p.queuesForApproval(req, res) {
		if traced {
			// explain is a dry run: it queues nothing and waits for no one.
			step.Why = fmt.Sprintf("policy %s queues this question for an approver (unattended.on_ask: approve), for at most %s, then %s; explain queues nothing", p.name, p.approval.Timeout, p.approval.OnTimeout)
			return res, step, nil
		}
		if res, err = e.approve(ctx, p, req, res); err != nil {
			return Result{}, step, err
		}
		step.Verdict, step.Decision, step.Why = StageDecided, res.Decision.String(), res.Reason
		return res, step, nil
	}
	if p.unattendedOnAsk != Deny {
		res.Reason += fmt.Sprintf(" (the check is unattended; policy %s leaves the question to the client, see unattended.on_ask)", p.name)
		step.Why = fmt.Sprintf("policy %s leaves an unattended question to the client (unattended.on_ask: ask)", p.name)
		return res, step, nil
	}
	res.Decision = Deny
	if p.approval != nil {
		res.Reason = fmt.Sprintf("denied because nobody can answer: the check is unattended and policy %s queues for an approver only the questions of unattended.approve_sources, which %s is not; asked by %s: %s",
			p.name, res.Source, asker, res.Reason)
		step.Verdict, step.Decision, step.Why = StageDecided, Deny.String(), res.Reason
		return res, step, nil
	}
	res.Reason = fmt.Sprintf("denied because nobody can answer: the check is unattended and policy %s denies what would be asked (unattended.on_ask: deny); asked by %s: %s",
		p.name, asker, res.Reason)
	step.Verdict, step.Decision, step.Why = StageDecided, Deny.String(), res.Reason
	return res, step, nil
}
