//go:build unix

package main

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/router-hosts-operator/router-hosts-operator/explain"
	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
)

// The example workflow of examples/ci, run step by step as GitHub's runner runs it: each `run:`
// script with bash as `shell: bash` starts it, in a GitOps repository laid out as the workflow
// expects, with the environment its `env:` blocks give, each step's outputs read back from
// $GITHUB_OUTPUT, and a failing step skipping the ones after it. Two steps are not run: the
// checkout (the repository is already here) and the download of the release, whose place the
// binary built from this checkout takes on PATH. kubectl is the real one of the envtest
// assets. The one stand-in is gh, since GitHub cannot be reached: a script that records its
// arguments and keeps each pull request's comments, their bodies as posted, as GitHub would.

const ciWorkflow = "examples/ci/router-hosts-plan.yaml"

// stepTimeout bounds one step; the slowest, the plan, takes seconds.
const stepTimeout = time.Minute

// notRun are the workflow's steps the test does not run, by name (the checkout by its action).
var notRun = []string{"actions/checkout", "Install router-hosts-operator"}

type ciStep struct {
	ID   string            `json:"id"`
	Name string            `json:"name"`
	Uses string            `json:"uses"`
	Run  string            `json:"run"`
	If   string            `json:"if"`
	Env  map[string]string `json:"env"`
}

func (s ciStep) label() string { return cmp.Or(s.Name, s.Uses) }

type ciWorkflowFile struct {
	Env      map[string]string `json:"env"`
	Defaults struct {
		Run struct {
			Shell string `json:"shell"`
		} `json:"run"`
	} `json:"defaults"`
	Jobs map[string]struct {
		Env   map[string]string `json:"env"`
		Steps []ciStep          `json:"steps"`
	} `json:"jobs"`
}

// ghStandIn is gh for `gh pr view N --json comments --jq …` (it prints the body of the newest
// comment of the token's user, which is what the workflow's --jq picks) and `gh pr comment N
// --body-file F [--edit-last]` (it posts, or edits the newest, and fails as gh does when there
// is none to edit). It keeps each pull request's comments in $GH_STATE and records each call.
const ghStandIn = `#!/usr/bin/env bash
set -euo pipefail
[[ "${GH_TOKEN:-}" != "" && "${GH_REPO:-}" != "" && "${3:-}" =~ ^[0-9]+$ ]] || { echo "gh stand-in: want GH_TOKEN, GH_REPO and a pull request's number" >&2; exit 4; }
state="$GH_STATE/pr-$3"
mkdir -p "$state"
n=$(( $(cat "$state/calls" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$state/calls"
printf '%s\n' "$@" > "$state/call-$n.args"
comments=$(cat "$state/comments" 2>/dev/null || echo 0)
case "$1 $2" in
  "pr view")
    if (( comments > 0 )); then cat "$state/comment-$comments"; fi ;;
  "pr comment")
    body="" edit=""
    shift 3
    while (( $# )); do
      case "$1" in
        --body-file) body="$2"; shift 2 ;;
        --edit-last) edit=1; shift ;;
        *) echo "gh stand-in: unexpected argument $1" >&2; exit 4 ;;
      esac
    done
    if [[ -n "$edit" ]]; then
      (( comments > 0 )) || { echo "no comments found for current user" >&2; exit 1; }
    else
      comments=$(( comments + 1 )); echo "$comments" > "$state/comments"
    fi
    cp "$body" "$state/comment-$comments" ;;
  *) echo "gh stand-in: unexpected command $1 $2" >&2; exit 4 ;;
esac
`

// ciRun is what one run of the job did.
type ciRun struct {
	exits   map[string]int // by step, for the steps that ran
	failed  string         // the step that failed the job, "" when it passed
	log     string
	summary string // $GITHUB_STEP_SUMMARY
}

