package soak

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
)

// The hostname-replacement burst: a values typo or a domain moved gives most objects of one
// namespace new hostnames at once. Every old name is then an entry leaving and every new name
// waits with it: the mass-deletion brake holds the namespace (more than half of its entries,
// and at least ten) until the cause goes away or the deletion is confirmed with the token the
// installation logs. The soak does both: after a seeded few seconds it reverts the hostnames,
// or restarts the installation's replicas with --confirm-mass-deletion=<token>.

const (
	// burstInstallation and burstNamespace are where bursts happen: a namespace of cluster a
	// that holds only the burst's objects, so that the share is the soak's to choose.
	burstInstallation = "a"
	burstNamespace    = "a4"
	// burstObjects is how many objects the namespace holds, each with one hostname and one
	// address; a burst renames from two thirds of them to all. A revert reaches the loop as a
	// burst does, in one sync or several, and a sync that sees too few names still replaced to
	// trip the brake lets them go (letGo).
	burstObjects = 24
	// brakeMinimum is the operators' --mass-deletion-namespace-minimum (the default), and a
	// namespace is held when more than half of its entries would leave.
	brakeMinimum = 10
	// burstLag is how long after the burst's last change a sync that planned on part of it
	// may still send what it planned: a burst that reaches the loop in two syncs is held from
	// the second, and the first may mark some of the old names and write some new ones.
	burstLag = 3 * time.Second
	// tokenWait is how long the soak waits for the installation to log the brake's token;
	// revertTokenWait how long, after a late burst's revert, for a token of the revert held.
	tokenWait       = 30 * time.Second
	revertTokenWait = 8 * time.Second
)

// burst is one hostname-replacement burst, as the soak made it and the checker holds it.
type burst struct {
	n        int
	inst, ns string
	// at is when the renames began, applied when the last was taken; end when the hold ends
	// (the revert began, or the first replica restarted with the token), zero while it holds;
	// reverted when the revert's last change was taken.
	at, applied, end, reverted time.Time
	// entries are the namespace's unmarked entries of the installation just before: what the
	// brake must keep. leaving and base are the entries that leave with the renames (marked
	// ones included) and all of the namespace's, as the brake counts them.
	entries        []*pb.HostEntry
	leaving, base  int
	oldHosts, news []string
	// held says the brake must hold: at least brakeMinimum entries leave, more than half of
	// the namespace's. late says a kube-apiserver restart came close before or during it, so
	// the operators may see it only after the hold (client-go's relist): no token is asked of
	// them then.
	held, late bool
	outcome    string
	token      string
}

func (b *burst) String() string {
	return fmt.Sprintf("burst %d of %s's namespace %s", b.n, b.inst, b.ns)
}

// holding reports whether the brake holds b at t. The caller holds m.mu.
func (b *burst) holding(t time.Time) bool {
	return b.heldWhole() && !t.Before(b.at) && (b.end.IsZero() || t.Before(b.end))
}

// burstHost is object k's hostname in generation gen of the namespace's names.
func burstHost(k, gen int) string { return fmt.Sprintf("%s-%d-v%d.soak.lan", burstNamespace, k, gen) }

// burstSeed creates the burst namespace's objects before the operators start: HostMappings
// and Ingresses by annotation, one hostname and one address each, which the churn never
// touches.
func (d *driver) burstSeed(ctx context.Context) error {
	c := specOf(burstInstallation)
	for k := 0; k < burstObjects; k++ {
		o := &Object{Cluster: c.name, Namespace: burstNamespace, Name: fmt.Sprintf("burst-%d", k), Kind: KindHostMapping, addressing: bySpec,
			Hosts: []string{burstHost(k, 0)}, IPs: d.ips(c.name, 1), pinned: true}
		if k%2 == 1 {
			o.Kind, o.addressing = KindIngress, byAnnotation
		}
		if err := d.put(ctx, o, "created in the burst namespace"); err != nil {
			return err
		}
	}
	return nil
}

