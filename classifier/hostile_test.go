package classifier

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/fakellm"
)

// Hostile answer bodies. Each wraps an allow wherever it can, so that only
// its shape can make it fail. TOOL stands for the forced function's name.
const (
	allowArgs     = `"{\"thinking\":\"t\",\"category\":\"ordinary_work\",\"should_block\":false,\"reason\":\"r\"}"`
	allowFastArgs = `"{\"category\":\"ordinary_work\",\"should_block\":false}"`
)

// chatWith is a chat answer with one choice whose message is msg.
func chatWith(msg string) string {
	return `{"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"tool_calls","message":` + msg + `}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`
}

// chatCall is a chat answer with one tool call.
func chatCall(call string) string {
	return chatWith(`{"role":"assistant","tool_calls":[` + call + `]}`)
}

// chatFunction is a chat answer with one function call.
func chatFunction(fn string) string {
	return chatCall(`{"id":"c","type":"function","function":` + fn + `}`)
}

// chatArgs is a chat answer calling TOOL with the arguments value args.
func chatArgs(args string) string {
	return chatFunction(`{"name":"TOOL","arguments":` + args + `}`)
}

// responsesWith is a responses answer whose output array is output.
func responsesWith(output string) string {
	return `{"id":"r","object":"response","status":"completed","output":` + output + `,"usage":{"input_tokens":1,"output_tokens":1}}`
}

// responsesArgs is a responses answer calling TOOL with the arguments
// value args.
func responsesArgs(args string) string {
	return responsesWith(`[{"type":"function_call","id":"f","call_id":"c","name":"TOOL","arguments":` + args + `}]`)
}

// allowInput is a Messages API tool_use input that allows: an object, not
// a string holding one.
const (
	allowInput     = `{"thinking":"t","category":"ordinary_work","should_block":false,"reason":"r"}`
	allowFastInput = `{"category":"ordinary_work","should_block":false}`
)

