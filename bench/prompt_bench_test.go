package bench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/engine"
)

// BenchmarkPrompt measures building the classifier's side-query (the user
// message with the action, context and compressed transcript, under the
// default policy's system prompt built once) and hashing it for the
// cache: the work toolgate adds before the model is called.
func BenchmarkPrompt(b *testing.B) {
	cfg, err := app.LoadConfig("")
	if err != nil {
		b.Fatal(err)
	}
	rules := cfg.ClassifierRules()[engine.DefaultPolicy]
	if len(rules.InForce()) < 10 {
		b.Fatal("the default policy has few classifier categories; the benchmark would build a trivial prompt")
	}
	var transcript []engine.TranscriptEntry
	for i := range 60 {
		transcript = append(transcript,
			engine.TranscriptEntry{Role: engine.RoleUser, Text: fmt.Sprintf("step %d: make the tests pass, then clean up the build output", i)},
			engine.TranscriptEntry{Role: engine.RoleAssistant, Text: strings.Repeat("Thinking about it. ", 20)},
			engine.TranscriptEntry{Role: engine.RoleAssistant, ToolCall: &engine.ToolCall{Name: "Bash", Input: map[string]any{"command": fmt.Sprintf("npm test -- --grep case%d", i)}}},
			engine.TranscriptEntry{Role: engine.RoleToolResult, Text: strings.Repeat("ok 1 - passes\n", 40)},
		)
	}
	for _, bm := range []struct {
		name       string
		input      map[string]any
		transcript []engine.TranscriptEntry
	}{
		{"short_no_transcript", map[string]any{"command": "npm install left-pad"}, nil},
		{"short_240_entries", map[string]any{"command": "npm install left-pad"}, transcript},
		{"16KiB_input_240_entries", map[string]any{"file_path": "/work/app/big.txt", "content": strings.Repeat("x", 16<<10)}, transcript},
	} {
		b.Run(bm.name, func(b *testing.B) {
			req := &engine.Request{
				Tool:             engine.ToolCall{Name: "Bash", Input: bm.input},
				WorkingDirectory: "/work/app",
				Mode:             engine.ModeAuto,
				Transcript:       bm.transcript,
			}
			notes := []string{"command not known to be read-only: npm install is not a read-only program"}
			// The system prompt is built once per policy, as the
			// classifier builds it; the loop is what each call costs.
			pr := classifier.NewPrompter(rules, classifier.DefaultPromptOptions())
			if p := pr.Build(req, engine.KindShell, notes); !strings.Contains(p.User, "<<<ACTION") {
				b.Fatalf("prompt has no ACTION section:\n%s", p.User)
			}
			b.ReportAllocs()
			for b.Loop() {
				p := pr.Build(req, engine.KindShell, notes)
				_ = p.Key()
			}
		})
	}
}
