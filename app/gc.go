package app

import "runtime/debug"

// The collector's settings for a serving process (toolgate serve, and the
// benchmarks' in-process server, so they measure the same), unless GOGC or
// GOMEMLIMIT set them. A check allocates several KB and keeps none of it,
// while the live heap is a few MB: at Go's default goal (twice the live
// heap) the collector runs some 70 times a second under load and costs a
// tenth of a check's CPU. A goal five times the live heap, with a soft
// limit on the whole heap well under the deployment manifest's 512Mi,
// keeps memory bounded while collecting far less often.
const (
	serveGCPercent   = 400
	serveMemoryLimit = 192 << 20
)

// TuneGC applies those settings where the environment is silent.
func TuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}