// scheduleBursts picks from the seed when the run's bursts come (one, two in a churn of two
// minutes or more), how many objects each renames, how long it is held and how it ends.
func (d *driver) scheduleBursts() {
	span := d.end.Sub(d.start)
	n := 1
	if span >= 2*time.Minute {
		n = 2
	}
	for i := 0; i < n; i++ {
		from := span / 4
		if n == 2 {
			from = span/6 + time.Duration(i)*span/2
		}
		at := d.start.Add(from + time.Duration(d.rng.Int63n(int64(span/6)+1)))
		renames := burstObjects*2/3 + d.rng.Intn(burstObjects-burstObjects*2/3+1)
		hold := time.Duration(8000+d.rng.Intn(6000)) * time.Millisecond
		confirm := d.rng.Intn(2) == 0
		d.pending = append(d.pending, pendingAction{at: at, name: "burst", do: func(ctx context.Context) error {
			return d.replaceBurst(ctx, renames, hold, confirm)
		}})
	}
}

// burstObjectsNow are the burst namespace's objects, by index.
func (d *driver) burstObjectsNow() []*Object {
	os := d.objectsOf(burstInstallation, func(o *Object) bool { return o.Namespace == burstNamespace })
	sort.Slice(os, func(i, j int) bool {
		var a, b int
		fmt.Sscanf(os[i].Name, "burst-%d", &a)
		fmt.Sscanf(os[j].Name, "burst-%d", &b)
		return a < b
	})
	return os
}

// replaceBurst gives renames objects of the burst namespace new hostnames at once, having
// noted the namespace's entries on the router; hold later it reverts them or confirms. While
// the router is down, it waits for it.
func (d *driver) replaceBurst(ctx context.Context, renames int, hold time.Duration, confirm bool) error {
	if d.routerDown {
		d.later(time.Second, "burst", func(ctx context.Context) error { return d.replaceBurst(ctx, renames, hold, confirm) })
		return nil
	}
	entries, err := d.w.list(ctx)
	if err != nil {
		d.later(time.Second, "burst", func(ctx context.Context) error { return d.replaceBurst(ctx, renames, hold, confirm) })
		return nil
	}
	os := d.burstObjectsNow()
	picked := d.rng.Perm(len(os))[:renames]
	slices.Sort(picked)
	d.burstGen++
	b := &burst{n: len(d.m.bursts) + 1, inst: burstInstallation, ns: burstNamespace}
	d.ck.burstSnapshot(newView(entries), b, os, picked)
	b.at = time.Now()
	olds := map[*Object][]string{}
	news := map[*Object][]string{}
	for _, k := range picked {
		o := os[k]
		olds[o], news[o] = o.Hosts, []string{burstHost(k, d.burstGen)}
		b.oldHosts = append(b.oldHosts, o.Hosts...)
		b.news = append(b.news, news[o]...)
		d.m.dropHosts(o, nil, b.at)
	}
	d.m.update(func() {
		b.late = d.m.apiserverNear(b.at)
		d.m.bursts = append(d.m.bursts, b)
	})
	if err := d.applyHosts(ctx, news); err != nil {
		return err
	}
	b.applied = time.Now()
	for o, hs := range news {
		d.m.addHosts(o, hs, b.applied)
	}
	d.note(fmt.Sprintf("%s: %d of its %d objects renamed at once (%v → %v); %d of its %d entries leave, held: %v",
		b, renames, len(os), b.oldHosts, b.news, b.leaving, b.base, b.held), append(slices.Clone(b.oldHosts), b.news...)...)
	d.later(hold, "burst-end", func(ctx context.Context) error { return d.endBurst(ctx, b, olds, news, confirm) })
	return nil
}

// applyHosts writes each object's new hostnames, all at once, as a chart's upgrade does.
func (d *driver) applyHosts(ctx context.Context, hosts map[*Object][]string) error {
	objects := make([]Object, 0, len(hosts))
	for o, hs := range hosts {
		n := *o
		n.Hosts = hs
		objects = append(objects, n)
	}
	return harness.Pool(0, len(objects), func(i int) error { return d.w.kube.apply(ctx, &objects[i]) })
}

