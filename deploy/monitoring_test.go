package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/bench/inproc"
	"github.com/toolgate/toolgate/bench/workload"
	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/fakellm"
)

// The monitoring files: a Grafana dashboard and Prometheus rules, whose
// unit tests promtool runs (make monitoring-test). The tests here check
// what promtool does not: the dashboard's shape, and that both name only
// metrics the server exports, taken from a real server's /metrics.
const (
	dashboardFile  = "grafana/toolgate.json"
	alertsFile     = "prometheus/alerts.yaml"
	alertsTestFile = "prometheus/alerts_test.yaml"
)

// Just enough of Grafana's dashboard model for the checks below.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []dashVariable `json:"list"`
	} `json:"templating"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *datasourceRef `json:"datasource"`
	Targets    []struct {
		Datasource *datasourceRef `json:"datasource"`
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type dashVariable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"` // a string, or {"query": ...} for Prometheus queries
	Datasource *datasourceRef  `json:"datasource"`
	Current    struct {
		Value any `json:"value"`
	} `json:"current"`
}

// query is the variable's query text, whichever form it has.
func (v dashVariable) query(t *testing.T) string {
	t.Helper()
	if len(v.Query) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var q struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(v.Query, &q); err != nil {
		t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
	}
	return q.Query
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dec.More() {
		t.Fatalf("%s: data after the dashboard object", dashboardFile)
	}
	return d
}

// allPanels flattens rows' panels into the list.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// dashboardQuery is one PromQL expression of the dashboard and where it is.
type dashboardQuery struct{ where, expr string }

func (d dashboard) queries(t *testing.T) []dashboardQuery {
	t.Helper()
	var out []dashboardQuery
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			out = append(out, dashboardQuery{fmt.Sprintf("panel %q, target %s", p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		if e := variableExpr(v.query(t)); e != "" {
			out = append(out, dashboardQuery{fmt.Sprintf("variable %s", v.Name), e})
		}
	}
	return out
}

// docQueries are the promql code blocks of README.md and docs/*.md.
func docQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []dashboardQuery
	for _, f := range append([]string{"../README.md"}, docs...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range regexp.MustCompile("(?ms)^```promql\n(.*?)^```").FindAllStringSubmatch(string(data), -1) {
			out = append(out, dashboardQuery{fmt.Sprintf("%s promql block %d", strings.TrimPrefix(f, "../"), i+1), m[1]})
		}
	}
	if len(out) == 0 {
		t.Fatal("no promql block in README.md or docs/")
	}
	return out
}

// labelValues matches Grafana's label_values(series, label).
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// variableExpr is the PromQL in a Prometheus variable's query: the series
// of label_values(series, label), none in label_values(label) or
// label_names(), the query of query_result(query).
func variableExpr(q string) string {
	if m := labelValues.FindStringSubmatch(q); m != nil {
		return m[1]
	}
	q = strings.TrimSpace(q)
	if rest, ok := strings.CutPrefix(q, "query_result("); ok {
		return strings.TrimSuffix(rest, ")")
	}
	if strings.HasPrefix(q, "label_values(") || strings.HasPrefix(q, "label_names(") || strings.HasPrefix(q, "metrics(") {
		return ""
	}
	return q
}

func TestGrafanaDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: want both", d.UID, d.Title)
	}
	// 36 (Grafana 9) made the datasource a reference {type, uid}.
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d, want 36 or later", d.SchemaVersion)
	}

	vars := map[string]dashVariable{}
	for _, v := range d.Templating.List {
		if _, dup := vars[v.Name]; dup {
			t.Errorf("variable %s twice", v.Name)
		}
		vars[v.Name] = v
	}
	if v, ok := vars["datasource"]; !ok || v.Type != "datasource" || v.query(t) != "prometheus" {
		t.Errorf("want a datasource variable of type datasource for prometheus, got %+v", v)
	}
	// The prices turn tokens into money; each must be set, to a price.
	for _, name := range []string{"price_in", "price_out"} {
		v, ok := vars[name]
		if !ok {
			t.Errorf("no %s variable", name)
			continue
		}
		if v.Type != "textbox" && v.Type != "constant" {
			t.Errorf("variable %s is a %s, want a textbox or a constant", name, v.Type)
		}
		for what, s := range map[string]string{"query": v.query(t), "current value": fmt.Sprint(v.Current.Value)} {
			if p, err := strconv.ParseFloat(s, 64); err != nil || p <= 0 {
				t.Errorf("variable %s: %s %q is not a price", name, what, s)
			}
		}
	}

	isOurs := func(ds *datasourceRef) bool { return ds != nil && ds.UID == "${datasource}" }
	ids := map[int]string{}
	var exprs []string
	for _, p := range allPanels(d.Panels) {
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d (also %q)", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || len(p.Targets) == 0 {
			t.Errorf("panel %d: title %q, %d targets", p.ID, p.Title, len(p.Targets))
		}
		if !isOurs(p.Datasource) {
			t.Errorf("panel %q: datasource %+v, want uid ${datasource}", p.Title, p.Datasource)
		}
		for _, tg := range p.Targets {
			if !isOurs(tg.Datasource) || strings.TrimSpace(tg.Expr) == "" || tg.RefID == "" {
				t.Errorf("panel %q target %q: datasource %+v, expr %q", p.Title, tg.RefID, tg.Datasource, tg.Expr)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" && !isOurs(v.Datasource) {
			t.Errorf("variable %s: datasource %+v, want uid ${datasource}", v.Name, v.Datasource)
		}
	}
	// Every variable but the data source is used somewhere.
	all := strings.Join(exprs, "\n")
	for _, v := range d.Templating.List {
		if v.Name != "datasource" && !regexp.MustCompile(`\$`+regexp.QuoteMeta(v.Name)+`\b|\$\{`+regexp.QuoteMeta(v.Name)+`\}`).MatchString(all) {
			t.Errorf("variable %s is used by no panel", v.Name)
		}
	}
}

