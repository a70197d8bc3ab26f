package fakellm

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ---- requests ----

// chatRequest is the subset of a Chat Completions request the fake reads.
type chatRequest struct {
	Model               string            `json:"model"`
	Messages            []inputItem       `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	MaxCompletionTokens int64             `json:"max_completion_tokens"`
	MaxTokens           int64             `json:"max_tokens"`
	Temperature         *float64          `json:"temperature"`
	Stream              bool              `json:"stream"`
}

// responsesRequest is the subset of a Responses request the fake reads.
type responsesRequest struct {
	Model           string            `json:"model"`
	Instructions    json.RawMessage   `json:"instructions"`
	Input           json.RawMessage   `json:"input"`
	Tools           []json.RawMessage `json:"tools"`
	ToolChoice      json.RawMessage   `json:"tool_choice"`
	MaxOutputTokens int64             `json:"max_output_tokens"`
	Temperature     *float64          `json:"temperature"`
	Stream          bool              `json:"stream"`
}

// messagesRequest is the subset of a Messages API request the fake reads.
type messagesRequest struct {
	Model       string            `json:"model"`
	System      json.RawMessage   `json:"system"`
	Messages    []inputItem       `json:"messages"`
	Tools       []json.RawMessage `json:"tools"`
	ToolChoice  json.RawMessage   `json:"tool_choice"`
	MaxTokens   *int64            `json:"max_tokens"`
	Temperature *float64          `json:"temperature"`
	Stream      bool              `json:"stream"`
}

// systemBlock is a text block of a Messages API system prompt.
type systemBlock struct {
	Type         string `json:"type"`
	Text         string `json:"text"`
	CacheControl *struct {
		Type string `json:"type"`
	} `json:"cache_control"`
}

// inputItem is a chat message, a responses input item or a Messages API
// message.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// toolWire is a chat tool ({type, function:{...}}), a responses tool
// ({type, name, ...}) or a Messages API tool ({name, input_schema, ...}).
type toolWire struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	InputSchema json.RawMessage `json:"input_schema"`
	Strict      *bool           `json:"strict"`
	Function    *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

// parseRequest fills req from req.Body, or says why the body is invalid.
func parseRequest(req *Request) *apiError {
	var (
		tools   []json.RawMessage
		choice  json.RawMessage
		system  []string
		user    []string
		sysRole = func(role string) bool { return role == "system" || role == "developer" }
	)
	add := func(role, text string) {
		switch {
		case text == "":
		case sysRole(role):
			system = append(system, text)
		case role == "user":
			user = append(user, text)
		}
	}
	switch req.API {
	case APIChat:
		var b chatRequest
		if err := json.Unmarshal(req.Body, &b); err != nil {
			return invalid("We could not parse the JSON body of your request: " + err.Error())
		}
		req.Model, tools, choice, req.Temperature = b.Model, b.Tools, b.ToolChoice, b.Temperature
		req.MaxTokens = b.MaxCompletionTokens
		if req.MaxTokens == 0 {
			req.MaxTokens = b.MaxTokens
		}
		for _, m := range b.Messages {
			add(m.Role, flatten(m.Content))
		}
		if b.Stream {
			return invalid("fakellm does not support stream=true")
		}
		if len(b.Messages) == 0 {
			return invalid("Invalid 'messages': empty array. Expected an array with minimum length 1.")
		}
	case APIResponses:
		var b responsesRequest
		if err := json.Unmarshal(req.Body, &b); err != nil {
			return invalid("We could not parse the JSON body of your request: " + err.Error())
		}
		req.Model, tools, choice, req.Temperature = b.Model, b.Tools, b.ToolChoice, b.Temperature
		req.MaxTokens = b.MaxOutputTokens
		add("system", flatten(b.Instructions))
		if s, ok := jsonString(b.Input); ok {
			add("user", s)
		} else if len(b.Input) > 0 && !isNull(b.Input) {
			var items []inputItem
			if err := json.Unmarshal(b.Input, &items); err != nil {
				return invalid("Invalid 'input': expected a string or an array of input items.")
			}
			for _, it := range items {
				if it.Type == "" || it.Type == "message" {
					add(it.Role, flatten(it.Content))
				}
			}
		}
		if b.Stream {
			return invalid("fakellm does not support stream=true")
		}
	case APIAnthropic:
		var b messagesRequest
		if err := json.Unmarshal(req.Body, &b); err != nil {
			return invalid("The request body is not valid JSON: " + err.Error())
		}
		req.Model, tools, choice, req.Temperature = b.Model, b.Tools, b.ToolChoice, b.Temperature
		if b.MaxTokens != nil {
			req.MaxTokens = *b.MaxTokens
		}
		add("system", flatten(b.System))
		for _, m := range b.Messages {
			add(m.Role, flatten(m.Content))
		}
		switch {
		case b.Stream:
			return invalid("fakellm does not support stream=true")
		case b.MaxTokens == nil:
			return invalid("max_tokens: Field required")
		case len(b.Messages) == 0:
			return invalid("messages: at least one message is required")
		}
	}
	req.System = strings.Join(system, "\n")
	req.User = strings.Join(user, "\n")
	if len(choice) > 0 && !isNull(choice) {
		req.ToolChoice = choice
	}
	for _, raw := range tools {
		var tw toolWire
		if err := json.Unmarshal(raw, &tw); err != nil {
			return invalid("Invalid 'tools': " + err.Error())
		}
		t := Tool{Type: tw.Type, Name: tw.Name, Description: tw.Description, Parameters: tw.Parameters, Raw: raw}
		if req.API == APIAnthropic {
			t.Parameters = tw.InputSchema
		}
		strict := tw.Strict
		if tw.Function != nil {
			t.Name, t.Description, t.Parameters = tw.Function.Name, tw.Function.Description, tw.Function.Parameters
			strict = tw.Function.Strict
		}
		t.Strict = strict != nil && *strict
		req.Tools = append(req.Tools, t)
	}
	forced, mode := parseToolChoice(req.API, req.ToolChoice)
	req.Tool = forced
	if req.Model == "" {
		return invalid("you must provide a model parameter")
	}
	if forced != "" && req.ToolDef(forced) == nil {
		return invalid(fmt.Sprintf("Invalid value for 'tool_choice': function %q is not in 'tools'.", forced))
	}
	if mode == "required" && len(req.Tools) == 0 {
		return invalid("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
	}
	return nil
}

// parseToolChoice returns the forced function name, or the mode when
// tool_choice is a string ("auto", "none", "required"); for the Messages
// API, {"type":"tool","name"} forces and {"type":"any"} is "required".
func parseToolChoice(api string, raw json.RawMessage) (name, mode string) {
	if s, ok := jsonString(raw); ok {
		return "", s
	}
	var c struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	err := json.Unmarshal(raw, &c)
	if api == APIAnthropic {
		switch {
		case err != nil:
			return "", ""
		case c.Type == "tool":
			return c.Name, ""
		case c.Type == "any":
			return "", "required"
		}
		return "", c.Type
	}
	if err != nil || c.Type != "function" {
		return "", c.Type
	}
	if c.Function != nil && c.Function.Name != "" {
		return c.Function.Name, ""
	}
	return c.Name, ""
}

// flatten returns the text of a message content: a string, or the "text"
// of every part of an array (text, input_text, output_text), joined by "\n".
func flatten(raw json.RawMessage) string {
	if s, ok := jsonString(raw); ok {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func jsonString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// ---- answers ----

// answerTool is the function the answer calls: the forced one, else
// DefaultTool if offered, else the first function offered; "" when the
// model would answer in text (tool_choice "none", or no function offered).
func answerTool(req *Request) string {
	if req.Tool != "" {
		return req.Tool
	}
	if _, mode := parseToolChoice(req.API, req.ToolChoice); mode == "none" {
		return ""
	}
	first := ""
	for _, t := range req.Tools {
		if !callable(req.API, t) {
			continue
		}
		if t.Name == DefaultTool {
			return DefaultTool
		}
		if first == "" {
			first = t.Name
		}
	}
	return first
}

// callable reports whether t is a function the fake may answer with: an
// OpenAI function tool, or a Messages API client tool (server tools such
// as web_search have other types).
func callable(api string, t Tool) bool {
	if api == APIAnthropic {
		return t.Type == "" || t.Type == "custom"
	}
	return t.Type == "function"
}

// argFields says which of thinking, category and reason the arguments
// carry besides should_block: those the tool's parameter schema declares,
// if it declares should_block; else none for classify_fast and thinking
// and reason for any other name. choices are the categories an allow may
// name, when the schema says (categoryChoices).
func argFields(req *Request, name string) (thinking, category, reason bool, choices []string) {
	if t := req.ToolDef(name); t != nil {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(t.Parameters, &schema) == nil {
			if _, ok := schema.Properties["should_block"]; ok {
				_, thinking = schema.Properties["thinking"]
				_, reason = schema.Properties["reason"]
				var cat struct {
					Enum        []string `json:"enum"`
					Description string   `json:"description"`
				}
				raw, category := schema.Properties["category"]
				if category {
					_ = json.Unmarshal(raw, &cat)
				}
				return thinking, category, reason, categoryChoices(cat.Enum, cat.Description)
			}
		}
	}
	if name == "classify_fast" {
		return false, false, false, nil
	}
	return true, false, true, nil
}

// DefaultAllowCategory and DefaultBlockCategory are the categories a
// Reply without one names, when the schema's enum lists them: toolgate's
// built-in policy names its routine work ordinary_work.
const (
	DefaultAllowCategory = "ordinary_work"
	DefaultBlockCategory = "unknown"
)

// allowsSentence is the sentence of a category's description that lists
// the allow categories (toolgate's classifier.AllowCategoriesPrefix).
var allowsSentence = regexp.MustCompile(`An allow names one of: ([a-z0-9_, ]+)\.`)

// categoryChoices are the categories an allow may name: those the
// description lists as allow categories, when it does, else the enum.
func categoryChoices(enum []string, description string) []string {
	m := allowsSentence.FindStringSubmatch(description)
	if m == nil {
		return enum
	}
	var out []string
	for _, n := range strings.Split(m[1], ",") {
		if n = strings.TrimSpace(n); n != "" && (len(enum) == 0 || slices.Contains(enum, n)) {
			out = append(out, n)
		}
	}
	return out
}

// categoryOf is the category the arguments name: the Reply's; else, for
// an allow, DefaultAllowCategory when choices (the allow categories, or
// the enum) hold it or are empty, else "extra_allow" when they hold it,
// else their first; for a block, DefaultBlockCategory (which blocks
// whatever the policy holds).
func categoryOf(reply Reply, choices []string) string {
	switch {
	case reply.Category != "":
		return reply.Category
	case reply.Block:
		return DefaultBlockCategory
	case slices.Contains(choices, DefaultAllowCategory) || len(choices) == 0:
		return DefaultAllowCategory
	case slices.Contains(choices, "extra_allow"):
		return "extra_allow"
	}
	return choices[0]
}

// argumentFields builds the fields of the tool call's arguments, each
// `"key":value`, in the order thinking, category, should_block, reason;
// FaultWrongSchema's are off the schema.
func argumentFields(req *Request, name string, reply Reply) []string {
	withThinking, withCategory, withReason, enum := argFields(req, name)
	thinking := reply.Thinking
	if thinking == "" {
		thinking = "fakellm: canned verdict, no model was consulted."
	}
	reason := reply.Reason
	if reason == "" {
		reason = "fakellm: allowed"
		if reply.Block {
			reason = "fakellm: blocked"
		}
	}
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var fields []string
	if withThinking {
		fields = append(fields, `"thinking":`+quote(thinking))
	}
	if withCategory {
		fields = append(fields, `"category":`+quote(categoryOf(reply, enum)))
	}
	if reply.Fault == FaultWrongSchema {
		verdict := "no"
		if reply.Block {
			verdict = "yes"
		}
		return append(fields, `"should_block":`+quote(verdict))
	}
	fields = append(fields, `"should_block":`+strconv.FormatBool(reply.Block))
	if withReason {
		fields = append(fields, `"reason":`+quote(reason))
	}
	return fields
}

// arguments builds the arguments of the tool call, a JSON object in the
// order thinking, category, should_block, reason. FaultMalformed's are cut: for the
// OpenAI APIs, whose arguments are a string, within the text, so they are
// not JSON; for the Messages API, whose input is an object, after the
// last complete field before the cut (the last field is missing).
func arguments(req *Request, name string, reply Reply) string {
	fields := argumentFields(req, name, reply)
	if reply.Fault == FaultMalformed && req.API == APIAnthropic {
		return "{" + strings.Join(fields[:len(fields)-1], ",") + "}"
	}
	args := "{" + strings.Join(fields, ",") + "}"
	if reply.Fault == FaultMalformed {
		// Truncated like an answer cut by max tokens: without its closing
		// brace and the character before it, it is never valid JSON.
		return args[:len(args)-2]
	}
	return args
}

func estimateTokens(s string) int {
	return (utf8.RuneCountInString(s) + 3) / 4
}

// answer builds the 200 body for req: a forced tool call (or, with
// FaultNoToolCall or when no function may be called, a text message; with
// FaultSeveralToolCalls, two calls).
func (s *Server) answer(req *Request, reply Reply) any {
	n := s.seq.Add(1)
	name := answerTool(req)
	text := ""
	var calls []string // the arguments of each call
	if reply.Fault == FaultNoToolCall || name == "" {
		text = reply.Reason
		if text == "" {
			text = "I'm sorry, but I can't help with classifying this request."
		}
	} else {
		calls = append(calls, arguments(req, name, reply))
		if reply.Fault == FaultSeveralToolCalls {
			other := Reply{Block: !reply.Block}
			calls = append(calls, arguments(req, name, other))
		}
	}
	in, out := reply.InputTokens, reply.OutputTokens
	if in == 0 {
		in = max(1, estimateTokens(req.System)+estimateTokens(req.User))
	}
	if out == 0 {
		out = max(1, estimateTokens(text+strings.Join(calls, "")))
	}
	if req.API == APIAnthropic {
		return s.messagesAnswer(req, reply, n, name, text, calls, out)
	}
	cached := reply.CacheReadTokens
	if reply.InputTokens == 0 && cached == 0 {
		cached = s.openAICached(req, in)
	}
	cached = min(cached, in)
	if req.API == APIChat {
		c := chatAnswer(req, n, name, text, calls, in, out)
		c.Usage.PromptTokensDetails.CachedTokens = cached
		return c
	}
	r := responsesAnswer(req, n, name, text, calls, in, out)
	r.Usage.InputTokensDetails.CachedTokens = cached
	return r
}

// openAIMinCached is the shortest prompt OpenAI's APIs cache, in tokens.
const openAIMinCached = 1024

// openAICached simulates OpenAI's automatic prompt caching: a request
// whose system text (estimated) is at least openAIMinCached tokens has it
// read from the cache when the server has seen the same model, tools and
// system text before, and in is the request's input tokens.
func (s *Server) openAICached(req *Request, in int) int {
	sys := estimateTokens(req.System)
	if sys < openAIMinCached {
		return 0
	}
	var tools []json.RawMessage
	for _, t := range req.Tools {
		tools = append(tools, t.Raw)
	}
	if s.seenPrefix([]byte(req.API), []byte(req.Model), mustMarshal(tools), []byte(req.System)) {
		return min(sys, in)
	}
	return 0
}

// seenPrefix reports whether the server has seen the prompt prefix made
// of parts before, and remembers it (at most 4096 prefixes: forgetting is
// a cache miss).
func (s *Server) seenPrefix(parts ...[]byte) bool {
	h := sha256.New()
	for _, part := range parts {
		h.Write(part)
		h.Write([]byte{0})
	}
	var key [32]byte
	h.Sum(key[:0])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached[key] {
		return true
	}
	if s.cached == nil || len(s.cached) >= 4096 {
		s.cached = map[[32]byte]bool{}
	}
	s.cached[key] = true
	return false
}

// callID is the id of the i-th call of answer n.
func callID(prefix string, n int64, i int) string {
	if i == 0 {
		return fmt.Sprintf("%s%06d", prefix, n)
	}
	return fmt.Sprintf("%s%06d_%d", prefix, n, i)
}

func chatAnswer(req *Request, n int64, name, text string, calls []string, in, out int) chatCompletion {
	msg := chatMessage{Role: "assistant", Annotations: []struct{}{}}
	finish := "tool_calls"
	for i, args := range calls {
		msg.ToolCalls = append(msg.ToolCalls, chatToolCall{
			ID: callID("call_fake", n, i), Type: "function",
			Function: chatFunction{Name: name, Arguments: args},
		})
	}
	if len(calls) == 0 {
		msg.Content = &text
		finish = "stop"
	}
	return chatCompletion{
		ID: fmt.Sprintf("chatcmpl-fake%06d", n), Object: "chat.completion", Created: time.Now().Unix(), Model: req.Model,
		Choices:     []chatChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:       chatUsage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out},
		ServiceTier: "default", SystemFingerprint: "fp_fakellm",
	}
}

func responsesAnswer(req *Request, n int64, name, text string, calls []string, in, out int) response {
	var items []any
	for i, args := range calls {
		items = append(items, functionCallItem{
			Type: "function_call", ID: callID("fc_fake", n, i), CallID: callID("call_fake", n, i),
			Name: name, Arguments: args, Status: "completed",
		})
	}
	if len(calls) == 0 {
		items = append(items, messageItem{
			Type: "message", ID: fmt.Sprintf("msg_fake%06d", n), Status: "completed", Role: "assistant",
			Content: []outputText{{Type: "output_text", Text: text, Annotations: []struct{}{}, Logprobs: []struct{}{}}},
		})
	}
	var body responsesRequest
	_ = json.Unmarshal(req.Body, &body) // parsed before
	toolChoice := req.ToolChoice
	if toolChoice == nil {
		toolChoice = json.RawMessage(`"auto"`)
	}
	tools := body.Tools
	if tools == nil {
		tools = []json.RawMessage{}
	}
	temperature := 1.0
	if req.Temperature != nil {
		temperature = *req.Temperature
	}
	var maxOut *int64
	if req.MaxTokens > 0 {
		maxOut = &req.MaxTokens
	}
	instructions := body.Instructions
	if len(instructions) == 0 {
		instructions = nil
	}
	now := time.Now().Unix()
	return response{
		ID: fmt.Sprintf("resp_fake%06d", n), Object: "response", AccessPrograms: accessPrograms{Cyber: "standard"},
		CreatedAt: now, Status: "completed",
		CompletedAt: now, Instructions: instructions, MaxOutputTokens: maxOut, Model: req.Model,
		Output: items, ParallelToolCalls: true, Temperature: temperature, Text: textConfig{Format: textFormat{Type: "text"}},
		ToolChoice: toolChoice, Tools: tools, TopP: 1, Truncation: "disabled", ServiceTier: "default",
		Usage:    responseUsage{InputTokens: in, OutputTokens: out, TotalTokens: in + out},
		Metadata: map[string]string{},
	}
}

func (s *Server) messagesAnswer(req *Request, reply Reply, n int64, name, text string, calls []string, out int) message {
	var content []any
	for i, args := range calls {
		content = append(content, toolUseBlock{Type: "tool_use", ID: callID("toolu_fake", n, i), Name: name, Input: json.RawMessage(args)})
	}
	stop := "tool_use"
	switch {
	case len(calls) == 0:
		content = append(content, textBlock{Type: "text", Text: text})
		stop = "end_turn"
	case reply.Fault == FaultMalformed:
		stop = "max_tokens"
	}
	return message{
		ID: fmt.Sprintf("msg_fake%06d", n), Type: "message", Role: "assistant", Model: req.Model,
		Content: content, StopReason: stop, Usage: s.messagesUsage(req, reply, out),
	}
}

// messagesUsage is the usage of a Messages API answer: the Reply's counts,
// or estimated ones with prompt caching simulated (see Reply).
func (s *Server) messagesUsage(req *Request, reply Reply, out int) messageUsage {
	u := messageUsage{
		InputTokens: reply.InputTokens, OutputTokens: out, ServiceTier: "standard",
		CacheCreationInputTokens: reply.CacheCreationTokens, CacheReadInputTokens: reply.CacheReadTokens,
	}
	if u.InputTokens != 0 || u.CacheCreationInputTokens != 0 || u.CacheReadInputTokens != 0 {
		return u
	}
	total := max(1, estimateTokens(req.System)+estimateTokens(req.User))
	u.InputTokens = total
	var body messagesRequest
	_ = json.Unmarshal(req.Body, &body) // parsed before
	var blocks []systemBlock
	if json.Unmarshal(body.System, &blocks) != nil || len(blocks) == 0 || blocks[len(blocks)-1].CacheControl == nil {
		return u
	}
	// The cached prefix: the model, the tools, the system blocks.
	cached := min(estimateTokens(req.System), total)
	u.InputTokens = total - cached
	if s.seenPrefix([]byte("anthropic"), []byte(req.Model), mustMarshal(body.Tools), body.System) {
		u.CacheReadInputTokens = cached
		return u
	}
	u.CacheCreationInputTokens = cached
	return u
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v) // raw messages parsed before
	return b
}

// ---- answer wire types (field names and nulls as the OpenAI API sends) ----

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             chatUsage    `json:"usage"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	Logprobs     *struct{}   `json:"logprobs"` // always null
	FinishReason string      `json:"finish_reason"`
}