// endBurst ends the hold: the renames reverted (the cause goes away), or the deletion
// confirmed with the token the installation logged, its replicas restarted with it one after
// the other. A burst the operators may have seen late (a kube-apiserver restart) is reverted,
// and one with no token logged too, after a failure when the brake had to hold it.
//
// While the router is down the end waits for it: the soak's wait for the token holds the
// driver, and with it the router's return, so a burst the operator has not read yet could not
// be seen at all. When the faults are healed it waits no more, and a router still down makes
// the burst late.
func (d *driver) endBurst(ctx context.Context, b *burst, olds, news map[*Object][]string, confirm bool) error {
	if d.routerDown && !d.healing {
		d.later(time.Second, "burst-end", func(ctx context.Context) error { return d.endBurst(ctx, b, olds, news, confirm) })
		return nil
	}
	late := d.routerDown
	d.m.update(func() { late = late || b.late || d.m.apiserverNear(time.Now()) })
	wait := time.Duration(0)
	if b.held && !late {
		// The hold goes on while the soak waits: a leader killed just before has its Lease
		// to wait out.
		wait = tokenWait
	}
	token, err := waitToken(d.w.dir, b, b.at, wait)
	if err != nil {
		return err
	}
	d.m.update(func() { b.token, b.late = token, late })
	if b.held && !late && token == "" {
		d.ck.fail(time.Now(), InvBrake, b.oldHosts, "%s: %d of %d entries leaving, but %s logged no MassDeletionHeld warning for namespace %s with a token",
			b, b.leaving, b.base, b.inst, b.ns)
	}
	if confirm && token != "" {
		end := time.Now()
		d.m.update(func() { b.end, b.outcome = end, "confirmed with "+token })
		return d.confirmBurst(b, token, "confirmed")
	}
	end := time.Now()
	d.m.update(func() { b.end, b.outcome = end, "reverted" })
	for o := range news {
		d.m.dropHosts(o, nil, end)
	}
	if err := d.applyHosts(ctx, olds); err != nil {
		return err
	}
	reverted := time.Now()
	for o, hs := range olds {
		d.m.addHosts(o, hs, reverted)
	}
	d.m.update(func() { b.reverted = reverted })
	d.note(fmt.Sprintf("%s: reverted (token logged: %q)", b, token), append(slices.Clone(b.oldHosts), b.news...)...)
	if !late {
		return nil
	}
	// A burst seen in parts may have gone through, part by part; its revert is then a mass
	// replacement of its own, which the brake holds until it is confirmed, as a person would.
	again, err := waitToken(d.w.dir, b, reverted, revertTokenWait)
	if err != nil || again == "" {
		return err
	}
	return d.confirmBurst(b, again, "its revert held, and confirmed")
}

// confirmBurst restarts the replicas of b's installation one after the other with
// --confirm-mass-deletion=token.
func (d *driver) confirmBurst(b *burst, token, what string) error {
	d.w.confirm[b.inst] = token
	name := ""
	d.m.update(func() { name = d.m.names[b.inst] })
	started, err := d.w.restartAll(b.inst, name)
	if err != nil {
		return err
	}
	d.note(fmt.Sprintf("%s: %s, %s's replicas restarted with --confirm-mass-deletion=%s (%v)", b, what, b.inst, token, started), b.oldHosts...)
	return nil
}

// burstSnapshot notes what the brake must keep of the burst namespace before b renames the
// objects picked: the installation's unmarked entries there, and whether the brake must hold
// (the entries leaving, marked ones included, against all of the namespace's).
func (c *checker) burstSnapshot(v *view, b *burst, os []*Object, picked []int) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	renamed := map[string]bool{}
	for _, k := range picked {
		for _, h := range os[k].Hosts {
			renamed[h] = true
		}
	}
	for _, e := range v.entries {
		if c.owner(e) != b.inst {
			continue
		}
		tags, _ := c.opTags(e)
		if !slices.Equal(values(tags, registry.PrefixNamespace), []string{b.ns}) {
			continue
		}
		b.base++
		switch {
		case len(values(tags, registry.PrefixPending)) > 0:
			b.leaving++
		case renamed[strings.ToLower(e.GetHostname())]:
			b.leaving++
			b.entries = append(b.entries, e)
		default:
			b.entries = append(b.entries, e)
		}
	}
	b.held = b.leaving >= brakeMinimum && 2*b.leaving > b.base
}