// Just enough of Prometheus's rule files and promtool's test files.
type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name  string `yaml:"name"`
	Rules []rule `yaml:"rules"`
}

type rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

type ruleTestFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			Alertname string      `yaml:"alertname"`
			ExpAlerts []yaml.Node `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func loadYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func loadRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	loadYAML(t, alertsFile, &f)
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// The alerts carry what routing and the people paged need, and promtool's
// tests see each fire and each stay silent.
func TestAlertRules(t *testing.T) {
	rules := loadRules(t)
	var tests ruleTestFile
	loadYAML(t, alertsTestFile, &tests)
	if !slices.Contains(tests.RuleFiles, filepath.Base(alertsFile)) {
		t.Errorf("%s tests %q, not %s", alertsTestFile, tests.RuleFiles, filepath.Base(alertsFile))
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	alerts := 0
	for _, r := range rules {
		if (r.Alert == "") == (r.Record == "") || strings.TrimSpace(r.Expr) == "" {
			t.Errorf("rule %+v: want one of alert and record, and an expr", r)
			continue
		}
		if r.Alert == "" {
			continue
		}
		alerts++
		if s := r.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
			t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, s)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
		if !fires[r.Alert] || !silent[r.Alert] {
			t.Errorf("%s: %s has a firing test %v, a silent one %v; want both", r.Alert, alertsTestFile, fires[r.Alert], silent[r.Alert])
		}
	}
	if alerts < 5 {
		t.Errorf("%d alerts, want at least 5", alerts)
	}
}

// The dashboard's queries are PromQL that Prometheus parses, once Grafana
// has put its variables in: promtool checks them as recording rules.
// promtool comes with make monitoring-test (which make test-e2e runs
// first); without it the test is skipped.
func TestDashboardQueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("no promtool (make monitoring-test installs it)")
	}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h",
		"$job", ".*", "$instance", ".*", "$price_in", "0.4", "$price_out", "1.6")
	f := ruleFile{Groups: []ruleGroup{{Name: "dashboard"}}}
	qs := append(loadDashboard(t).queries(t), docQueries(t)...)
	for i, q := range qs {
		e := vars.Replace(q.expr)
		if strings.Contains(e, "$") {
			t.Errorf("%s: a variable the test does not know: %s", q.where, e)
		}
		f.Groups[0].Rules = append(f.Groups[0].Rules, rule{Record: fmt.Sprintf("dashboard:query:%d", i), Expr: e})
	}
	data, err := yaml.Marshal(&f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), promtool, "check", "rules", path).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s\n%s", err, out, data)
	}
	t.Logf("%d dashboard and documentation queries parse", len(qs))
}

// promqlKeywords are PromQL's words that are not metric names when not
// followed by "(": aggregations (sum by (x) (...)), binary and set
// operators, modifiers and literals. Any word followed by "(" is a
// function or an aggregation.
var promqlKeywords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
	"and": true, "or": true, "unless": true, "atan2": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"offset": true, "bool": true, "inf": true, "nan": true,
}

// labelListKeywords take a parenthesised list of label names.
var labelListKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isIdent(c byte) bool { return isIdentStart(c) || ('0' <= c && c <= '9') }

// promqlMetricNames returns the metric names a PromQL expression (with
// Grafana's $variables in it) selects, in order, once each. It is a
// tokenizer, not a parser: it skips strings, comments, $variables,
// numbers and durations, what is inside {} (label matchers) and []
// (ranges), the label lists of by, without, on, ignoring, group_left and
// group_right, PromQL's keywords and every word followed by "(" (a
// function or an aggregation). The words left are metric names.
func promqlMetricNames(expr string) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	braces, brackets := 0, 0
	skipList := false // the next "(" opens a label list
	listDepth := 0    // > 0 inside a label list
	parens := 0
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			i = j + 1
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				end := strings.IndexByte(expr[i:], '}')
				if end < 0 {
					return nil, fmt.Errorf("unterminated ${ at %d", i)
				}
				i += end + 1
				continue
			}
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
		case '0' <= c && c <= '9' || c == '.' && i+1 < len(expr) && '0' <= expr[i+1] && expr[i+1] <= '9':
			// Numbers, 1e6, 0x1f and durations (5m, 1h30m).
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') && expr[i] != ':' {
				i++
			}
		case c == '{':
			braces++
			i++
		case c == '}':
			braces--
			i++
		case c == '[':
			brackets++
			i++
		case c == ']':
			brackets--
			i++
		case c == '(':
			parens++
			if skipList {
				skipList, listDepth = false, parens
			}
			i++
		case c == ')':
			if parens == listDepth {
				listDepth = 0
			}
			parens--
			i++
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			word := expr[i:j]
			i = j
			k := j
			for k < len(expr) && strings.ContainsRune(" \t\r\n", rune(expr[k])) {
				k++
			}
			call := k < len(expr) && expr[k] == '('
			lower := strings.ToLower(word)
			switch {
			case braces > 0 && word == "__name__":
				// {__name__="m"} names m; a regular expression or a
				// negation names what cannot be checked.
				rest := strings.TrimLeft(expr[k:], " \t")
				if !strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "=~") {
					return nil, fmt.Errorf("__name__ matched other than with = at %d", i)
				}
				rest = strings.TrimLeft(rest[1:], " \t")
				if rest == "" || rest[0] != '"' {
					return nil, fmt.Errorf("__name__ without a quoted name at %d", i)
				}
				end := strings.IndexByte(rest[1:], '"')
				if end < 0 {
					return nil, fmt.Errorf("unterminated __name__ at %d", i)
				}
				if name := rest[1 : 1+end]; !seen[name] {
					seen[name] = true
					names = append(names, name)
				}
			case braces > 0 || brackets > 0 || listDepth > 0:
				// A label name, a duration's unit, a listed label.
			case labelListKeywords[lower] && call:
				skipList = true
			case call || promqlKeywords[lower]:
			default:
				if !seen[word] {
					seen[word] = true
					names = append(names, word)
				}
			}
		default:
			i++
		}
		if braces < 0 || brackets < 0 || parens < 0 {
			return nil, fmt.Errorf("unbalanced %q at %d", c, i-1)
		}
	}
	if braces != 0 || brackets != 0 || parens != 0 {
		return nil, fmt.Errorf("unbalanced: %d {, %d [, %d (", braces, brackets, parens)
	}
	return names, nil
}

func TestPromQLMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`rate(a_total{job=~"$job", x!="}{"}[$__rate_interval])`, []string{"a_total"}},
		{`histogram_quantile(0.99, sum by (le, backend) (rate(h_bucket{le!="+Inf"}[5m])))`, []string{"h_bucket"}},
		{`sum without (le) (rate(h_count[5m] offset 1h)) / ignoring(code) group_left(instance) b`, []string{"h_count", "b"}},
		{"sum(x) by (job) > 1/60 and on (job) y # a comment naming z\n or level:z:ratio < 0.5", []string{"x", "y", "level:z:ratio"}},
		{`(a * $price_in + b * ${price_out}) * 86400 / 1e6 + max_over_time(c[1h30m:5m])`, []string{"a", "b", "c"}},
		{`label_replace(m, "dst", "$1", "src", "(.*)") unless SUM BY (x) (n) == bool 0`, []string{"m", "n"}},
		{`sum(rate({__name__="toolgate_cache_hit_total", job="x"}[5m])) / q`, []string{"toolgate_cache_hit_total", "q"}},
	} {
		got, err := promqlMetricNames(tc.expr)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.expr, got, err, tc.want)
		}
	}
	for _, bad := range []string{`rate(x[5m]`, `x{a="b"`, `x{a="b}`, `{__name__=~"toolgate_.*"}`, `{__name__!="x"}`} {
		if got, err := promqlMetricNames(bad); err == nil {
			t.Errorf("%s: %q, want an error", bad, got)
		}
	}
}

// exportedMetrics serves toolgate in process with its metrics listener on
// and a classifier backend on the fake model, makes one check the
// classifier decides and one decided locally, scrapes /metrics and
// returns the names a query can select: each family's name, and for a
// histogram its _bucket, _sum and _count series (a summary's _sum and
// _count).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	fake := fakellm.Start(t, nil)
	// The centre has an approvals store and a webhook, whose metrics it
	// exports only then.
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(hook.Close)
	t.Setenv("TOOLGATE_DEPLOY_TEST_WEBHOOK", hook.URL)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfgFile, []byte("approvals:\n  sqlite_path: "+filepath.Join(dir, "approvals.db")+"\n  webhook: {url_env: TOOLGATE_DEPLOY_TEST_WEBHOOK}\npolicies:\n  default: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := app.LoadConfig(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(cfg, app.WithOverrides(func(c *app.Config) error {
		c.Server.Listen = "127.0.0.1:0"
		c.Server.MetricsListen = "127.0.0.1:0"
		c.Classifier.Backends = []classifier.BackendConfig{{Name: "fake", BaseURL: fake.URL(), Model: "fake", APIKeyEnv: "TOOLGATE_DEPLOY_TEST_NO_KEY"}}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("toolgate: %v", err)
		}
	})
	conn, client, err := inproc.Dial(a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	project, err := workload.NewProject(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	local := workload.Local(project)[0]
	for _, call := range []workload.Call{local, workload.Classified(project, 0)} {
		cctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		resp, err := client.Check(cctx, call.Req)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", call.Name, err)
		}
		if resp.GetSource() != call.Source || resp.GetDecision() != call.Want {
			t.Fatalf("%s: %v from %v, want %v from %v", call.Name, resp.GetDecision(), resp.GetSource(), call.Want, call.Source)
		}
	}

	// A local server whose upstream is that one exports its own: the
	// upstream's calls and policy sets.
	lcfg, err := app.LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	lapp, err := app.New(lcfg, app.WithOverrides(func(c *app.Config) error {
		c.Server.Listen = "127.0.0.1:0"
		c.Server.MetricsListen = "127.0.0.1:0"
		c.Upstream.Address, c.Upstream.StateDir = a.Addr().String(), t.TempDir()
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	lctx, lstop := context.WithCancel(context.Background())
	ldone := make(chan error, 1)
	go func() { ldone <- lapp.Run(lctx) }()
	t.Cleanup(func() {
		lstop()
		if err := <-ldone; err != nil {
			t.Errorf("local toolgate: %v", err)
		}
	})
	lconn, lclient, err := inproc.Dial(lapp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer lconn.Close()
	call := workload.Classified(project, 1)
	cctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	resp, err := lclient.Check(cctx, call.Req)
	cancel()
	if err != nil || resp.GetSource() != call.Source {
		t.Fatalf("through the local server: %v, %v (want source %v)", resp, err, call.Source)
	}

	// The gRPC counters are counted as the call returns: wait for them.
	var names map[string]bool
	deadline := time.Now().Add(10 * time.Second)
	for {
		names = scrapeNames(t, "http://"+a.MetricsAddr().String()+"/metrics")
		if names["grpc_server_handled_total"] && names["toolgate_classifier_tokens_total"] || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	maps.Copy(names, scrapeNames(t, "http://"+lapp.MetricsAddr().String()+"/metrics"))
	return names
}

// scrapeNames fetches a Prometheus text exposition and returns the names
// its # TYPE lines declare, with a histogram's and a summary's series.
func scrapeNames(t *testing.T, url string) map[string]bool {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" {
			continue
		}
		name := f[2]
		switch f[3] {
		case "histogram":
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case "summary":
			names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
		default:
			names[name] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestMonitoringNamesExportedMetrics: every metric the dashboard, the
// rules and the documentation's promql examples select is one a real server
// exports (a renamed metric would otherwise leave an empty panel and an
// alert that never fires), and the dashboard shows every toolgate_ metric.
func TestMonitoringNamesExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	for _, want := range []string{
		"toolgate_decisions_total", "toolgate_classifier_requests_total", "toolgate_classifier_duration_seconds_bucket",
		"toolgate_classifier_tokens_total", "toolgate_classifier_breaker_state", "grpc_server_handled_total",
		"toolgate_upstream_requests_total", "toolgate_upstream_policy_updates_total",
		"toolgate_approvals_pending", "toolgate_approvals_outcomes_total", "toolgate_approvals_webhook_messages_total",
	} {
		if !exported[want] {
			t.Fatalf("the scrape lacks %s: the server did not reach the classifier? got %q", want, slices.Sorted(maps.Keys(exported)))
		}
	}

	used := map[string]bool{}
	check := func(what string, qs []dashboardQuery) {
		for _, q := range qs {
			names, err := promqlMetricNames(q.expr)
			if err != nil {
				t.Errorf("%s %s: %v: %s", what, q.where, err, q.expr)
			}
			if len(names) == 0 {
				t.Errorf("%s %s selects no metric: %s", what, q.where, q.expr)
			}
			for _, n := range names {
				if what == "dashboard" {
					used[n] = true
				}
				if !exported[n] {
					t.Errorf("%s %s: %s is not a metric toolgate exports: %s", what, q.where, n, q.expr)
				}
			}
		}
	}
	check("dashboard", loadDashboard(t).queries(t))
	check("documentation", docQueries(t))

	rules := loadRules(t)
	recorded := map[string]bool{}
	for _, r := range rules {
		if r.Record != "" {
			recorded[r.Record] = true
		}
	}
	for _, r := range rules {
		names, err := promqlMetricNames(r.Expr)
		if err != nil {
			t.Errorf("%s %s%s: %v", alertsFile, r.Alert, r.Record, err)
		}
		for _, n := range names {
			if !exported[n] && !recorded[n] {
				t.Errorf("%s %s%s: %s is neither a metric toolgate exports nor a recorded one: %s", alertsFile, r.Alert, r.Record, n, r.Expr)
			}
		}
	}

	for n := range exported {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")
		if !strings.HasPrefix(n, "toolgate_") || used[n] || used[base+"_bucket"] || used[base+"_count"] {
			continue
		}
		t.Errorf("the dashboard does not show %s", n)
	}
}
