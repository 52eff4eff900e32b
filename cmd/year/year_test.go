package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
)

// TestAShortYear plays twelve days of a small homelab through the operator on the test server,
// with and without compaction: every measurement day checks that the operator's entries are
// exactly the cluster's names and that the person's lines and tag are as they left them
// (across a rename, redeploys and every kind of hand edit). With compaction every deleted
// entry of the operator's is down to one event once read back (but those marked when the
// cluster was renamed), and the person's own deleted line keeps its history; without it, the
// log is longer. The table names each measurement.
func TestAShortYear(t *testing.T) {
	m := mix{Live: 12, Replaced: 2, Previews: 2, Moves: 2, RedeployEvery: 3, HandEvery: 2, RenameOn: 5}
	events := map[bool]int{}
	for _, compact := range []bool{false, true} {
		t.Run("compaction "+onOff(compact), func(t *testing.T) {
			cp, err := kubetest.Start(filepath.Join("..", "..", "kustomize", "crds"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cp.Stop() })
			dir := t.TempDir()
			kubeconfig := filepath.Join(dir, "kubeconfig")
			if err := cp.WriteKubeconfig(kubeconfig); err != nil {
				t.Fatal(err)
			}
			rt, err := startTest(filepath.Join(dir, "router"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rt.stop)
			log := logrus.New()
			log.SetLevel(logrus.ErrorLevel)
			r := &run{compact: compact, mix: m, days: 12, every: 4, seed: 3, kubeconfig: kubeconfig, kube: cp.Client, router: rt, log: log}
			periods, err := r.year(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if days := []int{periods[0].day, periods[1].day, periods[2].day, periods[len(periods)-1].day}; len(periods) != 5 || days[3] != 12 {
				t.Fatalf("measured on days %v (%d), want 0, 1, 4, 8, 12", days, len(periods))
			}
			l, err := rt.log(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			events[compact] = l.events()
			live := map[string]bool{}
			for _, e := range rt.srv.Store().Live() {
				live[strings.ToUpper(e.GetId())] = true
			}
			long := 0
			for id, n := range l.eventsOf {
				if !live[id] && n > 1 {
					long++
				}
			}
			// The person added and removed one line of their own: that aggregate is not the
			// operator's to fold. Nor are the entries marked when the rename came, which go
			// under the former name (docs/ownership.md, "Compaction"): the rename day's removes.
			if renamedAway := m.Replaced + m.Previews; compact && (long < 1 || long > 1+renamedAway) {
				t.Errorf("%d deleted aggregates hold more than one event, want the person's own line and at most the %d marked at the rename", long, renamedAway)
			}
			if !compact && long < 20 {
				t.Errorf("without compaction only %d deleted aggregates hold more than one event", long)
			}
			var out bytes.Buffer
			writeTable(&out, result{compact: compact, periods: periods})
			if rows := strings.Count(out.String(), "\n| "); rows != 7 {
				t.Errorf("the table has %d rows, want the heading, the 5 measurements and the fresh server's:\n%s", rows, out.String())
			}
		})
	}
	if events[true] >= events[false] {
		t.Errorf("the log holds %d events with compaction and %d without", events[true], events[false])
	}
}

// TestTheServersShareAlone: the tombstones run leaves one event of each deleted entry after the
// compaction and prints a row a step.
func TestTheServersShareAlone(t *testing.T) {
	o := options{server: "test", dir: t.TempDir(), mix: mix{Live: 5}}
	var out bytes.Buffer
	if err := o.tombstones(context.Background(), []int{0, 20}, &out); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"| 0 | 5 |", "| 20 | 25 |"} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("no row %q in\n%s", row, out.String())
		}
	}
}
