package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// Two clusters, each a real kube-apiserver and etcd of its own, share one router-hosts test
// server, as two homelab clusters share the router. Both keep the default cluster name, so they
// are namesakes told apart only by their identities. The test lives through what their users
// do, in order, and after each step asserts what reached the router: every write the server
// took is in a journal (the server's own write hook), so "nothing was written" and "exactly one
// write each" are exact, not sampled.

const (
	// nsGrace is both installations' --grace-period, nsInterval their --interval.
	nsGrace    = 3 * time.Second
	nsInterval = time.Second
)

func TestNamesakeClustersSharingOneRouter(t *testing.T) {
	srv, err := rhtestserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatalf("test server: %v", err)
	}
	t.Cleanup(srv.Stop)
	j := newWriteJournal(srv)
	cpB, kubeconfigB := ownControlPlane(t)
	a := newNamesakeInstall(t, "A", cp, kubeconfig, srv)
	b := newNamesakeInstall(t, "B", cpB, kubeconfigB, srv)

	// Three annotated Ingresses in each cluster, distinct hostnames.
	for i := 1; i <= 3; i++ {
		a.ingress(fmt.Sprintf("a%d", i), fmt.Sprintf("a%d.namesake.lan", i), fmt.Sprintf("10.81.0.%d", i), nil)
		b.ingress(fmt.Sprintf("b%d", i), fmt.Sprintf("b%d.namesake.lan", i), fmt.Sprintf("10.82.0.%d", i), nil)
	}
	aHosts := []string{"a1.namesake.lan", "a2.namesake.lan", "a3.namesake.lan"}
	bHosts := []string{"b1.namesake.lan", "b2.namesake.lan", "b3.namesake.lan"}
	var bEntries map[string]*pb.HostEntry // B's entries as first settled, by ID

	ok := t.Run("side by side", func(t *testing.T) {
		a.start(t)
		b.start(t)
		if a.id == b.id {
			t.Fatalf("both installations derived the identity %s", a.id)
		}
		// Each derived its identity from its own kube-system namespace and the Lease.
		for _, in := range []*namesakeInstall{a, b} {
			ks, err := in.h.cp.Client.CoreV1().Namespaces().Get(context.Background(), metav1.NamespaceSystem, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := registry.Identity(string(ks.UID), in.cfg.LeaderElectionNS, in.cfg.LeaderElectionID); in.id != want {
				t.Fatalf("%s runs with identity %s, want %s (kube-system %s)", in.name, in.id, want, ks.UID)
			}
		}
		waitFor(t, 30*time.Second, func() bool {
			return len(entriesOf(srv, a.id)) == 3 && len(entriesOf(srv, b.id)) == 3
		})
		settled, calls := j.len(), srv.Service().WriteCalls()
		for _, in := range []*namesakeInstall{a, b} {
			hosts := aHosts
			if in == b {
				hosts = bHosts
			}
			for _, host := range hosts {
				e := onlyEntry(t, srv, host)
				in.wantTags(t, e, "default")
			}
		}
		bEntries = entriesOf(srv, b.id)

		// Both report the other as a namesake: metric, a warning in the log, a Warning on
		// their RouterHostsConfig naming the other's identity.
		for _, pair := range [][2]*namesakeInstall{{a, b}, {b, a}} {
			in, other := pair[0], pair[1]
			waitFor(t, 15*time.Second, func() bool { return in.metric(t, "router_hosts_operator_namesake_clusters") == 1 })
			ev := in.waitConfigEvent(t, events.NamesakeCluster, corev1.EventTypeWarning)
			if !strings.Contains(ev.Message, "cluster-id "+other.id) || !strings.Contains(ev.Message, `"default"`) {
				t.Errorf("%s's NamesakeCluster event does not name %s's identity %s: %q", in.name, other.name, other.id, ev.Message)
			}
			if w := in.warned(events.NamesakeCluster); len(w) != 1 || !strings.Contains(w[0], other.id) {
				t.Errorf("%s logged the namesake %d times, want once naming %s: %q", in.name, len(w), other.id, w)
			}
		}

		// Several intervals on, neither has written anything: the other's entries are not its
		// own, and its own are as they should be.
		a0, b0 := a.syncs.Load(), b.syncs.Load()
		waitFor(t, 20*time.Second, func() bool { return a.syncs.Load() >= a0+3 && b.syncs.Load() >= b0+3 })
		if w := j.since(settled); len(w) != 0 {
			t.Fatalf("after both settled, %d writes reached the router:\n%s", len(w), describeWrites(w))
		}
		if n := srv.Service().WriteCalls() - calls; n != 0 {
			t.Fatalf("after both settled, %d write calls (AddHost, UpdateHost, DeleteHost) reached the router: %v", n, srv.Service().CallCounts())
		}
		for _, in := range []*namesakeInstall{a, b} {
			if v := in.metric(t, "router_hosts_operator_namesake_clusters"); v != 1 {
				t.Errorf("%s: namesake_clusters = %v, want 1", in.name, v)
			}
		}

		// A claim in A on a hostname B's entry holds is a conflict, and B's entry is untouched.
		before := j.len()
		grab := a.ingress("grab", "b1.namesake.lan", "10.81.9.9", nil)
		ev := a.waitObjectEvent(t, string(grab.UID), events.HostnameConflict)
		if !strings.Contains(ev.Message, "b1.namesake.lan") || !strings.Contains(ev.Message, b.id) {
			t.Errorf("the conflict does not name the hostname and the namesake's identity %s: %q", b.id, ev.Message)
		}
		a0 = a.syncs.Load()
		waitFor(t, 15*time.Second, func() bool { return a.syncs.Load() >= a0+2 })
		if w := j.since(before); len(w) != 0 {
			t.Fatalf("A's claim on B's hostname wrote to the router:\n%s", describeWrites(w))
		}
		if v := a.metric(t, "router_hosts_operator_hostname_conflicts"); v != 1 {
			t.Errorf("A: hostname_conflicts = %v, want 1", v)
		}
		a.deleteIngress(t, "grab")
		a0 = a.syncs.Load()
		waitFor(t, 15*time.Second, func() bool { return a.syncs.Load() >= a0+2 })
		if w := j.since(before); len(w) != 0 {
			t.Fatalf("A's claim on B's hostname, then its deletion, wrote to the router:\n%s", describeWrites(w))
		}
		if n := srv.Service().WriteCalls() - calls; n != 0 {
			t.Fatalf("since both settled, %d write calls reached the router: %v", n, srv.Service().CallCounts())
		}
	})
	if !ok {
		return
	}

	ok = t.Run("one stopped for three grace periods", func(t *testing.T) {
		b.stop()
		from, calls, a0, start := j.len(), srv.Service().WriteCalls(), a.syncs.Load(), time.Now()
		// A keeps syncing; B's entries carry its name and never another sign of life.
		for time.Since(start) < 3*nsGrace+nsInterval {
			if w := j.since(from); len(w) != 0 {
				t.Fatalf("with B stopped %v, writes reached the router:\n%s", time.Since(start).Round(time.Millisecond), describeWrites(w))
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n := a.syncs.Load() - a0; n < 5 {
			t.Fatalf("A synced only %d times in %v; the test proves nothing", n, time.Since(start))
		}
		sameEntries(t, "B's entries while B was stopped", bEntries, entriesOf(srv, b.id))
		if v := a.metric(t, "router_hosts_operator_namesake_clusters"); v != 1 {
			t.Errorf("A: namesake_clusters = %v with B away, want 1 (its entries are still there)", v)
		}

		// B comes back: nothing is rewritten.
		b0 := b.syncs.Load()
		b.start(t)
		waitFor(t, 20*time.Second, func() bool { return b.syncs.Load() >= b0+3 })
		if w := j.since(from); len(w) != 0 {
			t.Fatalf("B's restart wrote to the router:\n%s", describeWrites(w))
		}
		if n := srv.Service().WriteCalls() - calls; n != 0 {
			t.Fatalf("with B stopped and restarted, %d write calls reached the router: %v", n, srv.Service().CallCounts())
		}
		sameEntries(t, "B's entries after its restart", bEntries, entriesOf(srv, b.id))
	})
	if !ok {
		return
	}

	ok = t.Run("renamed under a running namesake", func(t *testing.T) {
		// Away from the namesake's name, on restart, by --cluster-name.
		a.stop()
		from, aBefore, calls := j.len(), entriesOf(srv, a.id), srv.Service().CallCounts()
		a.start(t, "--cluster-name=alpha")
		waitFor(t, 20*time.Second, func() bool { return allNamed(entriesOf(srv, a.id), "alpha") })
		a0 := a.syncs.Load()
		waitFor(t, 15*time.Second, func() bool { return a.syncs.Load() >= a0+2 })
		renamedInPlace(t, j.since(from), aBefore, "default", "alpha", append(aHosts, bHosts...))
		oneUpdateEach(t, srv, calls, len(aBefore))
		sameEntries(t, "B's entries", bEntries, entriesOf(srv, b.id))
		// Neither is the other's namesake any more, and both say so.
		for _, in := range []*namesakeInstall{a, b} {
			waitFor(t, 15*time.Second, func() bool { return in.metric(t, "router_hosts_operator_namesake_clusters") == 0 })
		}
		b.waitConfigEvent(t, events.NamesakeClusterGone, corev1.EventTypeNormal)
		if w := b.warned(events.NamesakeClusterGone); len(w) != 1 {
			t.Errorf("B logged the namesake's end %d times, want once", len(w))
		}

		// Back to the namesake's name, live, by the RouterHostsConfig's spec.clusterName
		// (which overrides the flag), while B runs.
		aWarned, bWarned := len(a.warned(events.NamesakeCluster)), len(b.warned(events.NamesakeCluster))
		from, aBefore, calls = j.len(), entriesOf(srv, a.id), srv.Service().CallCounts()
		patchConfigOn(t, a.h.cp, a.h.ns, map[string]any{"clusterName": "default"})
		waitFor(t, 20*time.Second, func() bool { return allNamed(entriesOf(srv, a.id), "default") })
		a0, b0 := a.syncs.Load(), b.syncs.Load()
		waitFor(t, 15*time.Second, func() bool { return a.syncs.Load() >= a0+2 && b.syncs.Load() >= b0+2 })
		renamedInPlace(t, j.since(from), aBefore, "alpha", "default", append(aHosts, bHosts...))
		oneUpdateEach(t, srv, calls, len(aBefore))
		sameEntries(t, "B's entries", bEntries, entriesOf(srv, b.id))
		// Namesakes again: each reports the other once more.
		for _, in := range []*namesakeInstall{a, b} {
			waitFor(t, 15*time.Second, func() bool { return in.metric(t, "router_hosts_operator_namesake_clusters") == 1 })
		}
		if n := len(a.warned(events.NamesakeCluster)) - aWarned; n != 1 {
			t.Errorf("A logged the namesake %d times on its return, want once", n)
		}
		if n := len(b.warned(events.NamesakeCluster)) - bWarned; n != 1 {
			t.Errorf("B logged the namesake %d times on its return, want once", n)
		}
	})
	if !ok {
		return
	}

	ok = t.Run("an everyday deletion never trips the brake", func(t *testing.T) {
		// A grows to 22 entries: its three, four to keep, fifteen to lose at once.
		for i := 1; i <= 4; i++ {
			a.ingress(fmt.Sprintf("k%d", i), fmt.Sprintf("k%d.namesake.lan", i), fmt.Sprintf("10.81.1.%d", i), map[string]string{"batch": "keep"})
		}
		for i := 1; i <= 15; i++ {
			a.ingress(fmt.Sprintf("m%d", i), fmt.Sprintf("m%d.namesake.lan", i), fmt.Sprintf("10.81.2.%d", i), map[string]string{"batch": "mass"})
		}
		waitFor(t, 30*time.Second, func() bool { return len(entriesOf(srv, a.id)) == 22 })

		// Two objects deleted: their entries are marked, then deleted after the grace period,
		// and the brake says nothing.
		from := j.len()
		gone := map[string]string{} // ID → hostname
		for _, e := range entriesOf(srv, a.id) {
			if h := e.GetHostname(); h == "a1.namesake.lan" || h == "a2.namesake.lan" {
				gone[e.GetId()] = h
			}
		}
		a.deleteIngress(t, "a1")
		a.deleteIngress(t, "a2")
		waitFor(t, 3*nsGrace+20*time.Second, func() bool { return len(entriesOf(srv, a.id)) == 20 })
		markedAt := map[string]time.Time{}
		deletes := 0
		for _, w := range j.since(from) {
			switch {
			case gone[w.id] == "":
				t.Errorf("an everyday deletion wrote to another entry: %s", w)
			case w.op == "update" && markedAt[w.id].IsZero() && hasPrefixTag(w.after, registry.PrefixPending):
				markedAt[w.id] = w.at
			case w.op == "delete" && !markedAt[w.id].IsZero():
				deletes++
				notBefore(t, w)
			default:
				t.Errorf("unexpected write in an everyday deletion: %s", w)
			}
		}
		if len(markedAt) != 2 || deletes != 2 {
			t.Errorf("an everyday deletion of two objects: %d marks and %d deletions, want 2 and 2:\n%s", len(markedAt), deletes, describeWrites(j.since(from)))
		}
		if evs := a.configEvents(t, events.MassDeletionHeld); len(evs) != 0 {
			t.Errorf("an everyday deletion tripped the brake: %q", evs[0].Message)
		}
		if w := a.warned(events.MassDeletionHeld); len(w) != 0 {
			t.Errorf("an everyday deletion tripped the brake: %q", w)
		}
		if v := a.metric(t, "router_hosts_operator_mass_deletion_held_entries"); v != 0 {
			t.Errorf("mass_deletion_held_entries = %v after an everyday deletion, want 0", v)
		}
	})
	if !ok {
		return
	}

	// Each held deletion's token, so that each step tells its own warning from earlier ones.
	tokens := map[string]bool{}
	ok = t.Run("a mass deletion while the operator is down is held until confirmed by --confirm-mass-deletion", func(t *testing.T) {
		// Fifteen of twenty objects deleted by one call while the operator is down (an
		// upgrade, a node drained): its first sync sees them all gone.
		massDeletion(t, a, b, srv, j, bEntries, "m", tokens, false, func() {
			a.stop()
			a.deleteIngresses(t, "batch=mass")
			a.start(t)
		}, func(token string) {
			a.stop()
			a.start(t, "--confirm-mass-deletion="+token)
		})
	})
	if !ok {
		return
	}

	ok = t.Run("one confirmation lets a mass deletion through though its entries fall due at different times", func(t *testing.T) {
		// Back to twenty: the five that stayed and fifteen more, ten of which ask for a
		// longer grace period. Confirmed, the five fall due first and go; the ten that are
		// left are the rest of the set the user let through, not a new mass deletion.
		for i := 1; i <= 15; i++ {
			var extra []string
			if i > 5 {
				extra = []string{"grace-period", strconv.Itoa(int(2 * nsGrace / time.Second))}
			}
			a.ingress(fmt.Sprintf("g%d", i), fmt.Sprintf("g%d.namesake.lan", i), fmt.Sprintf("10.81.3.%d", i), map[string]string{"batch": "mass2"}, extra...)
		}
		waitFor(t, 30*time.Second, func() bool { return len(entriesOf(srv, a.id)) == 20 })
		massDeletion(t, a, b, srv, j, bEntries, "g", tokens, true, func() {
			a.stop()
			a.deleteIngresses(t, "batch=mass2")
			a.start(t)
		}, func(token string) {
			patchConfigOn(t, a.h.cp, a.h.ns, map[string]any{"deletion": map[string]any{"brake": map[string]any{"confirm": token}}})
		})
	})
	if !ok && len(entriesOf(srv, a.id)) != 5 {
		return // not the state the next step starts from
	}

	t.Run("a mass deletion while running is held until confirmed on the RouterHostsConfig", func(t *testing.T) {
		for i := 1; i <= 15; i++ {
			a.ingress(fmt.Sprintf("n%d", i), fmt.Sprintf("n%d.namesake.lan", i), fmt.Sprintf("10.81.4.%d", i), map[string]string{"batch": "mass3"})
		}
		waitFor(t, 30*time.Second, func() bool { return len(entriesOf(srv, a.id)) == 20 })
		// A quiet moment, then fifteen of twenty objects deleted by one call, as a namespace's
		// deletion deletes them, while the operator runs: the deletion the brake is for, so
		// nothing of it is deleted before it is confirmed, however the informer delivers it.
		a0 := a.syncs.Load()
		waitFor(t, 15*time.Second, func() bool { return a.syncs.Load() >= a0+2 })
		massDeletion(t, a, b, srv, j, bEntries, "n", tokens, true, func() { a.deleteIngresses(t, "batch=mass3") }, func(token string) {
			patchConfigOn(t, a.h.cp, a.h.ns, map[string]any{"deletion": map[string]any{"brake": map[string]any{"confirm": token}}})
		})
	})
}

// massDeletion deletes (by del) the fifteen objects of a's twenty whose hostnames start with
// prefix, and checks that the brake holds it: a MassDeletionHeld warning on the
// RouterHostsConfig and in the log with a token not in tokens (it is added), the held_entries
// metric, and no mark or deletion through more than a grace period while a syncs; then that,
// confirmed once (by confirm), the fifteen are marked and deleted each after its grace period,
// while the five others and b's entries stay exactly as they were. live says the
// confirmation reaches the running operator, which then tells the brake's release.
func massDeletion(t *testing.T, a, b *namesakeInstall, srv *rhtestserver.Server, j *writeJournal, bEntries map[string]*pb.HostEntry,
	prefix string, tokens map[string]bool, live bool, del func(), confirm func(token string)) {
	t.Helper()
	stay := map[string]*pb.HostEntry{}
	leaving := map[string]bool{}
	for id, e := range entriesOf(srv, a.id) {
		if strings.HasPrefix(e.GetHostname(), prefix) {
			leaving[id] = true
		} else {
			stay[id] = e
		}
	}
	if len(stay) != 5 || len(leaving) != 15 {
		t.Fatalf("before the mass deletion: %d entries to stay and %d to leave, want 5 and 15", len(stay), len(leaving))
	}
	from := j.len()
	del()
	// newHeld is the message of a MassDeletionHeld warning with a token not seen before.
	newHeld := func() (token, msg string) {
		for _, ev := range a.configEvents(t, events.MassDeletionHeld) {
			if tok := heldToken(ev.Message); tok != "" && !tokens[tok] && ev.Type == corev1.EventTypeWarning {
				return tok, ev.Message
			}
		}
		return "", ""
	}
	var token, msg string
	waitFor(t, 20*time.Second, func() bool { token, msg = newHeld(); return token != "" })
	tokens[token] = true
	// All of a's objects are in one namespace: its own brake holds them.
	if !strings.Contains(msg, "15 of namespace "+a.h.ns+"'s 20 entries") {
		t.Errorf("MassDeletionHeld does not say 15 of the namespace's 20: %q", msg)
	}
	var logged int
	for _, w := range a.warned(events.MassDeletionHeld) {
		if strings.Contains(w, token) {
			logged++
		}
	}
	if logged != 1 {
		t.Errorf("the held deletion %s is logged %d times, want once", token, logged)
	}
	if v := a.metric(t, "router_hosts_operator_mass_deletion_held_entries"); v != 15 {
		t.Errorf("mass_deletion_held_entries = %v, want 15", v)
	}

	// Held through more than a grace period: nothing is deleted (a mark or two made before the
	// brake could see the whole deletion included), and nothing more marked.
	a0, start := a.syncs.Load(), time.Now()
	for time.Since(start) < nsGrace+2*nsInterval {
		for _, w := range j.since(from) {
			if w.op == "delete" || !leaving[w.id] {
				t.Fatalf("the brake held, yet this reached the router:\n%s", describeWrites(j.since(from)))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if w := j.since(from); len(w) >= 10 {
		// Marks only (a deletion failed the test above). A sync that saw the first objects of
		// the deletion go, under the brake's minimum, may have marked them; the brake then
		// holds their deletion with the rest. More than that is the brake not holding.
		t.Errorf("the mass deletion (one DeleteCollection) was held, yet %d of its entries were marked:\n%s", len(w), describeWrites(w))
	}
	if n := a.syncs.Load() - a0; n < 3 {
		t.Fatalf("A synced only %d times while the brake held; the test proves nothing", n)
	}
	if got := entriesOf(srv, a.id); len(got) != 20 {
		t.Fatalf("A has %d entries while the brake holds, want 20", len(got))
	}

	// Confirmed once: marked at once, each deleted after its grace period.
	confirmed := time.Now()
	released := len(a.warned(events.MassDeletionReleased))
	confirm(token)
	deadline := time.Now().Add(4*nsGrace + 20*time.Second)
	for len(entriesOf(srv, a.id)) != 5 {
		if tok, msg := newHeld(); tok != "" {
			// Held again, part of the confirmed set gone: the test says so and confirms the
			// rest, so that the steps after it start from a clean state.
			tokens[tok] = true
			t.Errorf("confirmed with %s, the deletion was held again once part of it was gone, and needed a second "+
				"confirmation (%q); the writes since the deletion:\n%s", token, msg, describeWrites(j.since(from)))
			confirm(tok)
		}
		if time.Now().After(deadline) {
			t.Fatalf("confirmed with %s, the deletion did not complete: A has %d entries, want 5; the writes since the deletion:\n%s",
				token, len(entriesOf(srv, a.id)), describeWrites(j.since(from)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	markedAt, deletedAt := map[string]time.Time{}, map[string]time.Time{}
	for _, w := range j.since(from) {
		switch {
		case !leaving[w.id]:
			t.Errorf("the confirmed deletion wrote to an entry that stays: %s", w)
		case w.op == "update" && markedAt[w.id].IsZero() && hasPrefixTag(w.after, registry.PrefixPending):
			markedAt[w.id] = w.at
		case w.op == "delete" && !markedAt[w.id].IsZero():
			deletedAt[w.id] = w.at
			if w.at.Before(confirmed) {
				t.Errorf("%s was deleted before the deletion was confirmed", w.host)
			}
			notBefore(t, w)
		default:
			t.Errorf("unexpected write in the confirmed deletion: %s", w)
		}
	}
	if len(markedAt) != 15 || len(deletedAt) != 15 {
		t.Errorf("the confirmed deletion marked %d and deleted %d entries, want 15 and 15:\n%s", len(markedAt), len(deletedAt), describeWrites(j.since(from)))
	}
	sameEntries(t, "the entries that stay", stay, entriesOf(srv, a.id))
	sameEntries(t, "B's entries", bEntries, entriesOf(srv, b.id))
	waitFor(t, 10*time.Second, func() bool { return a.metric(t, "router_hosts_operator_mass_deletion_held_entries") == 0 })
	if live {
		// The running operator that held it tells the release, on the RouterHostsConfig and
		// in the log.
		waitFor(t, 10*time.Second, func() bool {
			for _, ev := range a.configEvents(t, events.MassDeletionReleased) {
				if ev.Type == corev1.EventTypeNormal && !ev.LastTimestamp.Time.Before(confirmed.Truncate(time.Second)) {
					return true
				}
			}
			return false
		})
		if n := len(a.warned(events.MassDeletionReleased)) - released; n < 1 {
			t.Errorf("the brake's release is not logged")
		}
	}
}

// heldToken is the token a MassDeletionHeld message names, "" if none.
func heldToken(msg string) string {
	if m := regexp.MustCompile(`--confirm-mass-deletion=(\S+)`).FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// namesakeInstall is one installation of the operator: a control plane, a namespace whose
// Ingresses it syncs, a RouterHostsConfig of the namespace's name, and the operator wired by
// the operator package from flags as main wires it, its loop running (with /metrics) until
// stop.
type namesakeInstall struct {
	top  *testing.T
	name string
	h    *harness
	addr string // --metrics-address
	// hook keeps what every run of the operator logged; syncs counts their syncs, and decided
	// is the identity the last sync that decided ran as.
	hook    *logtest.Hook
	syncs   atomic.Int64
	decided atomic.Pointer[string]

	cfg  *operator.Config
	id   string
	stop func()
}

func newNamesakeInstall(t *testing.T, name string, cp *kubetest.ControlPlane, kubeconfig string, srv *rhtestserver.Server) *namesakeInstall {
	t.Helper()
	h := &harness{t: t, cp: cp, kubeconfig: kubeconfig, srv: srv}
	h.ns = createNamespace(t, cp)
	// The apiserver creates kube-system soon after it serves; the identity derives from it.
	waitFor(t, 30*time.Second, func() bool {
		_, err := cp.Client.CoreV1().Namespaces().Get(context.Background(), metav1.NamespaceSystem, metav1.GetOptions{})
		return err == nil
	})
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.RouterHostsConfigKind,
		"metadata": map[string]any{"name": h.ns}, "spec": map[string]any{}}}
	rhc := dynamic.NewForConfigOrDie(cp.Config).Resource(v1alpha1.RouterHostsConfigResource)
	if _, err := rhc.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("RouterHostsConfig: %v", err)
	}
	t.Cleanup(func() { _ = rhc.Delete(context.Background(), h.ns, metav1.DeleteOptions{}) })
	in := &namesakeInstall{top: t, name: name, h: h, addr: freeAddr(t), stop: func() {}}
	log := logrus.New()
	in.hook = logtest.NewLocal(log)
	t.Cleanup(func() { in.stop() })
	return in
}

// Report counts the syncs and keeps the identity they decided for.
func (in *namesakeInstall) Report(_ context.Context, rep *controller.Report) {
	if rep.ClusterID != "" {
		in.decided.Store(&rep.ClusterID)
	}
	in.syncs.Add(1)
}

// start runs the operator with the cluster name "default", the shared server, a short interval
// and grace period, and flags replacing any of those; it returns once the loop runs.
func (in *namesakeInstall) start(t *testing.T, flags ...string) {
	t.Helper()
	args := replaceFlags(in.h.args(options{cluster: "default", grace: nsGrace}),
		append([]string{"--interval=" + nsInterval.String(), "--min-event-sync-interval=200ms", "--metrics-address=" + in.addr}, flags...)...)
	cfg, err := operator.ParseFlags(args, operator.Build{Version: "test"})
	if err != nil {
		t.Fatalf("%s: flags: %v", in.name, err)
	}
	log := logrus.New()
	log.SetLevel(logrus.InfoLevel)
	log.SetOutput(testWriter{in.top})
	log.AddHook(in.hook)
	ctx, cancel := context.WithCancel(context.Background())
	op, err := operator.New(ctx, cfg, log, io.Discard, operator.Hooks{DiscoveryInterval: 200 * time.Millisecond,
		Reporters: []controller.Reporter{in}})
	if err != nil {
		cancel()
		t.Fatalf("%s: operator: %v", in.name, err)
	}
	in.cfg = cfg
	done := make(chan error, 1)
	go func() { done <- op.Run(ctx) }()
	var once sync.Once
	in.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					in.top.Errorf("%s: operator ended with %v", in.name, err)
				}
			case <-time.After(30 * time.Second):
				in.top.Errorf("%s: operator did not stop within 30 s", in.name)
			}
			op.Close()
		})
	}
	waitFor(t, 30*time.Second, func() bool { _, err := (&process{addr: in.addr}).get("/healthz"); return err == nil })
	if in.id == "" {
		// The identity is derived once, and a restart keeps it: the first decision says it.
		waitFor(t, 30*time.Second, func() bool { return in.decided.Load() != nil })
		in.id = *in.decided.Load()
	}
}

// ingress creates an annotated Ingress for host at ip, with labels.
func (in *namesakeInstall) ingress(name, host, ip string, labels map[string]string, annotations ...string) *networkingv1.Ingress {
	ing := ingress(in.h.ns, name, enabled(append([]string{"ip-address", ip}, annotations...)...), host)
	ing.Labels = labels
	return in.h.create(ing)
}

func (in *namesakeInstall) deleteIngress(t *testing.T, name string) {
	t.Helper()
	if err := in.h.cp.Client.NetworkingV1().Ingresses(in.h.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("%s: deleting ingress %s: %v", in.name, name, err)
	}
}

// deleteIngresses deletes the Ingresses the label selector selects, by one call.
func (in *namesakeInstall) deleteIngresses(t *testing.T, selector string) {
	t.Helper()
	if err := in.h.cp.Client.NetworkingV1().Ingresses(in.h.ns).DeleteCollection(context.Background(), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: selector}); err != nil {
		t.Fatalf("%s: deleting ingresses %s: %v", in.name, selector, err)
	}
}

// metric reads one sample from the running operator's /metrics.
func (in *namesakeInstall) metric(t *testing.T, name string) float64 {
	t.Helper()
	return (&process{addr: in.addr}).metric(t, name)
}

// warned is what the operator logged at warning level with reason.
func (in *namesakeInstall) warned(reason string) []string {
	var out []string
	for _, e := range in.hook.AllEntries() {
		if e.Level == logrus.WarnLevel && e.Data["reason"] == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// configEvents are the events with reason posted on the installation's RouterHostsConfig.
func (in *namesakeInstall) configEvents(t *testing.T, reason string) []corev1.Event {
	t.Helper()
	list, err := in.h.cp.Client.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + v1alpha1.RouterHostsConfigKind + ",involvedObject.name=" + in.h.ns + ",reason=" + reason})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitConfigEvent waits for an event with reason and type on the RouterHostsConfig.
func (in *namesakeInstall) waitConfigEvent(t *testing.T, reason, typ string) corev1.Event {
	t.Helper()
	var got []corev1.Event
	waitFor(t, 20*time.Second, func() bool { got = in.configEvents(t, reason); return len(got) > 0 })
	if got[0].Type != typ {
		t.Errorf("%s: %s is a %s event, want %s", in.name, reason, got[0].Type, typ)
	}
	return got[0]
}

// waitObjectEvent waits for an event with reason on the object with uid in the namespace.
func (in *namesakeInstall) waitObjectEvent(t *testing.T, uid, reason string) corev1.Event {
	t.Helper()
	var got []corev1.Event
	waitFor(t, 20*time.Second, func() bool {
		list, err := in.h.cp.Client.CoreV1().Events(in.h.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.uid=" + uid + ",reason=" + reason})
		if err != nil {
			t.Fatal(err)
		}
		got = list.Items
		return len(got) > 0
	})
	return got[0]
}

// wantTags checks that e carries exactly the operator's tags for an Ingress of this
// installation under cluster name.
func (in *namesakeInstall) wantTags(t *testing.T, e *pb.HostEntry, cluster string) {
	t.Helper()
	name := strings.SplitN(e.GetHostname(), ".", 2)[0]
	ing, err := in.h.cp.Client.NetworkingV1().Ingresses(in.h.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"k8s-operator", "cluster:" + cluster, "cluster-id:" + in.id, "source:" + string(ing.UID), "namespace:" + in.h.ns, "kind:Ingress"}
	got := withoutHeartbeat(e.GetTags())
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s's entry %s: tags %v, want %v", in.name, e.GetHostname(), got, want)
	}
}

// replaceFlags sets each --flag=value of set in args, replacing a value args has (the flags
// parser refuses a flag given twice).
func replaceFlags(args []string, set ...string) []string {
	out := slices.Clone(args)
	for _, s := range set {
		name, _, _ := strings.Cut(s, "=")
		if i := slices.IndexFunc(out, func(a string) bool { n, _, _ := strings.Cut(a, "="); return n == name }); i >= 0 {
			out[i] = s
		} else {
			out = append(out, s)
		}
	}
	return out
}

// patchConfigOn merges spec into the named RouterHostsConfig on cp (a nil value removes a field).
func patchConfigOn(t *testing.T, cp *kubetest.ControlPlane, name string, spec map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"spec": spec})
	if _, err := dynamic.NewForConfigOrDie(cp.Config).Resource(v1alpha1.RouterHostsConfigResource).
		Patch(context.Background(), name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching RouterHostsConfig %s: %v", name, err)
	}
}

