package soak

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// burstEntries are n entries of cluster a in the burst namespace, a4-k.lan at 10.0.1.k, the
// first marked ones marked.
func burstEntries(n, marked int) []*pb.HostEntry {
	var out []*pb.HostEntry
	for k := 0; k < n; k++ {
		tags := []string{"cluster:a", "cluster-id:" + idA, "k8s-operator", "kind:HostMapping", "namespace:" + burstNamespace, fmt.Sprintf("source:u%d", k)}
		if k < marked {
			tags = append(tags, "pending-deletion:2026-01-01T00:00:00Z")
		}
		out = append(out, &pb.HostEntry{Id: fmt.Sprintf("e%d", k), Hostname: fmt.Sprintf("a4-%d.lan", k), IpAddress: fmt.Sprintf("10.0.1.%d", k+1),
			Version: "1", Tags: tags})
	}
	return out
}

// burstObjs are the objects of burstEntries, one a name.
func burstObjs(n int) []*Object {
	var out []*Object
	for k := 0; k < n; k++ {
		out = append(out, &Object{Cluster: "a", Namespace: burstNamespace, Name: fmt.Sprintf("burst-%d", k), Kind: KindHostMapping, addressing: bySpec,
			UID: fmt.Sprintf("u%d", k), Hosts: []string{fmt.Sprintf("a4-%d.lan", k)}, IPs: []string{fmt.Sprintf("10.0.1.%d", k+1)}})
	}
	return out
}

// TestBurstIsHeldWhenTheBrakeMust: the brake must hold a burst when at least ten of the
// namespace's entries leave and more than half of them, marked ones included.
func TestBurstIsHeldWhenTheBrakeMust(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name                string
		entries, marked     int
		renamed             int
		held                bool
		leaving, base, kept int
	}{
		{"12 of 14 renamed", 14, 0, 12, true, 12, 14, 14},
		{"9 renamed, one marked before", 14, 1, 9, true, 10, 14, 13},
		{"9 of 14 renamed", 14, 0, 9, false, 9, 14, 14},
		{"10 of 20 renamed: half, not more", 20, 0, 10, false, 10, 20, 20},
		{"only 8 written before the burst", 8, 0, 8, false, 8, 8, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ck := testChecker(newModel(), t0)
			var picked []int
			for k := tc.marked; k < tc.marked+tc.renamed; k++ {
				picked = append(picked, k)
			}
			b := &burst{inst: "a", ns: burstNamespace}
			ck.burstSnapshot(newView(burstEntries(tc.entries, tc.marked)), b, burstObjs(tc.entries), picked)
			if b.held != tc.held || b.leaving != tc.leaving || b.base != tc.base || len(b.entries) != tc.kept {
				t.Fatalf("held %v, %d of %d leaving, %d kept; want %v, %d of %d, %d", b.held, b.leaving, b.base, len(b.entries), tc.held, tc.leaving, tc.base, tc.kept)
			}
		})
	}
}