// messagesWith is a Messages API answer whose content array is content.
func messagesWith(content string) string {
	return `{"id":"msg_x","type":"message","role":"assistant","model":"m","content":` + content + `,"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
}

// messagesBlock is a Messages API answer with one content block.
func messagesBlock(block string) string { return messagesWith(`[` + block + `]`) }

// messagesInput is a Messages API answer calling TOOL with the input
// value input.
func messagesInput(input string) string {
	return messagesBlock(`{"type":"tool_use","id":"toolu_x","name":"TOOL","input":` + input + `}`)
}

// withStop is a Messages API answer with its stop_reason replaced.
func withStop(body, stop string) string {
	return strings.Replace(body, `"stop_reason":"tool_use"`, `"stop_reason":`+stop, 1)
}

type hostileBody struct {
	name, api, body string
	fast            bool  // stage 1 of two_stage: TOOL is classify_fast
	want            error // the sentinel the error wraps
}

// The bodies that are not a verdict, whatever they seem to say.
var hostileBodies = []hostileBody{
	// Not an object at all.
	{"null", APIChat, `null`, false, errBadBody},
	{"null with spaces", APIChat, " \n null \n", false, errBadBody},
	{"empty", APIChat, ``, false, errBadBody},
	{"spaces", APIChat, "  \n", false, errBadBody},
	{"empty array", APIChat, `[]`, false, errBadBody},
	{"array holding an answer", APIChat, `[` + chatArgs(allowArgs) + `]`, false, errBadBody},
	{"string", APIChat, `"x"`, false, errBadBody},
	{"number", APIChat, `42`, false, errBadBody},
	{"boolean", APIChat, `true`, false, errBadBody},
	{"cut", APIChat, `{"choices":[`, false, errBadBody},
	{"not JSON", APIChat, `<html>bad gateway</html>`, false, errBadBody},
	{"second value after the answer", APIChat, chatArgs(allowArgs) + `{}`, false, errBadBody},
	{"garbage after the answer", APIChat, chatArgs(allowArgs) + `x`, false, errBadBody},
	// choices.
	{"empty object", APIChat, `{}`, false, errBadAnswer},
	{"choices null", APIChat, `{"choices":null}`, false, errBadAnswer},
	{"choices empty", APIChat, `{"choices":[]}`, false, errBadAnswer},
	{"choices an object", APIChat, `{"choices":{}}`, false, errBadBody},
	{"choices a string", APIChat, `{"choices":"x"}`, false, errBadBody},
	{"choice null", APIChat, `{"choices":[null]}`, false, errBadBody},
	{"choice a number", APIChat, `{"choices":[1]}`, false, errBadBody},
	{"choice empty", APIChat, `{"choices":[{}]}`, false, errBadBody},
	{"finish reason a number", APIChat, strings.Replace(chatArgs(allowArgs), `"finish_reason":"tool_calls"`, `"finish_reason":5`, 1), false, errBadBody},
	// message.
	{"message null", APIChat, chatWith(`null`), false, errBadBody},
	{"message a string", APIChat, chatWith(`"x"`), false, errBadBody},
	{"message an array", APIChat, chatWith(`[]`), false, errBadBody},
	{"message without tool calls", APIChat, chatWith(`{"role":"assistant","content":"fine"}`), false, errNoToolCall},
	// tool_calls.
	{"tool calls null", APIChat, chatWith(`{"tool_calls":null}`), false, errNoToolCall},
	{"tool calls empty", APIChat, chatWith(`{"tool_calls":[]}`), false, errNoToolCall},
	{"tool calls an object", APIChat, chatWith(`{"tool_calls":{}}`), false, errBadBody},
	{"tool calls a string", APIChat, chatWith(`{"tool_calls":"x"}`), false, errBadBody},
	{"tool call null", APIChat, chatCall(`null`), false, errBadBody},
	{"tool call a number", APIChat, chatCall(`5`), false, errBadBody},
	{"tool call of another kind", APIChat, chatCall(`{"type":"custom","function":{"name":"TOOL","arguments":` + allowArgs + `}}`), false, errNoToolCall},
	{"tool call type a number", APIChat, chatCall(`{"type":5,"function":{"name":"TOOL","arguments":` + allowArgs + `}}`), false, errBadBody},
	// function.
	{"function missing", APIChat, chatCall(`{"type":"function"}`), false, errBadBody},
	{"function null", APIChat, chatFunction(`null`), false, errBadBody},
	{"function a string", APIChat, chatFunction(`"x"`), false, errBadBody},
	{"name a number", APIChat, chatFunction(`{"name":5,"arguments":` + allowArgs + `}`), false, errBadBody},
	{"name null", APIChat, chatFunction(`{"name":null,"arguments":` + allowArgs + `}`), false, errNoToolCall},
	{"name of another tool", APIChat, chatFunction(`{"name":"other","arguments":` + allowArgs + `}`), false, errNoToolCall},
	// arguments.
	{"arguments missing", APIChat, chatFunction(`{"name":"TOOL"}`), false, errBadArguments},
	{"arguments null", APIChat, chatArgs(`null`), false, errBadArguments},
	{"arguments a number", APIChat, chatArgs(`5`), false, errBadBody},
	{"arguments an object", APIChat, chatArgs(`{"thinking":"t","category":"ordinary_work","should_block":false,"reason":"r"}`), false, errBadBody},
	{"arguments an array", APIChat, chatArgs(`[]`), false, errBadBody},
	{"arguments empty", APIChat, chatArgs(`""`), false, errBadArguments},
	{"arguments JSON null", APIChat, chatArgs(`"null"`), false, errBadArguments},
	{"arguments JSON array", APIChat, chatArgs(`"[]"`), false, errBadArguments},
	{"arguments JSON string", APIChat, chatArgs(`"\"x\""`), false, errBadArguments},
	{"arguments not JSON", APIChat, chatArgs(`"{should_block: false}"`), false, errBadArguments},
	{"arguments empty object", APIChat, chatArgs(`"{}"`), false, errBadArguments},
	{"should_block a string", APIChat, chatArgs(`"{\"thinking\":\"t\",\"category\":\"ordinary_work\",\"should_block\":\"false\",\"reason\":\"r\"}"`), false, errBadArguments},
	{"should_block null", APIChat, chatArgs(`"{\"thinking\":\"t\",\"category\":\"ordinary_work\",\"should_block\":null,\"reason\":\"r\"}"`), false, errBadArguments},
	{"should_block a number", APIChat, chatArgs(`"{\"thinking\":\"t\",\"category\":\"ordinary_work\",\"should_block\":0,\"reason\":\"r\"}"`), false, errBadArguments},
	{"should_block missing", APIChat, chatArgs(`"{\"thinking\":\"t\",\"reason\":\"r\",\"extra\":1}"`), false, errBadArguments},
	{"thinking a number", APIChat, chatArgs(`"{\"thinking\":5,\"category\":\"ordinary_work\",\"should_block\":false,\"reason\":\"r\"}"`), false, errBadArguments},
	{"reason null", APIChat, chatArgs(`"{\"thinking\":\"t\",\"category\":\"ordinary_work\",\"should_block\":false,\"reason\":null}"`), false, errBadArguments},
	{"an extra field", APIChat, chatArgs(`"{\"thinking\":\"t\",\"category\":\"ordinary_work\",\"should_block\":false,\"reason\":\"r\",\"x\":1}"`), false, errBadArguments},
	{"fast: null", APIChat, `null`, true, errBadBody},
	{"fast: should_block null", APIChat, chatArgs(`"{\"category\":\"ordinary_work\",\"should_block\":null}"`), true, errBadArguments},
	{"fast: the full answer", APIChat, chatArgs(allowArgs), true, errBadArguments},

	{"responses: null", APIResponses, `null`, false, errBadBody},
	{"responses: empty array", APIResponses, `[]`, false, errBadBody},
	{"responses: string", APIResponses, `"x"`, false, errBadBody},
	{"responses: empty object", APIResponses, `{}`, false, errNoToolCall},
	{"responses: output null", APIResponses, responsesWith(`null`), false, errNoToolCall},
	{"responses: output an object", APIResponses, responsesWith(`{}`), false, errBadBody},
	{"responses: item null", APIResponses, responsesWith(`[null]`), false, errBadBody},
	{"responses: item a number", APIResponses, responsesWith(`[5]`), false, errBadBody},
	{"responses: item a string", APIResponses, responsesWith(`["function_call"]`), false, errBadBody},
	{"responses: item type a number", APIResponses, responsesWith(`[{"type":5,"name":"TOOL","arguments":` + allowArgs + `}]`), false, errBadBody},
	{"responses: status a number", APIResponses, strings.Replace(responsesArgs(allowArgs), `"status":"completed"`, `"status":5`, 1), false, errBadBody},
	{"responses: status failed", APIResponses, strings.Replace(responsesArgs(allowArgs), `"status":"completed"`, `"status":"failed"`, 1), false, errBadAnswer},
	{"responses: name a number", APIResponses, responsesWith(`[{"type":"function_call","name":5,"arguments":` + allowArgs + `}]`), false, errBadBody},
	{"responses: arguments missing", APIResponses, responsesWith(`[{"type":"function_call","name":"TOOL"}]`), false, errBadArguments},
	{"responses: arguments null", APIResponses, responsesArgs(`null`), false, errBadArguments},
	{"responses: arguments a number", APIResponses, responsesArgs(`5`), false, errBadBody},
	{"responses: arguments an object", APIResponses, responsesArgs(`{"thinking":"t","category":"ordinary_work","should_block":false,"reason":"r"}`), false, errBadBody},
	{"responses: arguments JSON null", APIResponses, responsesArgs(`"null"`), false, errBadArguments},
	{"responses: should_block a string", APIResponses, responsesArgs(`"{\"thinking\":\"t\",\"category\":\"ordinary_work\",\"should_block\":\"no\",\"reason\":\"r\"}"`), false, errBadArguments},
	{"responses: only a message", APIResponses, responsesWith(`[{"type":"message","content":[{"type":"output_text","text":"allowed"}]}]`), false, errNoToolCall},
	{"responses: fast: null", APIResponses, `null`, true, errBadBody},

	{"anthropic: null", APIAnthropic, `null`, false, errBadBody},
	{"anthropic: empty", APIAnthropic, ``, false, errBadBody},
	{"anthropic: empty array", APIAnthropic, `[]`, false, errBadBody},
	{"anthropic: array holding an answer", APIAnthropic, `[` + messagesInput(allowInput) + `]`, false, errBadBody},
	{"anthropic: string", APIAnthropic, `"x"`, false, errBadBody},
	{"anthropic: number", APIAnthropic, `42`, false, errBadBody},
	{"anthropic: cut", APIAnthropic, `{"content":[{"type":"tool_use"`, false, errBadBody},
	{"anthropic: not JSON", APIAnthropic, `<html>overloaded</html>`, false, errBadBody},
	{"anthropic: garbage after the answer", APIAnthropic, messagesInput(allowInput) + `x`, false, errBadBody},
	{"anthropic: empty object", APIAnthropic, `{}`, false, errNoToolCall},
	{"anthropic: an error with status 200", APIAnthropic, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, false, errBadAnswer},
	{"anthropic: type a number", APIAnthropic, strings.Replace(messagesInput(allowInput), `"type":"message"`, `"type":5`, 1), false, errBadBody},
	{"anthropic: stop reason max_tokens", APIAnthropic, withStop(messagesInput(allowInput), `"max_tokens"`), false, errBadAnswer},
	{"anthropic: stop reason refusal", APIAnthropic, withStop(messagesInput(allowInput), `"refusal"`), false, errBadAnswer},
	{"anthropic: stop reason pause_turn", APIAnthropic, withStop(messagesInput(allowInput), `"pause_turn"`), false, errBadAnswer},
	{"anthropic: stop reason a number", APIAnthropic, withStop(messagesInput(allowInput), `5`), false, errBadBody},
	{"anthropic: content null", APIAnthropic, messagesWith(`null`), false, errNoToolCall},
	{"anthropic: content empty", APIAnthropic, messagesWith(`[]`), false, errNoToolCall},
	{"anthropic: content an object", APIAnthropic, messagesWith(`{}`), false, errBadBody},
	{"anthropic: content a string", APIAnthropic, messagesWith(`"x"`), false, errBadBody},
	{"anthropic: block null", APIAnthropic, messagesBlock(`null`), false, errBadBody},
	{"anthropic: block a number", APIAnthropic, messagesBlock(`5`), false, errBadBody},
	{"anthropic: block a string", APIAnthropic, messagesBlock(`"tool_use"`), false, errBadBody},
	{"anthropic: block type a number", APIAnthropic, messagesBlock(`{"type":5,"name":"TOOL","input":` + allowInput + `}`), false, errBadBody},
	{"anthropic: only text", APIAnthropic, withStop(messagesBlock(`{"type":"text","text":"allowed"}`), `"end_turn"`), false, errNoToolCall},
	{"anthropic: a server tool call", APIAnthropic, messagesBlock(`{"type":"server_tool_use","id":"s","name":"TOOL","input":` + allowInput + `}`), false, errNoToolCall},
	{"anthropic: name a number", APIAnthropic, messagesBlock(`{"type":"tool_use","name":5,"input":` + allowInput + `}`), false, errBadBody},
	{"anthropic: name null", APIAnthropic, messagesBlock(`{"type":"tool_use","name":null,"input":` + allowInput + `}`), false, errNoToolCall},
	{"anthropic: name of another tool", APIAnthropic, messagesBlock(`{"type":"tool_use","name":"other","input":` + allowInput + `}`), false, errNoToolCall},
	{"anthropic: another tool, then TOOL", APIAnthropic, messagesWith(`[{"type":"tool_use","name":"other","input":{}},{"type":"tool_use","name":"TOOL","input":` + allowInput + `}]`), false, errNoToolCall},
	{"anthropic: two calls", APIAnthropic, messagesWith(`[{"type":"tool_use","name":"TOOL","input":` + allowInput + `},{"type":"tool_use","name":"TOOL","input":` + strings.Replace(allowInput, "false", "true", 1) + `}]`), false, errBadAnswer},
	{"anthropic: input missing", APIAnthropic, messagesBlock(`{"type":"tool_use","name":"TOOL"}`), false, errBadArguments},
	{"anthropic: input null", APIAnthropic, messagesInput(`null`), false, errBadArguments},
	{"anthropic: input a string holding the object", APIAnthropic, messagesInput(allowArgs), false, errBadArguments},
	{"anthropic: input a number", APIAnthropic, messagesInput(`5`), false, errBadArguments},
	{"anthropic: input an array", APIAnthropic, messagesInput(`[` + allowInput + `]`), false, errBadArguments},
	{"anthropic: input empty", APIAnthropic, messagesInput(`{}`), false, errBadArguments},
	{"anthropic: should_block a string", APIAnthropic, messagesInput(`{"thinking":"t","category":"ordinary_work","should_block":"false","reason":"r"}`), false, errBadArguments},
	{"anthropic: should_block null", APIAnthropic, messagesInput(`{"thinking":"t","category":"ordinary_work","should_block":null,"reason":"r"}`), false, errBadArguments},
	{"anthropic: reason missing", APIAnthropic, messagesInput(`{"thinking":"t","category":"ordinary_work","should_block":false}`), false, errBadArguments},
	{"anthropic: an extra field", APIAnthropic, messagesInput(`{"thinking":"t","category":"ordinary_work","should_block":false,"reason":"r","x":1}`), false, errBadArguments},
	{"anthropic: key given twice", APIAnthropic, messagesInput(`{"thinking":"t","category":"ordinary_work","should_block":true,"reason":"r","should_block":false}`), false, errBadBody},
	{"anthropic: fast: null", APIAnthropic, `null`, true, errBadBody},
	{"anthropic: fast: the full answer", APIAnthropic, messagesInput(allowInput), true, errBadArguments},
	{"anthropic: fast: should_block a number", APIAnthropic, messagesInput(`{"category":"ordinary_work","should_block":0}`), true, errBadArguments},
}

// Bodies that are odd but carry one clean verdict: being strict about the
// verdict must not mean refusing what does not matter to it.
var oddButValidBodies = []hostileBody{
	{"usage null", APIChat, strings.Replace(chatArgs(allowArgs), `"usage":{"prompt_tokens":1,"completion_tokens":1}`, `"usage":null`, 1), false, nil},
	{"usage a string", APIChat, strings.Replace(chatArgs(allowArgs), `"usage":{"prompt_tokens":1,"completion_tokens":1}`, `"usage":"x"`, 1), false, nil},
	{"usage negative", APIChat, strings.Replace(chatArgs(allowArgs), `"prompt_tokens":1`, `"prompt_tokens":-5`, 1), false, nil},
	{"finish reason null", APIChat, strings.Replace(chatArgs(allowArgs), `"finish_reason":"tool_calls"`, `"finish_reason":null`, 1), false, nil},
	{"content and refusal of any type", APIChat, chatWith(`{"content":5,"refusal":[],"tool_calls":[{"type":"function","function":{"name":"TOOL","arguments":` + allowArgs + `}}]}`), false, nil},
	{"surrounding whitespace", APIChat, "\n\t " + chatArgs(allowArgs) + " \n", false, nil},
	{"fast", APIChat, chatArgs(allowFastArgs), true, nil},
	{"responses: status null", APIResponses, strings.Replace(responsesArgs(allowArgs), `"status":"completed"`, `"status":null`, 1), false, nil},
	{"responses: other items of any shape", APIResponses, responsesWith(`[{"type":"reasoning","summary":5},{"type":"message","content":null},{"type":"function_call","name":"TOOL","arguments":` + allowArgs + `}]`), false, nil},
	{"responses: fast", APIResponses, responsesArgs(allowFastArgs), true, nil},
	{"anthropic: usage null", APIAnthropic, strings.Replace(messagesInput(allowInput), `"usage":{"input_tokens":1,"output_tokens":1}`, `"usage":null`, 1), false, nil},
	{"anthropic: cache counts of any type", APIAnthropic, strings.Replace(messagesInput(allowInput), `"input_tokens":1`, `"input_tokens":1,"cache_creation_input_tokens":"x","cache_read_input_tokens":-3`, 1), false, nil},
	{"anthropic: stop reason null", APIAnthropic, withStop(messagesInput(allowInput), `null`), false, nil},
	{"anthropic: stop reason end_turn", APIAnthropic, withStop(messagesInput(allowInput), `"end_turn"`), false, nil},
	{"anthropic: type missing", APIAnthropic, strings.Replace(messagesInput(allowInput), `"type":"message",`, ``, 1), false, nil},
	{"anthropic: other blocks of any shape", APIAnthropic, messagesWith(`[{"type":"thinking","thinking":5},{"type":"text","text":null},{"type":"tool_use","id":"t","name":"TOOL","input":` + allowInput + `}]`), false, nil},
	{"anthropic: input with spaces", APIAnthropic, messagesInput(" {\n \"thinking\" : \"t\", \"category\":\"ordinary_work\",\"should_block\": false, \"reason\": \"r\" } "), false, nil},
	{"anthropic: fast", APIAnthropic, messagesInput(allowFastInput), true, nil},
}

func (h hostileBody) tool() string {
	if h.fast {
		return fastTool
	}
	return fullTool
}

func (h hostileBody) bytes() []byte { return []byte(strings.ReplaceAll(h.body, "TOOL", h.tool())) }

// hostileConfig points one backend at url and, for stage-1 bodies, turns
// two_stage on.
func hostileConfig(url string, h hostileBody) Config {
	cfg := apiConfig(h.api, url)
	cfg.TwoStage = h.fast
	return cfg
}

// TestHostileBodiesFailClosed serves each body from a loopback server to
// the real backend code: each fails closed with an error naming what was
// wrong, is not retried, and panics nowhere.
func TestHostileBodiesFailClosed(t *testing.T) {
	for _, h := range hostileBodies {
		t.Run(h.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(h.bytes())
			}))
			t.Cleanup(srv.Close)
			c := newTestClassifier(t, hostileConfig(srv.URL+"/v1", h))
			v, err := c.Classify(t.Context(), input("Bash", "make deploy", ""))
			var ce *engine.ClassifierError
			if !errors.As(err, &ce) {
				t.Fatalf("got %+v, %v; want a ClassifierError", v, err)
			}
			if !errors.Is(err, h.want) || !isBadAnswer(err) {
				t.Errorf("error %q does not wrap %q", err, h.want)
			}
			if ce.Reason == "" {
				t.Error("no reason for the agent")
			}
			t.Logf("reason: %s", ce.Reason)
			if n := calls.Load(); n != 1 {
				t.Errorf("%d requests, want 1: a bad answer is not retried", n)
			}
		})
	}
	for _, h := range oddButValidBodies {
		t.Run("valid: "+h.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(h.bytes())
			}))
			t.Cleanup(srv.Close)
			c := newTestClassifier(t, hostileConfig(srv.URL+"/v1", h))
			if v, err := c.Classify(t.Context(), input("Bash", "make deploy", "")); err != nil || v.Decision != engine.Allow {
				t.Fatalf("got %+v, %v; want allow", v, err)
			}
		})
	}
}

// TestHostileBodyThroughEngine: the engine answers a null body per
// on_unavailable, with the classifier-unavailable source.
func TestHostileBodyThroughEngine(t *testing.T) {
	url, _ := cannedServer(t, "null")
	c := newTestClassifier(t, testConfig(url))
	for _, onUnavailable := range []engine.Decision{engine.Deny, engine.Ask} {
		eng, err := engine.New(engine.Config{Classifier: c, OnClassifierUnavailable: onUnavailable})
		if err != nil {
			t.Fatal(err)
		}
		res, err := eng.Check(t.Context(), &engine.Request{Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": "make deploy"}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision != onUnavailable || res.Source != engine.SourceClassifierUnavailable || !strings.Contains(res.Reason, "JSON null") {
			t.Errorf("got %s/%s %q, want %s/classifier_unavailable naming the null body", res.Decision, res.Source, res.Reason, onUnavailable)
		}
	}
}

// allowAnswer is an allow answer of api calling classify_result.
func allowAnswer(api string) string {
	body := chatArgs(allowArgs)
	switch api {
	case APIResponses:
		body = responsesArgs(allowArgs)
	case APIAnthropic:
		body = messagesInput(allowInput)
	}
	return strings.ReplaceAll(body, "TOOL", fullTool)
}

// padded is an allow answer of api of exactly size bytes: JSON whitespace
// before the answer, so that the verdict only comes at the end.
func padded(t *testing.T, api string, size int) []byte {
	t.Helper()
	answer := allowAnswer(api)
	if size < len(answer) {
		t.Fatalf("size %d is below the answer's %d bytes", size, len(answer))
	}
	return append(bytes.Repeat([]byte{' '}, size-len(answer)), answer...)
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAnswerSizeCap: an answer is read up to MaxAnswerBytes, counted after
// the transport's decompression; one byte more fails closed, whether the
// size is declared, streamed or compressed, and whatever the status. The
// cap costs what it caps: a 100 MB answer or a gzip bomb expanding to
// 256 MiB allocates a small part of that.
func TestAnswerSizeCap(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) { testAnswerSizeCap(t, api) })
	}
}

func testAnswerSizeCap(t *testing.T, api string) {
	const streamed = 100 << 20
	tests := []struct {
		name    string
		handler http.HandlerFunc
		noGzip  bool  // the client does not ask for gzip, so the transport decodes none
		want    error // nil: an allow
		bounded bool  // check that reading it allocated far less than it sends
	}{
		{name: "at the cap", handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write(padded(t, api, MaxAnswerBytes))
		}},
		{name: "one byte over, declared", want: errAnswerTooLarge, handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write(padded(t, api, MaxAnswerBytes+1))
		}},
		{name: "one byte over, streamed", want: errAnswerTooLarge, handler: func(w http.ResponseWriter, r *http.Request) {
			b := padded(t, api, MaxAnswerBytes+1)
			_, _ = w.Write(b[:1])
			http.NewResponseController(w).Flush() // no Content-Length from here on
			_, _ = w.Write(b[1:])
		}},
		{name: "100 MB streamed", want: errAnswerTooLarge, bounded: true, handler: func(w http.ResponseWriter, r *http.Request) {
			http.NewResponseController(w).Flush()
			pad := bytes.Repeat([]byte{' '}, 64<<10)
			for sent := 0; sent < streamed; sent += len(pad) {
				if _, err := w.Write(pad); err != nil {
					return
				}
			}
			_, _ = w.Write(padded(t, api, 1024))
		}},
		{name: "an error status, oversized", want: errAnswerTooLarge, handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write(bytes.Repeat([]byte{' '}, MaxAnswerBytes+1))
		}},
		{name: "gzip, small", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(gzipped(t, padded(t, api, 1024)))
		}},
		{name: "gzip, at the cap decompressed", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(gzipped(t, padded(t, api, MaxAnswerBytes)))
		}},
		{name: "gzip, one byte over decompressed", want: errAnswerTooLarge, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(gzipped(t, padded(t, api, MaxAnswerBytes+1)))
		}},
		{name: "gzip the client did not ask for", noGzip: true, want: errAnswerEncoded, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(gzipped(t, padded(t, api, 1024)))
		}},
		{name: "brotli", want: errAnswerEncoded, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "br")
			_, _ = w.Write([]byte{0x1b, 0x03, 0x00})
		}},
		{name: "gzip twice", want: errAnswerEncoded, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip, gzip")
			_, _ = w.Write(gzipped(t, gzipped(t, padded(t, api, 1024))))
		}},
		{name: "identity", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "identity")
			_, _ = w.Write(padded(t, api, 1024))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				tc.handler(w, r)
			}))
			t.Cleanup(srv.Close)
			var opts []Option
			if tc.noGzip {
				tr := &http.Transport{DisableCompression: true}
				t.Cleanup(tr.CloseIdleConnections)
				opts = append(opts, WithHTTPClient(&http.Client{Transport: tr}))
			}
			c, err := New(apiConfig(api, srv.URL+"/v1"), map[string]Rules{"default": testRules}, nil, opts...)
			if err != nil {
				t.Fatal(err)
			}
			alloc := totalAlloc()
			v, err := c.Classify(t.Context(), input("Bash", "make deploy", ""))
			allocated := totalAlloc() - alloc
			if tc.want == nil {
				if err != nil || v.Decision != engine.Allow {
					t.Fatalf("got %+v, %v; want allow", v, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %+v, %v; want an error wrapping %q", v, err, tc.want)
			}
			if tc.bounded && allocated > 32<<20 {
				t.Errorf("reading a refused answer allocated %d MiB", allocated>>20)
			}
		})
	}
}

// TestGzipBombFault: fakellm's gzip bomb, sent to a client that asked for
// gzip, is refused once its decompressed bytes pass the cap, having cost
// little memory.
func TestGzipBombFault(t *testing.T) {
	for _, api := range apis {
		t.Run(api, func(t *testing.T) { testGzipBombFault(t, api) })
	}
}

func testGzipBombFault(t *testing.T, api string) {
	fake := fakellm.Start(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultGzipBomb}))
	c := newTestClassifier(t, apiConfig(api, fake.URL()))
	// fakellm makes its bomb once, on the first request: not measured.
	_, _ = c.Classify(t.Context(), input("Bash", "warm up", ""))
	alloc := totalAlloc()
	_, err := c.Classify(t.Context(), input("Bash", "make deploy", ""))
	allocated := totalAlloc() - alloc
	if !errors.Is(err, errAnswerTooLarge) {
		t.Fatalf("got %v, want the size cap", err)
	}
	if allocated > 32<<20 {
		t.Errorf("a gzip bomb of %d MiB allocated %d MiB", fakellm.GzipBombBytes>>20, allocated>>20)
	}
	if h := fake.Requests()[0].Header.Get("Accept-Encoding"); h != "gzip" {
		t.Errorf("Accept-Encoding %q: the transport did not ask for gzip, so this test does not test its decompression", h)
	}
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestAnswerBodyErrorsPastTheCap: the limited body never hands out more
// than MaxAnswerBytes, and says so rather than stopping quietly.
func TestAnswerBodyErrorsPastTheCap(t *testing.T) {
	for _, size := range []int{0, 1, MaxAnswerBytes - 1, MaxAnswerBytes, MaxAnswerBytes + 1, 3 * MaxAnswerBytes} {
		b := newAnswerBody(t.Context(), io.NopCloser(bytes.NewReader(make([]byte, size))))
		got, err := io.ReadAll(b)
		switch {
		case size <= MaxAnswerBytes && (err != nil || len(got) != size):
			t.Errorf("size %d: read %d, %v", size, len(got), err)
		case size > MaxAnswerBytes && (!errors.Is(err, errAnswerTooLarge) || len(got) > MaxAnswerBytes):
			t.Errorf("size %d: read %d, %v; want at most the cap and errAnswerTooLarge", size, len(got), err)
		}
		if _, err2 := b.Read(make([]byte, 8)); size > MaxAnswerBytes && !errors.Is(err2, errAnswerTooLarge) {
			t.Errorf("size %d: the error is not sticky: %v", size, err2)
		}
		_ = b.Close()
	}
}

// FuzzDecodeAnswer: whatever the body, decoding it panics nowhere and
// either fails with a bad-answer error (so the check fails closed) and no
// verdict, or yields the verdict of a well-formed answer.
func FuzzDecodeAnswer(f *testing.F) {
	for _, set := range [][]hostileBody{hostileBodies, oddButValidBodies} {
		for _, h := range set {
			f.Add(h.bytes(), uint8(slices.Index(apis, h.api)), h.fast)
		}
	}
	f.Add([]byte(chatAnswer("tool_calls", args(true))), uint8(0), false)
	f.Add([]byte(responsesAnswer("completed", args(true))), uint8(1), false)
	f.Add([]byte(messagesAnswer("tool_use", args(true))), uint8(2), false)
	f.Add([]byte(chatAnswer("tool_calls", args(false), args(true))), uint8(0), false)
	f.Add([]byte(messagesAnswer("tool_use", args(false), args(true))), uint8(2), false)
	f.Fuzz(func(t *testing.T, body []byte, apiIndex uint8, fast bool) {
		api, tool := apis[int(apiIndex)%len(apis)], fullTool
		if fast {
			tool = fastTool
		}
		v, u, err := decodeAnswer(api, tool, body, compileInstructions(testRules))
		if u.in < 0 || u.out < 0 || u.cached < 0 || u.cached > u.in {
			t.Errorf("tokens %+v", u)
		}
		v2, u2, err2 := decodeAnswer(api, tool, body, compileInstructions(testRules))
		if v != v2 || u != u2 || (err == nil) != (err2 == nil) {
			t.Fatal("two decodings of one body differ")
		}
		if err != nil {
			if !isBadAnswer(err) && !errors.Is(err, ErrUnusableAnswer) {
				t.Fatalf("error %q is not a bad answer", err)
			}
			if v != (verdict{}) {
				t.Fatalf("an error with a verdict: %+v", v)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not JSON: %q", body)
		}
		if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || trimmed[0] != '{' {
			t.Fatalf("accepted a body that is not an object: %q", body)
		}
		if fast && (v.Thinking != "" || v.Reason != "") {
			t.Fatalf("a stage-1 verdict with reasoning: %+v", v)
		}
	})
}