// entriesOf is the router's entries carrying the identity id, by ID.
func entriesOf(srv *rhtestserver.Server, id string) map[string]*pb.HostEntry {
	out := map[string]*pb.HostEntry{}
	for _, e := range srv.Store().List() {
		if slices.ContainsFunc(e.GetTags(), func(t string) bool { tid, ok := registry.TagIdentity(t); return ok && tid == id }) {
			out[e.GetId()] = e
		}
	}
	return out
}

// onlyEntry is the router's one entry for host.
func onlyEntry(t *testing.T, srv *rhtestserver.Server, host string) *pb.HostEntry {
	t.Helper()
	got := srv.Store().Lookup(host)
	if len(got) != 1 {
		t.Fatalf("want one entry for %s, got %d: %v", host, len(got), got)
	}
	return got[0]
}

// allNamed reports whether every entry carries cluster:name and no other cluster tag.
func allNamed(entries map[string]*pb.HostEntry, name string) bool {
	for _, e := range entries {
		named := false
		for _, tag := range e.GetTags() {
			if n, _, ok := registry.ParseClusterTag(tag); ok {
				if n != name {
					return false
				}
				named = true
			}
		}
		if !named {
			return false
		}
	}
	return len(entries) > 0
}

// notBefore fails if the deletion w came before the grace period of the mark its entry
// carried was over. The mark records its time in whole seconds, which the grace period counts
// from.
func notBefore(t *testing.T, w routerWrite) {
	t.Helper()
	i := slices.IndexFunc(w.before.GetTags(), func(tag string) bool { return strings.HasPrefix(tag, registry.PrefixPending) })
	if i < 0 {
		t.Errorf("%s was deleted unmarked", w.host)
		return
	}
	marked, err := time.Parse(time.RFC3339, strings.TrimPrefix(w.before.GetTags()[i], registry.PrefixPending))
	if err != nil {
		t.Errorf("%s: %v", w.host, err)
		return
	}
	grace := nsGrace
	for _, tag := range w.before.GetTags() {
		if s, ok := strings.CutPrefix(tag, registry.PrefixGracePeriod); ok {
			n, err := strconv.Atoi(s)
			if err != nil {
				t.Errorf("%s: %v", w.host, err)
			}
			grace = time.Duration(n) * time.Second
		}
	}
	if w.at.Before(marked.Add(grace)) {
		t.Errorf("%s was deleted at %s, before the grace period %v of its mark %s was over", w.host, w.at.Format(time.RFC3339Nano), grace, marked.Format(time.RFC3339))
	}
}