// TestBurstHeldWritesNothing: during a held burst, from burstLag after its renames until it
// ends, its installation writes none of the entries the brake keeps and adds none of the new
// names; a first sync that saw part of the burst may, and so may anyone after it ends.
func TestBurstHeldWritesNothing(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	es := burstEntries(12, 0)
	marked := proto.Clone(es[3]).(*pb.HostEntry)
	marked.Version, marked.Tags = "2", append(marked.Tags, "pending-deletion:2026-01-01T00:00:10Z")
	mark := func(at time.Duration) *write {
		return &write{inst: "a", at: t0.Add(at), method: methodUpdate, id: "e3", expected: proto.String("1"), after: marked}
	}
	del := func(inst string, at time.Duration) *write {
		return &write{inst: inst, at: t0.Add(at), method: methodDelete, id: "e3", expected: proto.String("1")}
	}
	add := func(host string, at time.Duration) *write {
		return &write{inst: "a", at: t0.Add(at), method: methodAdd, host: host, req: &pb.AddHostRequest{Hostname: host},
			after: &pb.HostEntry{Id: "n-" + host, Hostname: host, Version: "1"}}
	}
	for _, tc := range []struct {
		name string
		held bool
		w    *write
		fail bool
	}{
		{"an old name marked during the hold", true, mark(10 * time.Second), true},
		{"an old name deleted during the hold", true, del("a", 10*time.Second), true},
		{"a new name written during the hold", true, add("a4-3-v1.lan", 10*time.Second), true},
		{"a new name written by a sync that saw part of the burst", true, add("a4-3-v1.lan", time.Second), false},
		{"an old name marked by a sync that saw part of the burst", true, mark(time.Second), false},
		{"an old name deleted once confirmed", true, del("a", 30*time.Second), false},
		{"another installation's write", true, del("n", 10*time.Second), false},
		{"another name written during the hold", true, add("a-1.lan", 10*time.Second), false},
		{"a burst the brake need not hold", false, del("a", 10*time.Second), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel()
			m.bursts = []*burst{{n: 1, inst: "a", ns: burstNamespace, at: t0, applied: t0, end: t0.Add(20 * time.Second), entries: es,
				news: []string{"a4-3-v1.lan"}, held: tc.held, leaving: 12, base: 12}}
			ck := testChecker(m, t0)
			l := newLedger()
			for _, e := range es {
				l.saw(e)
			}
			l.write(tc.w)
			got := ck.checkBursts(l, t0.Add(time.Minute))
			if (len(got) > 0) != tc.fail || slices.ContainsFunc(got, func(f Failure) bool { return f.Invariant != InvBrake }) {
				t.Fatalf("failures %v, want a %s failure: %v", got, InvBrake, tc.fail)
			}
		})
	}
}

// TestALateBurstIsJudgedInParts: a burst near a kube-apiserver restart may reach the loop in
// parts, each judged alone, so its writes during the hold are no failure; the same writes are
// for a burst the operators saw whole.
func TestALateBurstIsJudgedInParts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	es := burstEntries(24, 0)
	for _, late := range []bool{true, false} {
		m := newModel()
		m.bursts = []*burst{{n: 1, inst: "a", ns: burstNamespace, at: t0, applied: t0, end: t0.Add(20 * time.Second), entries: es,
			held: true, late: late, leaving: 19, base: 24}}
		ck := testChecker(m, t0)
		l := newLedger()
		for _, e := range es {
			l.saw(e)
		}
		for k := range 19 {
			l.write(&write{inst: "a", at: t0.Add(10 * time.Second), method: methodDelete, id: es[k].GetId(), expected: proto.String("1")})
		}
		if got := ck.checkBursts(l, t0.Add(time.Minute)); (len(got) > 0) == late {
			t.Errorf("late %v: failures %v", late, got)
		}
	}
}

// TestBurstKeepsTheOldNamesAnswering: while a burst is held, every name the brake keeps
// resolves; a name gone after the hold, or while the router restarts, is no failure.
func TestBurstKeepsTheOldNamesAnswering(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	es := burstEntries(12, 0)
	all := map[string][]hostsLine{}
	for _, e := range es {
		all[e.GetHostname()] = []hostsLine{{IP: e.GetIpAddress(), Hostname: e.GetHostname()}}
	}
	without := func(h string) map[string][]hostsLine {
		out := map[string][]hostsLine{}
		for k, v := range all {
			if k != h {
				out[k] = v
			}
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		lines      map[string][]hostsLine
		at         time.Duration
		restarting bool
		fail       bool
	}{
		{"every name answers", all, 10 * time.Second, false, false},
		{"an old name gone during the hold", without("a4-3.lan"), 10 * time.Second, false, true},
		{"an old name gone once the hold ended", without("a4-3.lan"), 30 * time.Second, false, false},
		{"an old name gone while the router restarts", without("a4-3.lan"), 10 * time.Second, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel()
			m.bursts = []*burst{{n: 1, inst: "a", ns: burstNamespace, at: t0, applied: t0, end: t0.Add(20 * time.Second), entries: es, held: true}}
			ck := testChecker(m, t0)
			ck.pollBursts(tc.lines, t0.Add(tc.at), tc.restarting)
			got := ck.Failures()
			if (len(got) > 0) != tc.fail || slices.ContainsFunc(got, func(f Failure) bool { return f.Invariant != InvBrake }) {
				t.Fatalf("failures %v, want a %s failure: %v", got, InvBrake, tc.fail)
			}
		})
	}
}

