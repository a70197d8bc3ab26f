package config

import (
	"strings"
	"testing"
)

// env is a fake environment for load.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func TestExpand(t *testing.T) {
	vars := env(map[string]string{"KEY": "s3cr3t", "EMPTY": "", "HOST": "llm.internal"})
	tests := []struct {
		in, want string
		err      []string // substrings of the error; nil: no error
	}{
		{in: "${KEY}", want: "s3cr3t"},
		{in: "https://bob:${KEY}@${HOST}/v1", want: "https://bob:s3cr3t@llm.internal/v1"},
		{in: "${EMPTY}", err: []string{"EMPTY", "is empty", "${EMPTY:-}"}},
		{in: "${EMPTY:-}", want: ""},
		{in: "$$", want: "$"},
		{in: "a$$b", want: "a$b"},
		{in: "$${KEY}", want: "${KEY}"},
		{in: "$$$${KEY}", want: "$${KEY}"},
		{in: "$$${KEY}", want: "$s3cr3t"},
		{in: "a$b $KEY trailing$", want: "a$b $KEY trailing$"},
		{in: "${MISSING:-fallback}", want: "fallback"},
		{in: "${EMPTY:-fallback}", want: "fallback"},
		{in: "${KEY:-fallback}", want: "s3cr3t"},
		{in: "${MISSING:-}", want: ""},
		{in: "${MISSING}", err: []string{"MISSING", "not set"}},
		{in: "x${KEY}${MISSING}", err: []string{"MISSING"}},
		{in: "${}", err: []string{"not a variable name"}},
		{in: "${1KEY}", err: []string{`"1KEY"`, "not a variable name"}},
		{in: "${KEY-x}", err: []string{"not a variable name"}},
		{in: "${KEY", err: []string{"unclosed"}},
		{in: "${A:-${B}}", err: []string{"default may not contain"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := expand(tt.in, vars)
			if tt.err == nil {
				if err != nil || got != tt.want {
					t.Fatalf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("expand(%q) = %q, want an error", tt.in, got)
			}
			for _, w := range tt.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q shows a variable's value", err)
			}
		})
	}
}

func TestLoadExpands(t *testing.T) {
	vars := map[string]string{
		"PROXY_PASSWORD": "hunter2",
		"LISTEN":         "127.0.0.1:7000",
		"MODEL":          "null", // stays the string, not YAML's null
		"INJECT":         "m\nlisten: 0.0.0.0:1\n- [x]",
		"NAME":           "123",
	}
	p := write(t, `
server:
  listen: ${LISTEN}
classifier:
  dump_file: "/var/log/$$toolgate-${MISSING_DIR:-dumps}.jsonl"
  backends:
    - name: ${NAME}
      base_url: https://bob:${PROXY_PASSWORD}@llm.example/v1
      model: ${MODEL}
    - {base_url: "http://127.0.0.1:8000/v1", model: "${INJECT}"}
policies:
  default:
    permissions:
      deny: ["Bash(echo $HOME)", "Bash(echo ${HOME})", "Bash(kill $$)", "Bash(echo ${UNSET_IN_RULE})"]
    auto_mode:
      environment: ["Costs are in $USD; ${PROJECT} is the repo."]
`)
	c, err := load(p, env(vars))
	if err != nil {
		t.Fatal(err)
	}
	srv, cls, err := sections(c)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Listen != "127.0.0.1:7000" {
		t.Errorf("listen %q", srv.Listen)
	}
	if got := cls.DumpFile; got != "/var/log/$toolgate-dumps.jsonl" {
		t.Errorf("dump_file %q", got)
	}
	b := cls.Backends
	if b[0].Name != "123" || b[0].BaseURL != "https://bob:hunter2@llm.example/v1" || b[0].Model != "null" {
		t.Errorf("first backend %+v", b[0])
	}
	// A value is one string, whatever it holds: no keys, no lists.
	if b[1].Model != vars["INJECT"] {
		t.Errorf("second backend model %q", b[1].Model)
	}
	// Policies are taken as written.
	deny := added(t, c, "default", "permissions.deny")
	if want := []string{"Bash(echo $HOME)", "Bash(echo ${HOME})", "Bash(kill $$)", "Bash(echo ${UNSET_IN_RULE})"}; strings.Join(deny, "|") != strings.Join(want, "|") {
		t.Errorf("deny rules %q, want %q", deny, want)
	}
	if got := added(t, c, "default", "auto_mode.environment")[0]; got != "Costs are in $USD; ${PROJECT} is the repo." {
		t.Errorf("environment %q", got)
	}
}

