package integration

import (
	"errors"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestASlowClusterIsNeitherSilentNorReleasedWhileItRuns: two clusters on one router. home
// reports silence after 4s; lab, a cluster that syncs every 5s, renews its heartbeat every 5s (its
// threshold is 20s). While lab runs, home never reports it, though lab's heartbeat is often older
// than home's threshold. A person who runs release for lab with a probe wait shorter than lab
// takes to answer is refused before anything is written: lab would not have answered in time
// and would have lost its names. Once lab is uninstalled, home reports it when lab's own
// threshold is over, with a release command whose probe wait lab's interval answers in, and
// that command lets lab go, home's entries untouched.
func TestASlowClusterIsNeitherSilentNorReleasedWhileItRuns(t *testing.T) {
	home := newHarness(t, options{})
	lab := newHarness(t, options{server: home.srv})
	store := home.srv.Store()
	home.create(ingress(home.ns, "web", enabled("ip-address", "10.86.0.1"), "web.home.lan"))
	lab.create(ingress(lab.ns, "app", enabled("ip-address", "10.86.1.1"), "app.lab.lan"))
	lab.create(ingress(lab.ns, "db", enabled("ip-address", "10.86.1.2"), "db.lab.lan"))
	env := func(cluster string) map[string]string {
		return map[string]string{"KUBECONFIG": kubeconfig, "ROUTER_HOSTS_OPERATOR_CLUSTER_NAME": cluster}
	}
	h := startOperatorEnv(t, home, env("home"), "--cluster-id=0000aa01", "--interval=1s", "--silent-cluster-after=4s")
	l := startOperatorEnv(t, lab, env("lab"), "--cluster-id=0000bb01", "--interval=5s", "--silent-cluster-after=20s")
	labEntries := func() map[string]*pb.HostEntry {
		out := map[string]*pb.HostEntry{}
		for _, e := range store.List() {
			if slices.Contains(e.GetTags(), "cluster-id:0000bb01") {
				out[e.GetHostname()] = e
			}
		}
		return out
	}
	waitFor(t, 30*time.Second, func() bool { return len(labEntries()) == 2 && len(home.entries("web.home.lan")) == 1 })
	beats := false
	for _, e := range labEntries() {
		beats = beats || slices.Contains(e.GetTags(), registry.PrefixAliveEvery+"5") && slices.Contains(e.GetTags(), registry.PrefixAliveInterval+"5")
	}
	if !beats {
		t.Fatalf("lab's heartbeat does not carry its renewal period and interval: %v", labEntries())
	}

	// Both run for a while: lab's heartbeat grows older than home's 4s between its renewals.
	for start := time.Now(); time.Since(start) < 15*time.Second; time.Sleep(100 * time.Millisecond) {
		if v := h.metric(t, "router_hosts_operator_silent_clusters"); v != 0 {
			t.Fatalf("home reports %v silent clusters while lab runs:\n%s", v, h.logText())
		}
	}

	// A person releases lab with a short probe wait, lab still running: refused at once.
	before := labEntries()
	var out strings.Builder
	cmd := exec.Command(operatorBin, "release", "--cluster-name=lab", "--probe-wait=2s")
	cmd.Env, cmd.Stdout, cmd.Stderr = operatorEnv(lab), &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(out.String(), "its heartbeat says its operator syncs every 5s") ||
		!strings.Contains(out.String(), "run release again with --probe-wait=12.5s or longer") {
		t.Fatalf("release with a short wait beside a running lab: %v\n%s", err, out.String())
	}
	if got := labEntries(); len(got) != 2 || got["app.lab.lan"].GetVersion() != before["app.lab.lan"].GetVersion() ||
		got["db.lab.lan"].GetVersion() != before["db.lab.lan"].GetVersion() {
		t.Fatalf("the refused release wrote to lab's entries: %v, were %v", got, before)
	}

	// lab is uninstalled. home reports it once lab's own threshold is over, and not at its own.
	stop(t, l)
	stopped := time.Now()
	for time.Since(stopped) < 8*time.Second {
		if v := h.metric(t, "router_hosts_operator_silent_clusters"); v != 0 {
			t.Fatalf("home reports lab silent %s after it stopped, before lab's own threshold:\n%s", time.Since(stopped), h.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitFor(t, 30*time.Second, func() bool { return h.metric(t, "router_hosts_operator_silent_clusters") == 1 })
	m := regexp.MustCompile(`release="(router-hosts-operator release [^"]*)"`).FindStringSubmatch(h.logText())
	if m == nil || !strings.Contains(m[1], "--cluster-name=lab --cluster-id=0000bb01 --probe-wait=12.5s") {
		t.Fatalf("home's log names no release command with lab's probe wait:\n%s", h.logText())
	}

	// The person runs exactly that command: lab goes, home stays.
	homeBefore := home.entries("web.home.lan")
	out.Reset()
	cmd = exec.Command(operatorBin, strings.Fields(m[1])[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = operatorEnv(lab), &out, &out
	if err := cmd.Run(); err != nil || !strings.Contains(out.String(), "0 released, 2 deleted") {
		t.Fatalf("the release command home suggested: %v\n%s", err, out.String())
	}
	if got := labEntries(); len(got) != 0 {
		t.Fatalf("lab's entries after its release: %v", got)
	}
	if got := home.entries("web.home.lan"); len(got) != 1 || got[0].ID != homeBefore[0].ID {
		t.Fatalf("home's entry after lab's release: %v, was %v", got, homeBefore)
	}
}
