package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/toolgate/toolgate", Version: "v0.0.0-20261127224726-7692b843dd43+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "7692b843dd43dbaf8fc3546540d0265f030a5dce"},
			{Key: "vcs.time", Value: "2026-11-27T22:47:26Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		o    Overrides
		want []string // lines the text starts with, in order
	}{
		{"git checkout", stamped, Overrides{}, []string{
			"v0.0.0-20261127224726-7692b843dd43+dirty",
			"revision: 7692b843dd43dbaf8fc3546540d0265f030a5dce (modified: built with uncommitted changes)",
			"commit time: 2026-11-27T22:47:26Z",
			"go: go1.26.8 ",
		}},
		{"go install of a version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, Overrides{}, []string{
			"v1.2.3",
			"revision: unknown (not recorded by this build)",
			"go: go1.26.8 ",
		}},
		{"devel without VCS", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, Overrides{}, []string{
			"dev",
			"revision: unknown",
		}},
		{"container build", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, Overrides{Version: "v1.0.0", Revision: "abc123"}, []string{
			"v1.0.0",
			"revision: abc123",
			"go: go1.26.8 ",
		}},
		{"no build info", nil, Overrides{}, []string{"dev", "revision: unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Split(From(tc.bi, tc.o).String(), "\n")
			if len(got) < len(tc.want) {
				t.Fatalf("got %q, want lines starting %q", got, tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("line %d: got %q, want it to start %q", i, got[i], w)
				}
			}
		})
	}
}
