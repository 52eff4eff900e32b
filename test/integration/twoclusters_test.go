package integration

import (
	"slices"
	"strings"
	"testing"

	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// TestTwoClustersOneRouterNoConsentNoSharing: two clusters, each with an apiserver of its own,
// share one router. A name one of them holds is refused to the other, on both sides in turn,
// as a HostnameConflict naming the holder: nobody adds an address to another cluster's name
// without that cluster's consent, and the holder's entry is never touched.
func TestTwoClustersOneRouterNoConsentNoSharing(t *testing.T) {
	a := newHarness(t, options{cluster: "a", ipResolution: []string{"static:10.84.0.1"}, extraArgs: []string{"--cluster-id=aaaaaaa1"}})
	b := newHarness(t, options{cluster: "b", ipResolution: []string{"static:10.84.0.2"}, extraArgs: []string{"--cluster-id=bbbbbbb1"},
		server: a.srv, ownControlPlane: true})
	conflictOn := func(rep []registry.Conflict, host, holder string) bool {
		for _, c := range rep {
			if c.Hostname == host && c.Winner == "cluster "+holder && c.Reason == registry.ReasonHostnameConflict {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		host                  string
		holder, other         *harness
		holderName, otherName string
	}{
		{"first.two.lan", a, b, "a", "b"},
		{"second.two.lan", b, a, "b", "a"},
	} {
		tc.holder.create(ingress(tc.holder.ns, strings.Split(tc.host, ".")[0], enabled(), tc.host))
		tc.holder.waitHost(tc.host, map[string]string{"a": "10.84.0.1", "b": "10.84.0.2"}[tc.holderName])
		tc.holder.sync()
		held := tc.holder.one(tc.host)

		tc.other.create(ingress(tc.other.ns, strings.Split(tc.host, ".")[0], enabled(), tc.host))
		tc.other.waitHost(tc.host, map[string]string{"a": "10.84.0.1", "b": "10.84.0.2"}[tc.otherName])
		rep := tc.other.sync()
		if !conflictOn(rep.Conflicts, tc.host, tc.holderName) {
			t.Errorf("%s: cluster %s's conflicts %+v, want the name held by cluster %s", tc.host, tc.otherName, rep.Conflicts, tc.holderName)
		}
		if again := tc.holder.sync(); slices.ContainsFunc(again.Conflicts, func(c registry.Conflict) bool { return c.Hostname == tc.host }) || len(again.Changes) != 0 {
			t.Errorf("%s: the holder, cluster %s, now has conflicts %+v and changes %v", tc.host, tc.holderName, again.Conflicts, again.Changes)
		}
		if e := tc.holder.one(tc.host); e.ID != held.ID || e.Version != held.Version || e.IP != held.IP {
			t.Errorf("%s: the holder's entry became %v, was %v", tc.host, e, held)
		}
	}
}
