package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/approvals/store"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// TestRecordSink: shipped records land in the store with their fields,
// the enums as words; what exceeds the store's bounds is cut (a batch is
// stored whole or not at all: one long reason must not cost it), and a
// resent id is stored once.
func TestRecordSink(t *testing.T) {
	st, err := store.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "a.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sink := recordSink(st)
	recs := []*pb.DecisionRecord{
		{Id: "r1", TimeUnixMicros: 1_700_000_000_000_000, Host: "ci-1", Project: "/w", SessionId: "s", Tool: "Bash",
			Decision: pb.Decision_DECISION_ASK, Source: pb.DecisionSource_DECISION_SOURCE_NO_CLASSIFIER, Reason: "why"},
		{Id: "r2", TimeUnixMicros: 1_700_000_000_000_001, Tool: strings.Repeat("t", 2*store.MaxFieldBytes), Reason: strings.Repeat("é", store.MaxReasonBytes) + "\xff"},
	}
	if n, err := sink(t.Context(), recs); err != nil || n != 2 {
		t.Fatalf("sink: %d, %v", n, err)
	}
	if n, err := sink(t.Context(), recs[:1]); err != nil || n != 0 {
		t.Fatalf("resent: %d new, %v", n, err)
	}
	got, err := st.QueryRecords(t.Context(), store.RecordFilter{Session: "s"})
	if err != nil || len(got) != 1 {
		t.Fatalf("query: %v, %v", got, err)
	}
	if r := got[0]; r.ID != "r1" || r.Host != "ci-1" || r.Project != "/w" || r.Tool != "Bash" || r.Decision != "ask" || r.Source != "no_classifier" || r.Reason != "why" || len(r.Data) == 0 {
		t.Errorf("stored %+v", r)
	}
	got, err = st.QueryRecords(t.Context(), store.RecordFilter{})
	if err != nil || len(got) != 2 {
		t.Fatalf("query all: %v, %v", got, err)
	}
	for _, r := range got {
		if r.ID == "r2" && (len(r.Tool) != store.MaxFieldBytes || len(r.Reason) > store.MaxReasonBytes) {
			t.Errorf("long fields kept at %d and %d bytes", len(r.Tool), len(r.Reason))
		}
	}
}
