package pathcheck

import "errors"

// A check whose paths name files on another machine (a client the server
// cannot show shares its disk) may prove nothing from this machine's disk:
// what a look would find here says nothing about the agent's files. Its
// Proofs are made blind, and every look of the check, through its Proofs or
// their Look, fails with an *UnseenError before any system call. Callers
// treat it as any failed look: nothing is proven. It is not a "does not
// exist", which some proofs take as an answer.

// UnseenError is the refusal of every look of a check whose files this
// server does not see.
type UnseenError struct {
	// Why the server cannot see the agent's files.
	Why string
}

func (e *UnseenError) Error() string { return UnseenPrefix + e.Why }

// UnseenPrefix begins every UnseenError's text.
const UnseenPrefix = "the agent's files are not visible to this server: "

// IsUnseen reports whether err is a look refused because the check's files
// are not visible to this server.
func IsUnseen(err error) bool {
	var ue *UnseenError
	return errors.As(err, &ue)
}

// Blind makes every later look of these proofs fail with an *UnseenError
// saying why. What was proven before stays unused: a blind check proves
// nothing.
func (pr *Proofs) Blind(why string) {
	pr.unseen = &UnseenError{Why: why}
	pr.seen = nil
	pr.look = &Look{pr: pr, unseen: pr.unseen}
}

// Gate defers a decision about what the check may see to its first look:
// gate runs once, before that look, with the proofs ready for its own
// looks. A non-empty blind blinds them (Blind) for that look and every
// later one; otherwise non-nil roots confine them (Confine) with why. A
// check that never looks at the disk never pays for it.
func (pr *Proofs) Gate(gate func(*Proofs) (blind string, roots []string, why string)) {
	pr.gate = gate
}

// Blinded is the refusal every look of these proofs gets, or nil.
func (pr *Proofs) Blinded() *UnseenError {
	if pr == nil {
		return nil
	}
	return pr.unseen
}
