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
}

// Verdict is the classifier's answer.
type Verdict struct {
	Block  bool
	Reason string
	// Cached marks a verdict served from the classifier's cache.
	Cached bool
}