func hasPrefixTag(e *pb.HostEntry, prefix string) bool {
	return slices.ContainsFunc(e.GetTags(), func(t string) bool { return strings.HasPrefix(t, prefix) })
}

// sameEntries fails unless got holds exactly want's entries, each exactly as it was.
func sameEntries(t *testing.T, what string, want, got map[string]*pb.HostEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for id, w := range want {
		g := got[id]
		if g == nil {
			t.Errorf("%s: %s (%s) is gone", what, id, w.GetHostname())
			continue
		}
		if g.GetVersion() != w.GetVersion() || g.GetHostname() != w.GetHostname() || g.GetIpAddress() != w.GetIpAddress() ||
			!slices.Equal(g.GetTags(), w.GetTags()) || !slices.Equal(g.GetAliases(), w.GetAliases()) || g.GetComment() != w.GetComment() {
			t.Errorf("%s: %s changed:\n was %s\n now %s", what, id, entryText(w), entryText(g))
		}
	}
}

// renamedInPlace checks a rename's writes: one UpdateHost of each of the installation's
// entries (before), whose only change is its cluster: tag from → to (the identity stays in a
// tag of its own), version + 1; no other write; and every name in hosts served after every
// write.
func renamedInPlace(t *testing.T, writes []routerWrite, before map[string]*pb.HostEntry, from, to string, hosts []string) {
	t.Helper()
	updated := map[string]int{}
	for _, w := range writes {
		for _, h := range hosts {
			if w.live[h] == 0 {
				t.Errorf("after write %s, %s had no entry on the router", w, h)
			}
		}
		old := before[w.id]
		if w.op != "update" || old == nil {
			t.Errorf("the rename sent an unexpected write: %s", w)
			continue
		}
		updated[w.id]++
		wantTags := slices.Clone(old.GetTags())
		for i, tag := range wantTags {
			if tag == registry.ClusterTag(from) {
				wantTags[i] = registry.ClusterTag(to)
			}
		}
		slices.Sort(wantTags)
		gotTags := slices.Clone(w.after.GetTags())
		slices.Sort(gotTags)
		oldV, _ := strconv.Atoi(old.GetVersion())
		if w.after.GetVersion() != strconv.Itoa(oldV+1) || !slices.Equal(gotTags, wantTags) || w.after.GetHostname() != old.GetHostname() ||
			w.after.GetIpAddress() != old.GetIpAddress() || w.after.GetComment() != old.GetComment() || !slices.Equal(w.after.GetAliases(), old.GetAliases()) {
			t.Errorf("the rename of %s is not the cluster tag alone, version +1:\n was %s\n now %s", old.GetHostname(), entryText(old), entryText(w.after))
		}
	}
	for id, e := range before {
		if updated[id] != 1 {
			t.Errorf("the rename wrote %s (%s) %d times, want once", e.GetHostname(), id, updated[id])
		}
	}
}

