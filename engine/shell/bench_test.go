package shell

import "testing"

func BenchmarkAnalyze(b *testing.B) {
	for _, bm := range []struct{ name, line string }{
		{"short", "git status"},
		{"long", "find . -name '*.go' -type f -print0 | xargs -0 grep -n TODO | sort | uniq -c | head -50 && git log --oneline -5"},
		{"payload", "bash -c 'git diff --stat && cat README.md | head -20'"},
		{"rejected", "ls; rm -rf ~"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Analyze(bm.line)
			}
		})
	}
}

func BenchmarkAnalyzeParallel(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			Analyze("git log --oneline -20 | head")
		}
	})
}