type chatMessage struct {
	Role        string         `json:"role"`
	Content     *string        `json:"content"` // null with tool calls
	Refusal     *string        `json:"refusal"` // always null
	ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
	Annotations []struct{}     `json:"annotations"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON document, as a string
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

type response struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	AccessPrograms     accessPrograms    `json:"access_programs"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	CompletedAt        int64             `json:"completed_at"`
	Error              *struct{}         `json:"error"`              // always null
	IncompleteDetails  *struct{}         `json:"incomplete_details"` // always null
	Instructions       json.RawMessage   `json:"instructions"`       // echoed, or null
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []any             `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          reasoning         `json:"reasoning"`
	ServiceTier        string            `json:"service_tier"`
	Temperature        float64           `json:"temperature"`
	Text               textConfig        `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"` // echoed, or "auto"
	Tools              []json.RawMessage `json:"tools"`       // echoed
	TopP               float64           `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              responseUsage     `json:"usage"`
	User               *string           `json:"user"`
	Metadata           map[string]string `json:"metadata"`
}

type accessPrograms struct {
	Cyber string `json:"cyber"`
}

type reasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type textConfig struct {
	Format textFormat `json:"format"`
}

type textFormat struct {
	Type string `json:"type"`
}

type functionCallItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // a JSON document, as a string
	Status    string `json:"status"`
}

type messageItem struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// message is a Messages API answer.
type message struct {
	ID           string       `json:"id"`
	Type         string       `json:"type"`
	Role         string       `json:"role"`
	Model        string       `json:"model"`
	Content      []any        `json:"content"`
	StopReason   string       `json:"stop_reason"`
	StopSequence *string      `json:"stop_sequence"` // always null
	Usage        messageUsage `json:"usage"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"` // an object, not a string
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type messageUsage struct {
	InputTokens              int    `json:"input_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	ServiceTier              string `json:"service_tier"`
}
