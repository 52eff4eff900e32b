package integration

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestTwoClustersRacingForOneNameEndWithOneHolder forces the race: two clusters on one router
// claim one name, unshared, and each reads the router before the other has written, so both
// write it. The next syncs decide alike on both sides that the older entry's cluster holds the
// name: the other turns its claim down as a HostnameConflict and deletes its own entry at once,
// and the holder's stays as it is.
func TestTwoClustersRacingForOneNameEndWithOneHolder(t *testing.T) {
	a := newHarness(t, options{cluster: "a", ipResolution: []string{"static:10.83.0.1"}, extraArgs: []string{"--cluster-id=aaaaaaaa"}})
	b := newHarness(t, options{cluster: "b", ipResolution: []string{"static:10.83.0.2"}, server: a.srv, extraArgs: []string{"--cluster-id=bbbbbbbb"}})
	a.create(ingress(a.ns, "web", enabled(), "race.lan"))
	b.create(ingress(b.ns, "web", enabled(), "race.lan"))
	a.waitHost("race.lan", "10.83.0.1")
	b.waitHost("race.lan", "10.83.0.2")

	// b's first AddHost waits until a has read the router and written: both read it empty.
	var (
		once    sync.Once
		release = make(chan struct{})
		held    = make(chan struct{})
	)
	a.srv.Service().SetBefore(func(method string) error {
		if method == "AddHost" {
			once.Do(func() { close(held); <-release })
		}
		return nil
	})
	bDone := make(chan error, 1)
	go func() { _, err := b.ctrl.SyncOnce(context.Background()); bDone <- err }()
	<-held
	a.srv.Service().SetBefore(nil)
	a.sync()
	close(release)
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	if got := len(a.entries("race.lan")); got != 2 {
		t.Fatalf("%d entries of race.lan after the race, want both clusters' two", got)
	}
	first := a.entries("race.lan")
	slices.SortFunc(first, func(x, y endpoint.Record) int { return strings.Compare(x.ID, y.ID) })
	holder := "a"
	if onCluster(first[0], "b") {
		holder = "b"
	}

	ra, rb := a.sync(), b.sync()
	left := a.entries("race.lan")
	if len(left) != 1 || left[0].ID != first[0].ID || !onCluster(left[0], holder) {
		t.Fatalf("entries %v, want only the older one, cluster %s's", left, holder)
	}
	loser := map[string]bool{"a": len(ra.Conflicts) == 1, "b": len(rb.Conflicts) == 1}
	if loser[holder] || !loser[map[string]string{"a": "b", "b": "a"}[holder]] {
		t.Fatalf("conflicts a %v, b %v: want the other cluster's claim turned down", ra.Conflicts, rb.Conflicts)
	}
	for _, cs := range [][]registry.Conflict{ra.Conflicts, rb.Conflicts} {
		for _, c := range cs {
			if c.Reason != registry.ReasonHostnameConflict || c.Winner != "cluster "+holder {
				t.Errorf("conflict %+v: want a HostnameConflict held by cluster %s", c, holder)
			}
		}
	}
	// Settled: both syncs again write nothing.
	before := a.writes()
	a.sync()
	b.sync()
	if a.writes() != before {
		t.Errorf("%d writes once settled", a.writes()-before)
	}
}