// TestHeldToken reads the brake's token from an operator's log: the last warning about the
// namespace logged since the burst.
func TestHeldToken(t *testing.T) {
	line := func(at, ns, token string) string {
		return fmt.Sprintf(`time="%s" level=warning msg="12 of namespace %s's 14 entries would be deleted at once (over the mass-deletion brake); `+
			`none is marked or deleted, and no new name is written in namespace %s, until the cause goes away or the deletion is confirmed with `+
			`--confirm-mass-deletion=%s or the RouterHostsConfig's spec.deletion.brake.confirm: \"%s\"" component=events reason=MassDeletionHeld`+"\n", at, ns, ns, token, token)
	}
	log := `time="2026-01-01T00:00:01Z" level=info msg="sync"` + "\n" +
		line("2026-01-01T00:00:02Z", "a4", "12-00000001") +
		line("2026-01-01T00:00:20Z", "a4", "12-0000abcd") +
		line("2026-01-01T00:00:21Z", "a1", "10-0000ffff")
	for _, tc := range []struct {
		name  string
		ns    string
		since time.Time
		want  string
	}{
		{"the last about the namespace", "a4", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "12-0000abcd"},
		{"since the burst, to the second", "a4", time.Date(2026, 1, 1, 0, 0, 20, 600, time.UTC), "12-0000abcd"},
		{"none since", "a4", time.Date(2026, 1, 1, 0, 0, 22, 0, time.UTC), ""},
		{"another namespace's", "a1", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "10-0000ffff"},
		{"no warning about it", "a2", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := heldToken(log, tc.ns, tc.since); got != tc.want {
				t.Fatalf("token %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBurstTransitions: while a burst or its revert comes in, a sync that saw part of it may
// write as many of the new names as do not trip the brake (fewer than brakeMinimum, or at most
// half of the namespace's entries), never more; once the revert is in, none.
func TestBurstTransitions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var news []string
	for k := 0; k < 13; k++ {
		news = append(news, fmt.Sprintf("a4-%d-v1.lan", k))
	}
	adds := func(n int, at time.Duration) []*write {
		var out []*write
		for k := 0; k < n; k++ {
			out = append(out, &write{inst: "a", at: t0.Add(at), method: methodAdd, host: news[k], req: &pb.AddHostRequest{Hostname: news[k]},
				after: &pb.HostEntry{Id: fmt.Sprintf("n%d", k), Hostname: news[k], Version: "1"}})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ws   []*write
		fail bool
		base int // the namespace's entries
	}{
		{"nine as the burst came in", adds(9, time.Second), false, 12},
		{"ten as the burst came in", adds(10, time.Second), true, 12},
		{"nine as the revert came in", adds(9, 21*time.Second), false, 12},
		{"ten as the revert came in", adds(10, 21*time.Second), true, 12},
		{"one once the revert was in", adds(1, 30*time.Second), true, 12},
		// Of 24 entries, a sync that saw 12 names still replaced is not held (half, not more).
		{"twelve of 24 as the revert came in", adds(12, 21*time.Second), false, 24},
		{"thirteen of 24 as the revert came in", adds(13, 21*time.Second), true, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel()
			m.bursts = []*burst{{n: 1, inst: "a", ns: burstNamespace, at: t0, applied: t0, end: t0.Add(20 * time.Second), reverted: t0.Add(20 * time.Second),
				entries: burstEntries(12, 0), news: news, held: true, leaving: 12, base: tc.base}}
			ck := testChecker(m, t0)
			l := newLedger()
			for _, w := range tc.ws {
				l.write(w)
			}
			got := ck.checkBursts(l, t0.Add(time.Minute))
			if (len(got) > 0) != tc.fail || slices.ContainsFunc(got, func(f Failure) bool { return f.Invariant != InvBrake }) {
				t.Fatalf("failures %v, want a %s failure: %v", got, InvBrake, tc.fail)
			}
		})
	}
}