func TestLoadExpandErrors(t *testing.T) {
	vars := env(map[string]string{"USER_NAME": "s3cr3t-user", "BAD_URL": "ftp://svc:s3cr3t@llm.internal/v1", "QUOTED_URL": `ftp://svc:s3cr3t"q\x@llm.internal/v1`})
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"unset", "server:\n  listen: ${LISTEN_ADDR}\n", []string{"line 2", "server.listen", "LISTEN_ADDR", "not set"}},
		{"unset in a list", "classifier:\n  backends:\n    - model: m\n      base_url: \"https://${USER_NAME}:${API_PASSWORD}@h/v1\"\n",
			[]string{"line 4", "classifier.backends[0].base_url", "API_PASSWORD"}},
		{"bad reference", "classifier:\n  dump_file: ${dump-file}\n", []string{"line 2", "classifier.dump_file", "not a variable name"}},
		// Validation quotes bad values; one from the environment is named.
		{"bad value from the environment", "classifier:\n  backends:\n    - {model: m, base_url: \"${BAD_URL}\"}\n",
			[]string{"classifier.backends[0].base_url", "must be an http(s) URL", "${BAD_URL}"}},
		{"number field", "classifier:\n  max_tokens: ${MAX_TOKENS}\n", []string{":2: classifier.max_tokens: want a whole number, got \"${MAX_TOKENS}\""}},
		{"bad value with quotes from the environment", "classifier:\n  backends:\n    - {model: m, base_url: \"${QUOTED_URL}\"}\n",
			[]string{"classifier.backends[0].base_url", "${QUOTED_URL}"}},
		// config show knows an expanded value by the anchor's path only.
		{"anchor used in a policy", "classifier:\n  backends:\n    - {name: a, base_url: \"https://h/v1\", model: &m \"Bash(echo ${USER_NAME})\"}\npolicies:\n  default:\n    permissions: {deny: [*m]}\n",
			[]string{"line 3", "classifier.backends[0].model", "anchors are not supported"}},
		{"alias in classifier", "policies:\n  default:\n    permissions: {deny: [&m \"Bash(x)\"]}\nclassifier:\n  backends:\n    - {name: a, base_url: \"https://h/v1\", model: *m}\n",
			[]string{"line 6", "classifier.backends[0].model", "aliases are not supported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if !strings.Contains(body, "policies:") {
				body += "policies: {default: {}}\n"
			}
			p := write(t, body)
			c, err := load(p, vars)
			if err == nil {
				_, _, err = sections(c)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append([]string{p}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q shows a variable's value", err)
			}
		})
	}

	// Every problem is reported, each line naming the file.
	p := write(t, "server:\n  listen: ${A}\nclassifier:\n  dump_file: ${B}\npolicies: {default: {}}\n")
	c, err := load(p, vars)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err = sections(c); err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 {
		t.Fatalf("want two errors, got %q", err)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, p+": ") {
			t.Errorf("error line %q does not name the file", l)
		}
	}
}

// Load reads the process environment.
func TestLoadEnvironment(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_LISTEN", "127.0.0.1:7001")
	c, err := Load(write(t, "server:\n  listen: ${TOOLGATE_TEST_LISTEN}\npolicies: {default: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if srv, _, err := sections(c); err != nil || srv.Listen != "127.0.0.1:7001" {
		t.Errorf("listen %+v %v", srv, err)
	}
}