// apiserverNear reports whether a kube-apiserver was down at t or came back less than
// relistLag before it: what the operators see of the cluster may lag that long. The caller
// holds m.mu.
func (m *Model) apiserverNear(t time.Time) bool {
	for _, iv := range m.apiDown {
		if !t.Before(iv.start) && (iv.end.IsZero() || t.Before(iv.end.Add(relistLag))) {
			return true
		}
	}
	return false
}

// heldLine is the brake's warning, with the token it names.
var heldLine = regexp.MustCompile(`^time="([^"]+)" level=warning msg="[^\n]*--confirm-mass-deletion=([0-9]+-[0-9a-f]+)[^\n]*reason=MassDeletionHeld`)

// heldToken is the token of the last MassDeletionHeld warning of log about namespace ns
// logged at since or later (to the second, as the log says it), "" when there is none.
func heldToken(log, ns string, since time.Time) string {
	token := ""
	s := bufio.NewScanner(strings.NewReader(log))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if !strings.Contains(line, "of namespace "+ns+"'s ") {
			continue
		}
		m := heldLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if t, err := time.Parse(time.RFC3339, m[1]); err != nil || t.Before(since.Truncate(time.Second)) {
			continue
		}
		token = m[2]
	}
	return token
}

// waitToken reads the brake's token for b's namespace from its installation's logs, every
// process's, logged since, waiting up to wait for it to show.
func waitToken(dir string, b *burst, since time.Time, wait time.Duration) (string, error) {
	deadline := time.Now().Add(wait)
	for {
		logs, err := filepath.Glob(filepath.Join(dir, "operator-"+b.inst+"-*.log"))
		if err != nil {
			return "", fmt.Errorf("the logs of %s: %w", b.inst, err)
		}
		token, last := "", time.Time{}
		for _, l := range logs {
			st, err := os.Stat(l)
			if err != nil {
				continue
			}
			text, err := os.ReadFile(l)
			if err != nil {
				continue
			}
			if t := heldToken(string(text), b.ns, since); t != "" && st.ModTime().After(last) {
				token, last = t, st.ModTime()
			}
		}
		if token != "" || !time.Now().Before(deadline) {
			return token, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// pollBursts is the brake's part of an availability poll of the hosts file at now: while a
// burst is held, every name the brake keeps answers, router restarts excepted.
func (c *checker) pollBursts(lines map[string][]hostsLine, now time.Time, restarting bool) {
	if restarting {
		return
	}
	c.m.mu.Lock()
	var missing []string
	var which []*burst
	for _, b := range c.m.bursts {
		if !b.holding(now) {
			continue
		}
		for _, e := range b.entries {
			if h := strings.ToLower(e.GetHostname()); len(lines[h]) == 0 {
				missing = append(missing, h)
				which = append(which, b)
			}
		}
	}
	c.m.mu.Unlock()
	for i, h := range missing {
		c.fail(now, InvBrake, []string{h}, "%s is held, yet %s, which %s's entry %s served, stopped resolving", which[i], h, which[i].inst, idOf(which[i], h))
	}
}

func idOf(b *burst, h string) string {
	for _, e := range b.entries {
		if strings.EqualFold(e.GetHostname(), h) {
			return e.GetId()
		}
	}
	return ""
}

// checkBursts holds every write of a burst's installation to InvBrake. During the hold, from
// burstLag after its last rename, none is for an entry the brake keeps, and none adds one of
// the new names. A burst and its revert each reach the loop in one sync or several, and a sync
// that saw only part of one is held only if that part trips the brake: so while each comes in
// (until burstLag after its last change), as many new names may be written as do not trip it
// (letGo), and none once a revert is in.
func (c *checker) checkBursts(l *ledger, now time.Time) []Failure {
	out := c.checkBurstHolds(l, now)
	c.m.mu.Lock()
	bursts := slices.Clone(c.m.bursts)
	c.m.mu.Unlock()
	for _, b := range bursts {
		if !b.heldWhole() {
			continue
		}
		type stretch struct {
			what     string
			from, to time.Time
			most     int
		}
		stretches := []stretch{{"as the burst came in", b.at, b.applied.Add(burstLag), b.letGo()}}
		if !b.reverted.IsZero() {
			stretches = append(stretches, stretch{"as the revert came in", b.end, b.reverted.Add(burstLag), b.letGo()},
				stretch{"once reverted", b.reverted.Add(burstLag), now, 0})
		}
		for _, s := range stretches {
			var added []string
			for _, w := range l.since(s.from) {
				if w.inst == b.inst && w.at.Before(s.to) && w.method == methodAdd && slices.Contains(b.news, strings.ToLower(w.host)) {
					added = append(added, strings.ToLower(w.host))
				}
			}
			if len(added) > s.most {
				out = append(out, Failure{At: s.from.Sub(c.start), Invariant: InvBrake, Hosts: added, Detail: fmt.Sprintf(
					"%s (%d of %d entries leaving): %s wrote %d of its new names %s, want at most %d", b, b.leaving, b.base, b.inst, len(added), s.what, s.most)})
			}
		}
	}
	return out
}

// heldWhole says the brake must hold the burst as a whole: it must (held), and the operators
// see it whole within burstLag. A burst near a kube-apiserver restart (late) may reach the loop
// in parts seconds apart, as client-go relists each kind in its own time; each part is judged
// alone, and the brake keeps no memory of the parts before (docs/ownership.md): with the
// burst's grace period of 0, a part too small to trip it is gone before the next comes.
func (b *burst) heldWhole() bool { return b.held && !b.late }

// letGo is the most new names a sync that saw only part of the burst or of its revert may
// write: the part it saw trips the brake only with at least brakeMinimum names replaced and
// more than half of the namespace's entries.
func (b *burst) letGo() int { return max(brakeMinimum-1, b.base/2) }

// checkBurstHolds is checkBursts' part during the holds.
func (c *checker) checkBurstHolds(l *ledger, now time.Time) []Failure {
	c.m.mu.Lock()
	bursts := slices.Clone(c.m.bursts)
	c.m.mu.Unlock()
	var out []Failure
	for _, b := range bursts {
		if !b.heldWhole() {
			continue
		}
		end := b.end
		if end.IsZero() {
			end = now
		}
		ids := map[string]bool{}
		for _, e := range b.entries {
			ids[e.GetId()] = true
		}
		var found []Failure
		for _, w := range l.since(b.applied.Add(burstLag)) {
			if w.inst != b.inst || !w.at.Before(end) {
				continue
			}
			var problem, host string
			switch {
			case w.method != methodAdd && ids[w.id]:
				problem = "an entry the brake keeps: " + describe(nonNil(l.version(w.id, w.expected)))
				if before := l.version(w.id, w.expected); before != nil {
					host = strings.ToLower(before.GetHostname())
				}
			case w.method == methodAdd && slices.Contains(b.news, strings.ToLower(w.host)):
				problem, host = "one of the new names the brake keeps back", strings.ToLower(w.host)
			default:
				continue
			}
			found = append(found, Failure{At: w.at.Sub(c.start), Invariant: InvBrake, Hosts: []string{host}, Detail: fmt.Sprintf(
				"%s is held (%d of %d entries leaving), yet %s sent %s for %s", b, b.leaving, b.base, w.inst, w, problem)})
		}
		out = append(out, found...)
	}
	return out
}

// burstReport says what each burst was and how it ended, for the run's report.
func burstReport(m *Model, start time.Time) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, b := range m.bursts {
		hold := "not held (too few of its entries on the router)"
		if b.held {
			hold = "held"
		}
		if b.late {
			hold += ", near a kube-apiserver restart (judged in parts, not held to the hold)"
		}
		d := "still held"
		if !b.end.IsZero() {
			d = fmt.Sprintf("%s after %v", b.outcome, b.end.Sub(b.applied).Round(100*time.Millisecond))
		}
		out = append(out, fmt.Sprintf("%s at %v: %d names replaced, %d of %d entries leaving, %s; %s", b, b.at.Sub(start).Round(100*time.Millisecond),
			len(b.news), b.leaving, b.base, hold, d))
	}
	return out
}