// TestTheCIExampleWorkflowPlansAPullRequest runs the example workflow on pull requests' pushes:
// the cluster as it is (no change: no comment), a push that adds a name (exit 1, the plan
// posted), one whose name another namespace holds (exit 3, the same comment edited with the
// refusal, and the check failed only when FAIL_ON_REFUSAL says so), a plan longer than a
// comment (its summary and a link), and a snapshot of another router (exit 2: the job fails,
// nothing is posted).
func TestTheCIExampleWorkflowPlansAPullRequest(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: the workflow runs kubectl kustomize with the envtest assets' kubectl; run through make test (or make unit), which builds them")
	}
	kubectl := filepath.Join(assets, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("KUBEBUILDER_ASSETS=%s has no kubectl: %v (hack/envtest-assets.sh builds it)", assets, err)
	}

	raw, err := os.ReadFile(ciWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	var wf ciWorkflowFile
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatalf("%s: %v", ciWorkflow, err)
	}
	if wf.Defaults.Run.Shell != "bash" {
		t.Fatalf("%s runs its steps with shell %q; the test runs them as shell: bash does", ciWorkflow, wf.Defaults.Run.Shell)
	}
	if len(wf.Jobs) != 1 {
		t.Fatalf("%s has %d jobs, want the one plan job", ciWorkflow, len(wf.Jobs))
	}
	var job struct {
		Env   map[string]string
		Steps []ciStep
	}
	for _, j := range wf.Jobs {
		job.Env, job.Steps = j.Env, j.Steps
	}
	for _, name := range notRun {
		if !slices.ContainsFunc(job.Steps, func(s ciStep) bool { return s.label() == name || strings.HasPrefix(s.Uses, name+"@") }) {
			t.Fatalf("%s has no step %q, which the test leaves out: a renamed step would run here", ciWorkflow, name)
		}
	}
	for _, s := range job.Steps {
		if s.Uses != "" {
			if problem := checkUses(s.Uses, usesComment(raw, s.Uses)); problem != "" {
				t.Errorf("%s: uses %s: %s", ciWorkflow, s.Uses, problem)
			}
		}
		if s.If != "" {
			t.Errorf("%s: step %q has if: %s; keep its condition in its run: script, which the test runs", ciWorkflow, s.label(), s.If)
		}
		if strings.Contains(s.Run, "${{") {
			t.Errorf("%s: step %q expands an expression in its script; give it as env: instead (the test runs the script as written)", ciWorkflow, s.label())
		}
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "router-hosts-operator"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := os.Symlink(kubectl, filepath.Join(bin, "kubectl")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "gh"), []byte(ghStandIn), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := gitopsRepo(t, filepath.Join(dir, "repo"))
	ghState := filepath.Join(dir, "gh")
	if err := os.Mkdir(ghState, 0o755); err != nil {
		t.Fatal(err)
	}
	ours := snapshot(t, "home", "0a1b2c3d")

	// run runs the job on pull request pr's push.
	run := func(t *testing.T, pr int, snapshotSecret string, env map[string]string) ciRun {
		t.Helper()
		expr := map[string]string{
			"secrets.ROUTER_HOSTS_SNAPSHOT":    snapshotSecret,
			"github.token":                     "test-token",
			"github.repository":                "home/gitops",
			"github.event.pull_request.number": fmt.Sprint(pr),
		}
		return runJob(t, wf.Env, job.Env, job.Steps, env, expr, repo, bin, ghState)
	}
	// comments, calls and lastBody are what the gh stand-in kept of pull request pr.
	count := func(pr int, file string) int {
		b, _ := os.ReadFile(filepath.Join(ghState, fmt.Sprintf("pr-%d", pr), file))
		var n int
		_, _ = fmt.Sscan(string(b), &n) // none yet: 0
		return n
	}
	comments := func(pr int) int { return count(pr, "comments") }
	calls := func(pr int) []string {
		var out []string
		for i := 1; i <= count(pr, "calls"); i++ {
			a, _ := os.ReadFile(filepath.Join(ghState, fmt.Sprintf("pr-%d/call-%d.args", pr, i)))
			out = append(out, strings.Join(strings.Fields(string(a)), " "))
		}
		return out
	}
	lastBody := func(t *testing.T, pr int) string {
		t.Helper()
		n := comments(pr)
		if n == 0 {
			t.Fatal("nothing was commented")
		}
		b, err := os.ReadFile(filepath.Join(ghState, fmt.Sprintf("pr-%d/comment-%d", pr, n)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// Pull request 6 changes nothing the operator reads; 7 is pushed to several times, each push
	// on the one before; 8 adds many objects.
	t.Run("the cluster as it is: no change, no comment", func(t *testing.T) {
		r := run(t, 6, ours, nil)
		if r.failed != "" || r.exits["Plan"] != 0 {
			t.Fatalf("the plan of the repository as the router has it: exit %d, job failed at %q; want exit 0 and the job passed\n%s\n%s", r.exits["Plan"], r.failed, r.log, r.summary)
		}
		if comments(6) != 0 {
			t.Errorf("a plan with no change was commented on a pull request that had no plan yet: %q", calls(6))
		}
	})

	t.Run("a push adds a name: exit 1, the plan commented", func(t *testing.T) {
		writeFile(t, filepath.Join(repo, "clusters/home/apps/whoami.yaml"), exampleDoc(t, "examples/20-ingresses.yaml", "name: whoami"))
		addResource(t, repo, "whoami.yaml")
		r := run(t, 7, ours, nil)
		if r.failed != "" || r.exits["Plan"] != 1 {
			t.Fatalf("exit %d, job failed at %q; want exit 1 and the job passed\n%s", r.exits["Plan"], r.failed, r.log)
		}
		if got := calls(7); len(got) != 2 || !strings.HasPrefix(got[0], "pr view 7 ") || got[1] != "pr comment 7 --body-file comment.md" {
			t.Errorf("gh was called %q; want the comments read, then one posted", got)
		}
		body := lastBody(t, 7)
		if !strings.HasPrefix(body, "### router-hosts plan\n") {
			t.Errorf("the comment does not start with the plan's heading:\n%s", body)
		}
		if d := diffBlock(body, "Ingress default/whoami"); !strings.Contains(d, "\n+ whoami.home.arpa → 192.168.1.50") {
			t.Errorf("the comment has no + whoami.home.arpa line in Ingress default/whoami's diff block (%q):\n%s", d, body)
		}
		if !regexp.MustCompile(`(?m)^\*\*Plan: 1 to create, `).MatchString(body) {
			t.Errorf("the comment has no bold summary of one create:\n%s", body)
		}
		if !strings.Contains(r.summary, body) {
			t.Errorf("the job's summary is not the plan:\n%s", r.summary)
		}
	})

	t.Run("a name another namespace holds: exit 3, the comment edited", func(t *testing.T) {
		writeFile(t, filepath.Join(repo, "clusters/home/apps/print-server.yaml"), `# The printer's name, which the HostMapping default/printer holds, claimed from another namespace.
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: print-server
  namespace: media
  annotations:
    router-hosts.fzymgc.house/enabled: "true"
    router-hosts.fzymgc.house/ip-address: "192.168.1.31"
spec:
  rules:
    - host: printer.home.arpa
`)
		addResource(t, repo, "print-server.yaml")
		before := len(calls(7))
		// The secret as the README's second form: gzipped, in base64.
		r := run(t, 7, gzipBase64(t, ours), nil)
		if r.failed != "" || r.exits["Plan"] != 3 {
			t.Fatalf("exit %d, job failed at %q; want exit 3 and the job passed (FAIL_ON_REFUSAL is false by default)\n%s", r.exits["Plan"], r.failed, r.log)
		}
		if got := calls(7)[before:]; len(got) != 2 || got[1] != "pr comment 7 --edit-last --body-file comment.md" {
			t.Errorf("gh was called %q; want the plan's comment edited", got)
		}
		if comments(7) != 1 {
			t.Errorf("%d comments on the pull request; want the plan's one, edited", comments(7))
		}
		body := lastBody(t, 7)
		d := diffBlock(body, "Ingress media/print-server")
		if !strings.Contains(d, "\n! printer.home.arpa: HostnameConflict: ") || !strings.Contains(d, "namespace default") {
			t.Errorf("the comment has no ! line for printer.home.arpa naming its holder in Ingress media/print-server's diff block (%q):\n%s", d, body)
		}
		if !strings.Contains(diffBlock(body, "Ingress default/whoami"), "\n+ whoami.home.arpa") {
			t.Errorf("the edited comment lost the pull request's other change:\n%s", body)
		}

		r = run(t, 7, ours, map[string]string{"FAIL_ON_REFUSAL": "true"})
		if r.exits["Plan"] != 3 || r.failed != "Refusals fail the check" {
			t.Errorf("FAIL_ON_REFUSAL=true: exit %d, job failed at %q; want exit 3 and the job failed by its last step\n%s", r.exits["Plan"], r.failed, r.log)
		}
		if comments(7) != 1 || !strings.Contains(lastBody(t, 7), "\n! printer.home.arpa") {
			t.Errorf("%d comments, the last without the refusal: the check must fail after the comment is edited", comments(7))
		}
	})

	t.Run("a plan longer than a comment: its summary and a link", func(t *testing.T) {
		// 900 new names: a line and a heading each.
		var many strings.Builder
		for i := range 900 {
			fmt.Fprintf(&many, "---\napiVersion: router-hosts.fzymgc.house/v1alpha1\nkind: HostMapping\nmetadata: {name: svc-%03d, namespace: media}\n"+
				"spec: {hostname: svc-%03d.home.arpa, ipAddress: 192.168.7.1}\n", i, i)
		}
		writeFile(t, filepath.Join(repo, "clusters/home/apps/many.yaml"), many.String())
		addResource(t, repo, "many.yaml")
		t.Cleanup(func() { removeResource(t, repo, "many.yaml") })
		r := run(t, 8, ours, nil)
		if r.failed != "" || r.exits["Plan"] == 0 {
			t.Fatalf("exit %d, job failed at %q; want a plan with changes and the job passed\n%s", r.exits["Plan"], r.failed, r.log)
		}
		if len(r.summary) <= 65536 || !strings.Contains(r.summary, "#### HostMapping media/svc-899 ") {
			t.Fatalf("the plan is %d bytes, without the last HostMapping; the test wants one longer than a comment", len(r.summary))
		}
		body := lastBody(t, 8)
		head := strings.SplitAfterN(r.summary, "\n", 4)
		want := strings.Join(head[:3], "") + "The whole plan is too long for a comment: it is in the [run's summary](https://github.com/home/gitops/actions/runs/1234).\n"
		if body != want {
			t.Errorf("the comment of a long plan is\n%s\nwant\n%s", body, want)
		}
	})

	t.Run("a snapshot of another router: exit 2 fails the job", func(t *testing.T) {
		before := len(calls(7))
		r := run(t, 7, snapshot(t, "cabin", "77777777"), nil)
		if r.failed != "Plan" || r.exits["Plan"] != 2 {
			t.Fatalf("exit %d, job failed at %q; want exit 2 failing the Plan step\n%s", r.exits["Plan"], r.failed, r.log)
		}
		if !strings.Contains(r.log, "the snapshot has no entry of cluster home") {
			t.Errorf("the job's log does not say why the plan failed:\n%s", r.log)
		}
		if got := calls(7)[before:]; len(got) != 0 {
			t.Errorf("gh was called after the plan failed: %q", got)
		}
	})
}

// runJob runs the steps as GitHub's runner does, but the ones notRun, in repo, and says what
// happened. wfEnv, jobEnv and each step's env are laid over each other, then over the test's
// environment (less the operator's own variables and any kubeconfig, which must not steer the
// plan); override is laid over the workflow's env as a user editing it would. An expression
// ${{ … }} of an env value is looked up in expr, or is a step's output.
func runJob(t *testing.T, wfEnv, jobEnv map[string]string, steps []ciStep, override, expr map[string]string, repo, bin, ghState string) ciRun {
	t.Helper()
	tmp := t.TempDir()
	summary := filepath.Join(tmp, "summary.md")
	if err := os.WriteFile(summary, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var base []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "ROUTER_HOSTS_OPERATOR_") && !strings.HasPrefix(k, "GITHUB_") && !strings.HasPrefix(k, "GH_") && k != "KUBECONFIG" && k != "PATH" {
			base = append(base, kv)
		}
	}
	base = append(base, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GH_STATE="+ghState, "CI=true", "GITHUB_ACTIONS=true",
		"RUNNER_TEMP="+tmp, "GITHUB_WORKSPACE="+repo, "GITHUB_STEP_SUMMARY="+summary, "GITHUB_PATH="+filepath.Join(tmp, "path"),
		"GITHUB_ENV="+filepath.Join(tmp, "env"), "GITHUB_SERVER_URL=https://github.com", "GITHUB_REPOSITORY="+expr["github.repository"],
		"GITHUB_RUN_ID=1234", "HOME="+tmp)
	outputs := map[string]string{}
	resolve := func(v string) string {
		m := regexp.MustCompile(`^\$\{\{\s*([\w.-]+)\s*\}\}$`).FindStringSubmatch(v)
		switch {
		case !strings.Contains(v, "${{"):
			return v
		case m == nil:
			t.Fatalf("an env value the test cannot resolve: %s", v)
		}
		if out, ok := outputs[m[1]]; ok {
			return out
		}
		if s, ok := expr[m[1]]; ok {
			return s
		}
		if strings.HasPrefix(m[1], "steps.") {
			return "" // the output of a step that wrote none, as GitHub gives it
		}
		t.Fatalf("an env value the test gives no value: %s", v)
		return ""
	}
	r := ciRun{exits: map[string]int{}}
	var log strings.Builder
	for i, s := range steps {
		if slices.ContainsFunc(notRun, func(n string) bool { return s.label() == n || strings.HasPrefix(s.Uses, n+"@") }) {
			continue
		}
		if s.Run == "" {
			t.Fatalf("step %q has no run: script; the test runs scripts only", s.label())
		}
		env := slices.Clone(base)
		for _, layer := range []map[string]string{wfEnv, override, jobEnv, s.Env} {
			for k, v := range layer {
				env = append(env, k+"="+resolve(v))
			}
		}
		output := filepath.Join(tmp, fmt.Sprintf("output-%d", i))
		if err := os.WriteFile(output, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		env = append(env, "GITHUB_OUTPUT="+output)
		script := filepath.Join(tmp, fmt.Sprintf("step-%d.sh", i))
		if err := os.WriteFile(script, []byte(s.Run), 0o644); err != nil {
			t.Fatal(err)
		}
		// A plan takes seconds; a hang fails here, not at the test binary's timeout, and takes
		// the script's children (the plan) with it, which would hold its output open.
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", script) // shell: bash
		cmd.Dir, cmd.Env = repo, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 5 * time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		fmt.Fprintf(&log, "::group::%s\n%s", s.label(), out.String())
		code := 0
		var exit *exec.ExitError
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			t.Fatalf("step %q did not end in %s:\n%s", s.label(), stepTimeout, log.String())
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			t.Fatalf("step %q: %v", s.label(), err)
		}
		r.exits[s.label()] = code
		if s.ID != "" {
			lines, _ := os.ReadFile(output)
			for _, l := range strings.Split(string(lines), "\n") {
				if k, v, ok := strings.Cut(l, "="); ok {
					outputs["steps."+s.ID+".outputs."+k] = v
				}
			}
		}
		if code != 0 {
			r.failed = s.label()
			break
		}
	}
	if v, ok := outputs["steps.plan.outputs.exit"]; ok {
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil {
			t.Fatalf("the Plan step's output exit=%q is not a number", v)
		}
		r.exits["Plan"] = n
	} else if _, ran := r.exits["Plan"]; !ran {
		t.Fatalf("the Plan step did not run:\n%s", log.String())
	}
	b, _ := os.ReadFile(summary)
	r.log, r.summary = log.String(), string(b)
	return r
}

// gitopsRepo lays out a GitOps repository as the workflow expects it: the cluster clusters/home,
// the operator installed from kustomize/ and the examples' namespaces, Traefik Service and
// HostMapping as its apps, which the router holds (snapshot).
func gitopsRepo(t *testing.T, repo string) string {
	t.Helper()
	home := filepath.Join(repo, "clusters", "home")
	writeFile(t, filepath.Join(home, "kustomization.yaml"), kustomization+"resources:\n  - router-hosts-operator\n  - apps\n")
	for _, f := range []string{"kustomization.yaml", "namespace.yaml", "crds/hostmapping.yaml", "crds/routerhostsconfig.yaml", "rbac.yaml", "deployment.yaml", "pdb.yaml"} {
		b, err := os.ReadFile(filepath.Join("kustomize", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(home, "router-hosts-operator", f), string(b))
	}
	apps := []string{"00-namespaces.yaml", "10-traefik-service.yaml", "30-hostmapping.yaml"}
	for _, f := range apps {
		b, err := os.ReadFile(filepath.Join("examples", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(home, "apps", f), string(b))
	}
	writeFile(t, filepath.Join(home, "apps", "kustomization.yaml"), kustomization+"resources:\n")
	for _, f := range apps {
		addResource(t, repo, f)
	}
	return repo
}

const kustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"

// addResource adds a file of clusters/home/apps to its kustomization, as the pull request does.
func addResource(t *testing.T, repo, file string) {
	t.Helper()
	p := filepath.Join(repo, "clusters/home/apps/kustomization.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, string(b)+"  - "+file+"\n")
}

// removeResource takes a file of clusters/home/apps out of its kustomization.
func removeResource(t *testing.T, repo, file string) {
	t.Helper()
	p := filepath.Join(repo, "clusters/home/apps/kustomization.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, strings.Replace(string(b), "  - "+file+"\n", "", 1))
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exampleDoc is the document of an example file that contains marker.
func exampleDoc(t *testing.T, file, marker string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		if strings.Contains(doc, "\n  "+marker+"\n") {
			return doc + "\n"
		}
	}
	t.Fatalf("%s has no document with %q", file, marker)
	return ""
}

// snapshot is the router as `list -o json` prints it after the operator of cluster (identity
// id) synced the repository's HostMapping default/printer: its entry, with the tags the
// operator writes (its heartbeat too, renewed a week ago, as a snapshot kept in a secret for a
// week holds it: the renewal the plan then sees is the operator's own and no change of the
// pull request's; the default --silent-cluster-after and --interval), beside a hand-made entry and another cluster's, which the plan leaves be.
func snapshot(t *testing.T, cluster, id string) string {
	t.Helper()
	quarter, interval := flagDefault(t, "silent-cluster-after")/4, flagDefault(t, "interval")
	owned := []string{"k8s-operator", "cluster:" + cluster, "cluster-id:" + id}
	doc := explain.ListJSON{Version: explain.Version, Entries: []explain.RouterEntry{
		{ID: "01JD8Z6Q0000000000000PR1NT", Hostname: "printer.home.arpa", Address: "192.168.1.30", Aliases: []string{"print.home.arpa"},
			Tags: append(slices.Clone(owned), "namespace:default", "kind:HostMapping", "source:3f1c2a9e-5b7d-4e08-9a61-0c2d4b6e8f10", "office",
				"alive:"+time.Now().Add(-7*24*time.Hour).UTC().Format(time.RFC3339), fmt.Sprintf("alive-every:%d", int(quarter.Seconds())),
				fmt.Sprintf("alive-interval:%d", int(interval.Seconds()))),
			Comment: "router-hosts-operator: HostMapping default/printer", Version: "4",
			Owner: explain.Whose{Class: "this", Cluster: cluster, ClusterID: id, Namespace: "default", Kinds: []string{"HostMapping"}, Words: "this cluster"}, State: explain.StateSynced},
		{ID: "01JD8Z6Q000000000000R0VTER", Hostname: "router.home.arpa", Address: "192.168.1.1", Version: "1",
			Owner: explain.Whose{Class: "hand-made", Words: "hand-made"}, State: "hand-made"},
		{ID: "01JD8Z6Q00000000000000NAS2", Hostname: "nas.home.arpa", Address: "192.168.1.10",
			Tags:    []string{"k8s-operator", "cluster:garage", "cluster-id:5e5e5e5e", "namespace:storage", "kind:Ingress", "source:9b0d7c1e-2f3a-4c5b-8d6e-7f8091a2b3c4"},
			Comment: "router-hosts-operator: Ingress storage/nas", Version: "2",
			Owner: explain.Whose{Class: "other-cluster", Cluster: "garage", ClusterID: "5e5e5e5e", Words: "cluster garage"}, State: "other-cluster"},
	}}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// flagDefault is the default of one of the operator's duration flags.
func flagDefault(t *testing.T, name string) time.Duration {
	t.Helper()
	model, err := operator.FlagModel()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range model.Flags {
		if f.Name == name && len(f.Default) == 1 {
			d, err := time.ParseDuration(f.Default[0])
			if err != nil {
				t.Fatalf("--%s's default: %v", name, err)
			}
			return d
		}
	}
	t.Fatalf("the operator has no --%s with one default", name)
	return 0
}

// gzipBase64 is s as `gzip | base64` writes it.
func gzipBase64(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	// Wrapped at 76 characters, as base64 writes it.
	enc := base64.StdEncoding.EncodeToString(b.Bytes())
	var lines []string
	for len(enc) > 76 {
		lines, enc = append(lines, enc[:76]), enc[76:]
	}
	return strings.Join(append(lines, enc), "\n") + "\n"
}

// diffBlock is the ```diff block under the markdown heading that names object ("" when none).
func diffBlock(md, object string) string {
	_, after, ok := strings.Cut(md, "#### "+object+" ")
	if !ok {
		return ""
	}
	if next := strings.Index(after, "\n#### "); next >= 0 {
		after = after[:next]
	}
	_, block, ok := strings.Cut(after, "```diff")
	if !ok {
		return ""
	}
	block, _, _ = strings.Cut(block, "```")
	return block
}

// usesComment is the comment beside a uses: line of a workflow: its release tag.
func usesComment(workflow []byte, ref string) string {
	for _, l := range strings.Split(string(workflow), "\n") {
		if m := usesLine.FindStringSubmatch(l); m != nil && m[1] == ref {
			return m[2]
		}
	}
	return ""
}
