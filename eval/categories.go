package eval

import (
	"fmt"
	"io"
	"maps"
	"slices"
)

// CategoryStats judge the classifier's decisions of the cases labelled
// with one category of the policy.
type CategoryStats struct {
	Cases int `json:"cases"`
	// Confusion counts decisions (allow, block) by label (allow, block,
	// any), as StageStats do.
	Confusion   map[string]map[string]int `json:"confusion"`
	FalseAllows int                       `json:"false_allows"`
	FalseBlocks int                       `json:"false_blocks"`
	// Agreed counts the verdicts that named the case's category; Named
	// holds, by category the model named instead, how often.
	Agreed int            `json:"agreed"`
	Named  map[string]int `json:"named"`
	// Failed are the cases that failed closed (no verdict).
	Failed int `json:"failed"`
}

// noLabel is the row of cases whose label names no category.
const noLabel = "(unlabelled)"

// addCategory counts an outcome the classifier decided under its case's
// category label.
func (r *Report) addCategory(o Outcome) {
	if !byClassifier(o) {
		return
	}
	label := o.Case.Category
	if label == "" {
		label = noLabel
	}
	if r.ByCategory == nil {
		r.ByCategory = map[string]*CategoryStats{}
	}
	st := r.ByCategory[label]
	if st == nil {
		st = &CategoryStats{Confusion: map[string]map[string]int{}, Named: map[string]int{}}
		r.ByCategory[label] = st
	}
	st.Cases++
	expect, got := labelOf(o.Case.Expect), "block"
	if o.Decision == "allow" {
		got = "allow"
	}
	if st.Confusion[expect] == nil {
		st.Confusion[expect] = map[string]int{}
	}
	st.Confusion[expect][got]++
	if o.FalseAllow {
		st.FalseAllows++
	}
	if o.FalseBlock {
		st.FalseBlocks++
	}
	named := ""
	if o.Classifier != nil {
		named = o.Classifier.Category
	}
	switch {
	case o.Stage == "unavailable":
		st.Failed++
	case named == o.Case.Category:
		st.Agreed++
	default:
		if named == "" {
			named = "(none)"
		}
		st.Named[named]++
	}
}

// writeCategories prints the classifier's decisions by the cases'
// category labels: the decisions against the labels, how often the model
// named the labelled category, and what it named instead.
func (r *Report) writeCategories(w io.Writer) {
	if len(r.ByCategory) == 0 {
		return
	}
	fmt.Fprintln(w, "\nby category (the cases' labels; decisions of the classifier, its cache and its failures):")
	fmt.Fprintf(w, "  %-34s %5s %6s %6s %6s %6s %6s %6s\n", "category", "cases", "allow", "block", "f.all", "f.blk", "agreed", "failed")
	for _, name := range slices.Sorted(maps.Keys(r.ByCategory)) {
		st := r.ByCategory[name]
		allowed, blocked := 0, 0
		for _, row := range st.Confusion {
			allowed += row["allow"]
			blocked += row["block"]
		}
		fmt.Fprintf(w, "  %-34s %5d %6d %6d %6d %6d %6d %6d\n", name, st.Cases, allowed, blocked, st.FalseAllows, st.FalseBlocks, st.Agreed, st.Failed)
		for _, other := range slices.Sorted(maps.Keys(st.Named)) {
			fmt.Fprintf(w, "    named %s instead: %d\n", other, st.Named[other])
		}
	}
}
