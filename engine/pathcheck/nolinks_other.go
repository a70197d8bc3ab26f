//go:build !linux

package pathcheck

// linkFree has no kernel proof to offer here: every path takes the
// component walk.
func linkFree(*mountTable, string, bool) (string, bool) { return "", false }
