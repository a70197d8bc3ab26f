package engine

import "context"

// Classifier decides the calls no local stage could. The LLM side-query
// implements it; the engine owns the interface so that it imports nothing.
type Classifier interface {
	Classify(ctx context.Context, in *ClassifyInput) (Verdict, error)
}

// ClassifyInput is what the classifier sees of a check.
type ClassifyInput struct {
	Request *Request
	Kind    Kind
	// Policy is the name of the policy in force.
	Policy string
	// Notes say why the local stages did not decide ("edit target outside
	// the project", "protected path .git/").
	Notes []string
	// PolicyVersion is the content hash of the policy set in force
	// ("sha256:..."; empty when unknown), for an upstream's records.
	PolicyVersion string
}

// Verdict is the classifier's answer. Its zero value is not an answer:
// a verdict without a decision fails closed.
type Verdict struct {
	// Decision is Allow, Deny or Ask (for example after too many blocks
	// in one session, to bring a human in).
	Decision Decision
	Reason   string
	// Cached marks a verdict served from the classifier's cache.
	Cached bool
	// Details describe the side-query, for logs and the response.
	Details *ClassifierDetails
	// Source is who decided, when another toolgate relays an answer:
	// SourceNoClassifier for a centre without a classifier (its decision
	// must then be Ask). Zero means SourceClassifier, or SourceCache when
	// Cached; any other value fails closed.
	Source Source
}

// ClassifierDetails describe how a classification was made.
type ClassifierDetails struct {
	Backend      string
	Model        string
	Stage        string // "single", "fast" (stage 1 only), "full" (stage 2 ran)
	LatencyMicro int64
	InputTokens  int64
	OutputTokens int64
	// CachedInputTokens are those of InputTokens the provider read from
	// its prompt cache (billed at a lower rate).
	CachedInputTokens int64
	Cached            bool
	// Category is the policy's category the model named: every verdict
	// names one ("unknown" for a block that named none of the policy's).
	Category string
	// CategoryKind is its kind: hard_deny, soft_deny or allow; empty for
	// an unknown category.
	CategoryKind string
}

// ClassifierError is returned by a Classifier that ran but failed; Details
// say what was tried. Any error fails closed.
type ClassifierError struct {
	Err error
	// Reason is the failure in words fit to show the agent (sanitised and
	// capped); Err keeps the full chain for logs and errors.Is.
	Reason  string
	Details *ClassifierDetails
	// Source is the failed decision's source: zero means
	// SourceClassifierUnavailable; an upstream toolgate's classifier
	// reports SourceUpstreamUnavailable when the upstream could not be
	// asked.
	Source Source
}

func (e *ClassifierError) Error() string { return e.Err.Error() }
func (e *ClassifierError) Unwrap() error { return e.Err }