// oneUpdateEach fails unless the write calls since the counts before are n UpdateHost calls
// and nothing else.
func oneUpdateEach(t *testing.T, srv *rhtestserver.Server, before map[string]int64, n int) {
	t.Helper()
	now := srv.Service().CallCounts()
	for _, m := range []string{inmemory.MethodAdd, inmemory.MethodUpdate, inmemory.MethodDelete} {
		want := int64(0)
		if m == inmemory.MethodUpdate {
			want = int64(n)
		}
		if got := now[m] - before[m]; got != want {
			t.Errorf("the rename made %d %s calls, want %d", got, m, want)
		}
	}
}

// routerWrite is one write the router took: its effect on one entry, and the names served
// after it.
type routerWrite struct {
	at            time.Time
	op            string // add, update, delete
	id, host      string
	before, after *pb.HostEntry
	// live counts the entries of each hostname after the write.
	live map[string]int
}

func (w routerWrite) String() string {
	switch w.op {
	case "add":
		return "add " + entryText(w.after)
	case "delete":
		return "delete " + entryText(w.before)
	}
	return "update " + entryText(w.before) + " → " + entryText(w.after)
}

func entryText(e *pb.HostEntry) string {
	return fmt.Sprintf("%s %s %s v%s %v %v", e.GetId(), e.GetHostname(), e.GetIpAddress(), e.GetVersion(), e.GetAliases(), e.GetTags())
}

