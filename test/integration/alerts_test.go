package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// promtool is the promtool make test builds.
func promtool(t *testing.T) string { return builtTool(t, "PROMTOOL", "") }

func alertsFile() string { return filepath.Join(chartDir(), "files", "alerts.yaml") }

// TestAlertsFireWhenTheyShould: promtool checks the rules (each expression parses as PromQL)
// and runs their unit tests, series that fire each alert and series that must not.
func TestAlertsFireWhenTheyShould(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", alertsFile()}, {"test", "rules", filepath.Join(chartDir(), "files", "alerts_test.yaml")}} {
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// kustomize users get the same groups as a PrometheusRule.
	var chart, kust struct {
		Spec   any `json:"spec"`
		Groups any `json:"groups"`
	}
	for f, into := range map[string]any{alertsFile(): &chart, filepath.Join(repoRoot(), "kustomize", "monitoring", "prometheusrule.yaml"): &kust} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if !reflect.DeepEqual(map[string]any{"groups": chart.Groups}, kust.Spec) {
		t.Error("kustomize/monitoring/prometheusrule.yaml's spec is not the chart's files/alerts.yaml")
	}
}

// metricName finds the operator's metric names, and its Go and process collectors', in a PromQL
// expression.
var metricName = regexp.MustCompile(`\b(router_hosts_operator|go|process)_[a-z0-9_]+`)

// dashboardExprs are the PromQL expressions of the chart's Grafana dashboard, with its
// variables replaced by values a query could have.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir(), "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ RefID, Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$namespace", ".*")
	out := map[string]string{}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			out[p.Title+" "+tg.RefID] = vars.Replace(tg.Expr)
		}
	}
	if len(out) < 10 {
		t.Fatalf("the dashboard has %d queries", len(out))
	}
	return out
}

// TestDashboardQueriesParse: every query of the dashboard parses as PromQL (promtool checks
// them as recording rules).
func TestDashboardQueriesParse(t *testing.T) {
	bin := promtool(t)
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for name, expr := range dashboardExprs(t) {
		rules = append(rules, rule{Record: "dashboard:query" + strconv.Itoa(len(rules)), Expr: expr})
		t.Logf("%s: %s", name, expr)
	}
	doc, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "dashboard.rules.yaml")
	if err := os.WriteFile(f, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "rules", f).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
}

// TestAlertsAndDashboardNameOnlyExportedMetrics: every metric an alert or a dashboard panel
// names is one a running operator exports, so a renamed metric cannot leave an alert that never
// fires or a panel that stays empty.
func TestAlertsAndDashboardNameOnlyExportedMetrics(t *testing.T) {
	h := newHarness(t, options{})
	seed(t, h, endpoint.Record{Hostname: "theirs.lan", IP: "10.41.9.9", Tags: []string{"k8s-operator", "cluster:other"}})
	p := startOperator(t, h, kubeconfig, "--interval=1s", "--min-event-sync-interval=100ms")
	h.create(ingress(h.ns, "web", enabled("ip-address", "10.41.0.1"), "web.lan"))
	waitFor(t, 10*time.Second, func() bool { return p.metric(t, "router_hosts_operator_change_latency_seconds_count") >= 1 })
	body, err := p.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			exported[f[2]] = true
			if f[3] == "histogram" {
				for _, s := range []string{"_bucket", "_count", "_sum"} {
					exported[f[2]+s] = true
				}
			}
		}
	}
	raw, err := os.ReadFile(alertsFile())
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	exprs := dashboardExprs(t)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs["alert "+r.Alert] = r.Expr
		}
	}
	n := 0
	for name, expr := range exprs {
		names := metricName.FindAllString(expr, -1)
		if len(names) == 0 {
			t.Errorf("%s names none of the operator's metrics: %s", name, expr)
		}
		for _, m := range names {
			n++
			if !exported[m] {
				t.Errorf("%s names %s, which the operator does not export", name, m)
			}
		}
	}
	if n < 20 {
		t.Fatalf("found %d metric names in the alerts and the dashboard", n)
	}
}

// runbookBase is where files/alerts.yaml's runbook_url links lead: docs/operations.md on main.
const runbookBase = "https://github.com/router-hosts-operator/router-hosts-operator/blob/main/docs/operations.md"

// alertRule is one rule of files/alerts.yaml.
type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// alertRules are files/alerts.yaml's rules by alert name (an alert may have several, as the
// certificate's warning and critical ones).
func alertRules(t *testing.T) map[string][]alertRule {
	t.Helper()
	raw, err := os.ReadFile(alertsFile())
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct{ Rules []alertRule }
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	out := map[string][]alertRule{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = append(out[r.Alert], r)
		}
	}
	if len(out) < 10 {
		t.Fatalf("files/alerts.yaml has %d alerts", len(out))
	}
	return out
}

// githubAnchor is the anchor GitHub gives a Markdown heading: lower case, punctuation other
// than hyphens dropped, spaces turned into hyphens.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestEveryAlertLinksItsRunbook: every alert carries a runbook_url into docs/operations.md
// whose anchor is a heading of that page, its own (the alert's name), and that section says
// what the alert means, what to check and what to do.
func TestEveryAlertLinksItsRunbook(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{} // anchor -> the section's text, up to the next heading
	anchor := ""
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "#") {
			anchor = githubAnchor(strings.TrimLeft(line, "#"))
			sections[anchor] = ""
			continue
		}
		if anchor != "" {
			sections[anchor] += line + "\n"
		}
	}
	for name, rules := range alertRules(t) {
		for _, r := range rules {
			url := r.Annotations["runbook_url"]
			base, frag, ok := strings.Cut(url, "#")
			if !ok || base != runbookBase {
				t.Errorf("%s: runbook_url %q is not %s#<anchor>", name, url, runbookBase)
				continue
			}
			body, found := sections[frag]
			switch {
			case !found:
				t.Errorf("%s: runbook_url's anchor #%s is no heading of docs/operations.md", name, frag)
			case frag != strings.ToLower(name):
				t.Errorf("%s: runbook_url leads to #%s, not its own section", name, frag)
			default:
				for _, part := range []string{"**Means:**", "**Check:**", "**Do:**"} {
					if !strings.Contains(body, part) {
						t.Errorf("%s's runbook lacks %s", name, part)
					}
				}
			}
		}
	}
}
