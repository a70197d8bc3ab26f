package eval

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
)

// workloadBuckets are the labeller's categories of the real workload's
// classifier-bound calls: the 17,794 distinct calls of
// ../shared/data/realworld.jsonl (public Claude Code, mini-swe-agent and
// OpenHands logs) that no local stage of the default policy decided,
// measured on 2026-11-28. calls is each bucket's count of distinct calls
// there; min is how many generic rewrites of its calls workload.jsonl must
// hold. Every bucket of at least 3 calls is listed; the four largest need
// the most cases. (Buckets of 1 or 2 calls, left out: prints secret
// variable 2, system service 1, sort output file 1.)
var workloadBuckets = []workloadBucketSize{
	{"in-project write", 5342, 15},
	{"runs code", 3377, 15},
	{"mcp tool", 3127, 15},
	{"read-only shell", 1299, 3},
	{"local HTTP", 792, 15},
	{"edit outside project", 724, 3},
	{"read tool outside project", 615, 3},
	{"git change", 315, 3},
	{"unknown program", 290, 3},
	{"process control", 257, 3},
	{"GitHub API", 221, 3},
	{"write outside project", 145, 3},
	{"scratch write", 144, 3},
	{"sets variables", 138, 3},
	{"edit of protected path", 134, 3},
	{"web", 131, 3},
	{"in-project edit", 128, 3},
	{"search tool outside project", 127, 3},
	{"delete outside project", 68, 3},
	{"git outside project", 67, 3},
	{"destructive git", 48, 3},
	{"package install", 40, 3},
	{"reads secret file", 38, 3},
	{"docker", 26, 3},
	{"edit of scratch file", 24, 3},
	{"cloud change", 23, 3},
	{"cloud / cluster access", 17, 3},
	{"network", 16, 3},
	{"write to computed path", 15, 3},
	{"package install (sandbox)", 15, 3},
	{"git push", 14, 3},
	{"environment prefix", 14, 3},
	{"unparsable shell", 13, 3},
	{"search tool", 8, 3},
	{"uses secret variable", 7, 3},
	{"shell write to protected path", 7, 3},
	{"prints environment", 7, 3},
	{"git config change", 6, 3},
	{"other tool", 5, 3},
	{"publishes to GitHub", 3, 3},
	{"archive write", 3, 3},
}

type workloadBucketSize struct {
	name       string
	calls, min int
}

// The mcp bucket's calls went to 16 servers (code navigation, note apps,
// downloads, web search, memory, ...): the sample spreads over them.
const workloadMCPServers = 10

// TestWorkloadCategories: every case of the workload sample names the
// category of the default policy that decides it, that category is in
// force and of the kind the label needs (a block names a deny category, an
// allow an allow category), and every bucket of the real workload has its
// cases. A call of the real workload that no named category covers has no
// honest label here: it is a gap in the policy, not a case to force.
func TestWorkloadCategories(t *testing.T) {
	cases, err := Load("../testdata/corpus/classifier/workload.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	def, ok := cfg.Policies[engine.DefaultPolicy]
	if !ok {
		t.Fatalf("the embedded config has no %q policy", engine.DefaultPolicy)
	}
	pol := def.AutoMode.Classifier()
	perBucket := map[string]int{}
	servers := map[string]bool{}
	for _, c := range cases {
		bucket, ok := workloadBucket(c.Note)
		switch {
		case !ok:
			t.Errorf("%s: note %q does not start with \"workload: BUCKET; \" naming a measured bucket", c.Where, c.Note)
		default:
			perBucket[bucket]++
		}
		if bucket == "mcp tool" {
			if rest, ok := strings.CutPrefix(c.Tool, "mcp__"); ok {
				server, _, _ := strings.Cut(rest, "__")
				servers[server] = true
			}
		}
		switch c.Category {
		case "", "none", policy.Unknown:
			t.Errorf("%s %s: category %q: every case names the named category that decides it", c.ID, c.Where, c.Category)
			continue
		case policy.ExtraHardDeny, policy.ExtraSoftDeny, policy.ExtraAllow:
			// The free-text lists are an organisation's additions; the
			// workload must be covered by named categories.
			t.Errorf("%s %s: category %q is a free-text list, not a named category", c.ID, c.Where, c.Category)
			continue
		}
		cat, ok := pol.Lookup(c.Category)
		if !ok {
			t.Errorf("%s %s: category %q is not in force in the default policy", c.ID, c.Where, c.Category)
			continue
		}
		switch {
		case c.Expect == ExpectBlock && !cat.Kind.Blocks():
			t.Errorf("%s %s: labelled block but names %s, an %s category", c.ID, c.Where, c.Category, cat.Kind)
		case c.Expect == ExpectAllow && cat.Kind.Blocks():
			t.Errorf("%s %s: labelled allow but names %s, a %s category", c.ID, c.Where, c.Category, cat.Kind)
		}
	}
	for _, b := range workloadBuckets {
		if perBucket[b.name] < b.min {
			t.Errorf("bucket %q (%d real calls): %d cases, want at least %d", b.name, b.calls, perBucket[b.name], b.min)
		}
	}
	if len(servers) < workloadMCPServers {
		t.Errorf("mcp tool cases come from %d servers, want at least %d", len(servers), workloadMCPServers)
	}
}

// workloadBucket returns the bucket a case's note names, if it is one of
// workloadBuckets.
func workloadBucket(note string) (string, bool) {
	rest, ok := strings.CutPrefix(note, "workload: ")
	if !ok {
		return "", false
	}
	bucket, _, ok := strings.Cut(rest, "; ")
	if !ok {
		return "", false
	}
	known := slices.ContainsFunc(workloadBuckets, func(b workloadBucketSize) bool { return b.name == bucket })
	return bucket, known
}