func describeWrites(ws []routerWrite) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "  %s %s\n", w.at.Format("15:04:05.000"), w)
	}
	return b.String()
}

// writeJournal records every write the server takes, from the store's own write hook, which
// sees each write in order.
type writeJournal struct {
	mu     sync.Mutex
	prev   map[string]*pb.HostEntry
	writes []routerWrite
}

func newWriteJournal(srv *rhtestserver.Server) *writeJournal {
	j := &writeJournal{prev: map[string]*pb.HostEntry{}}
	srv.Store().SetOnWrite(j.write)
	return j
}

func (j *writeJournal) write(live []*pb.HostEntry) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := time.Now()
	cur := make(map[string]*pb.HostEntry, len(live))
	hosts := map[string]int{}
	for _, e := range live {
		cur[e.GetId()] = e
		hosts[e.GetHostname()]++
	}
	for id, e := range cur {
		switch old := j.prev[id]; {
		case old == nil:
			j.writes = append(j.writes, routerWrite{at: now, op: "add", id: id, host: e.GetHostname(), after: e, live: hosts})
		case old.GetVersion() != e.GetVersion():
			j.writes = append(j.writes, routerWrite{at: now, op: "update", id: id, host: e.GetHostname(), before: old, after: e, live: hosts})
		}
	}
	for id, old := range j.prev {
		if cur[id] == nil {
			j.writes = append(j.writes, routerWrite{at: now, op: "delete", id: id, host: old.GetHostname(), before: old, live: hosts})
		}
	}
	j.prev = cur
}

func (j *writeJournal) len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.writes)
}

// since is the writes after the first n.
func (j *writeJournal) since(n int) []routerWrite {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.writes[n:])
}
