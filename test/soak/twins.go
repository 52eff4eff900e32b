package soak

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// Twins: t1 and t2 share one identity, as a cluster restored from an etcd backup and its
// original do, or two releases on one Lease name. Each takes the other's entries for its own:
// it marks the names only the other's objects want and re-points the name they both want to
// its own address, and the other undoes it. Each counts the other's undoing, and two strikes
// make an entry contested, which it then never re-points, marks or deletes; a name the other
// twin wrote while it ran, it keeps for 30 minutes after that write whatever it wants. What the
// soak holds them to: no name a twin's object wants ever stops answering, even with one twin
// away for several grace periods; once settled both say so and write nothing; and the other
// installations never notice them.

const (
	// twinPair is the twins' cluster name, and the pair's name in the model: the owner of the
	// entries of their one identity and the label of the object both read.
	twinPair = "t"
	// twinSharedNamespace holds the object both twins read.
	twinSharedNamespace = "t0"
	// twinInterval and twinGrace are the twins' --interval and --grace-period. A twin is found
	// out when the other undoes its marks; a mark must outlive the interval the other takes to
	// see it, a restart of the other included, so the grace period is several intervals.
	twinInterval = 3 * time.Second
	twinGrace    = 12 * time.Second
	// twinsTogether is how long both twins' processes must have run side by side before the
	// churn takes one of them away for several grace periods: enough for a fresh process to
	// have read the router once and seen the other write, twice over, so that the one left
	// keeps the other's names. A process that started while the other was away would delete
	// them three whole reads after a grace period: nothing has told it the other exists.
	// twinsFight is how long before the churn kills one for a moment: a twin back within the
	// grace period lifts any mark the other made meanwhile, so this only keeps a kill from
	// landing in the other's first round.
	twinsTogether = 20 * time.Second
	twinsFight    = 10 * time.Second
	// twinQuiet is how long the twins must have written nothing, beside saying they have a
	// twin, for the world to count as settled: a fight's last write is the undoing that
	// gives its second strike, and it comes within an interval of each.
	twinQuiet = 3*twinInterval + time.Second
	// twinPoolSize is how many hostnames each twin's churned objects choose from, beside its
	// pinned one. It keeps the pair's entries under the brake's minimum (ten): every entry a
	// twin does not want is one it would mark, and a brake held would keep its new names back.
	twinPoolSize = 3
)

// twinHost is one of a twin's hostnames: its pinned one (i < 0) or one of its pool.
func twinHost(inst string, i int) string {
	if i < 0 {
		return inst + "-pin.soak.lan"
	}
	return fmt.Sprintf("%s-%d.soak.lan", inst, i)
}

// twinShared is the hostname of the object both twins read, each at its own static address.
const twinShared = "ts-0.soak.lan"

// finalTwins checks a twin pair's entries for one hostname once settled. Twins hold rather
// than fight: a contested entry is never re-pointed, marked or deleted, and while either holds
// no entry is deleted, so the pair keeps the names its objects dropped, and a name they
// disagree on or that moved while contested stays where the fight left it. What must hold is
// that every name a twin's object asks an address for has an entry of the pair, and that every
// entry of the pair stands at an address some object once asked for on its name. The caller
// holds m.mu.
func (c *checker) finalTwins(pair, h string, mine []*Object, owned []*pb.HostEntry, fail func(string, string, string, ...any)) {
	for _, o := range mine {
		if ips := c.m.ips(o); len(ips) > 0 && len(owned) == 0 {
			fail(InvWanted, h, "no entry of twins %s for %s, which %s wants at %v", pair, h, o, ips)
			break
		}
	}
	for _, e := range owned {
		if !c.m.everHad[h][e.GetIpAddress()] {
			fail(InvUnwanted, h, "twins %s keep %s at %s, an address no object ever asked for on it: %s", pair, h, e.GetIpAddress(), describe([]*pb.HostEntry{e}))
		}
	}
}

// twinClaimed reports whether an object of a twin pair asked for an address on host at t, with
// the claim old enough by then for the twins to have seen it (slack later than seenBy).
func (c *checker) twinClaimed(host string, t time.Time) bool {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for k, ivs := range c.m.wanting {
		if k.host != host || !isPair(ownerGroup(k.cluster)) {
			continue
		}
		for _, iv := range ivs {
			if !t.Before(c.m.seenBy(iv.start).Add(c.set.slack)) && (iv.end.IsZero() || iv.end.After(t)) {
				return true
			}
		}
	}
	return false
}

// checkTwinDeletes holds every DeleteHost a twin sent to InvTwinsKept: none is for an entry of
// a hostname a twin's object claims. A twin deletes what it marked once the grace period is
// over; the other twin, or the same one holding, lifts every mark on a name it wants first.
func (c *checker) checkTwinDeletes(l *ledger) []Failure {
	var out []Failure
	for _, w := range l.since(time.Time{}) {
		if w.method != methodDelete || !isPair(ownerGroup(w.inst)) {
			continue
		}
		before := l.version(w.id, w.expected)
		if before == nil {
			continue // never seen: checkWrites counts it
		}
		h := strings.ToLower(before.GetHostname())
		if c.twinClaimed(h, w.at) {
			out = append(out, Failure{At: w.at.Sub(c.start), Invariant: InvTwinsKept, Hosts: []string{h}, Detail: fmt.Sprintf(
				"twin %s sent %s for entry %s of %s, a name a twin's object claims: %s", w.inst, w, w.id, h, describe([]*pb.HostEntry{before}))})
		}
	}
	return out
}

// twinWarning is the log line a twin writes when it finds its twin out (registry.Twin's
// message, which names no count, and the event's reason).
var twinWarning = regexp.MustCompile(`level=warning msg="another writer undoes this installation's writes [^\n]*reason=TwinInstallation(\s|$)`)

// twinReport is what is wrong with what a twin process reports of its twin: its twin_entries
// metric (read: ok) and its log; "" when it says it has one.
func twinReport(entries float64, ok bool, log string) string {
	switch {
	case !ok:
		return "its metrics do not answer"
	case entries <= 0:
		return fmt.Sprintf("its router_hosts_operator_twin_entries is %v", entries)
	case !twinWarning.MatchString(log):
		return "its log has no TwinInstallation warning"
	}
	return ""
}

// checkTwinsHold holds the twins, once the world is settled, to InvTwinsReported: each twin's
// process runs, says it has a twin, and no twin has written anything for twinQuiet.
func checkTwinsHold(w *world, now time.Time) []Failure {
	var out []Failure
	for _, c := range clusterSpecs {
		if c.twin == "" {
			continue
		}
		p := w.replicas[c.name][0].current()
		if p == nil {
			out = append(out, Failure{Invariant: InvTwinsReported, Detail: fmt.Sprintf("twin %s does not run", c.name)})
			continue
		}
		v, ok := p.metric("router_hosts_operator_twin_entries")
		if problem := twinReport(v, ok, p.Log()); problem != "" {
			out = append(out, Failure{Invariant: InvTwinsReported, Detail: fmt.Sprintf("twin %s (%s) does not say it has a twin: %s", c.name, p.name, problem)})
		}
	}
	var last []string
	for _, wr := range w.ledger.since(now.Add(-twinQuiet)) {
		if isPair(ownerGroup(wr.inst)) {
			last = append(last, fmt.Sprintf("%s by %s for entry %s", wr, wr.inst, wr.id+wr.host))
		}
	}
	if len(last) > 0 {
		out = append(out, Failure{Invariant: InvTwinsReported, Detail: fmt.Sprintf("the twins still write: %d writes in the last %v, the last %s",
			len(last), twinQuiet, last[len(last)-1])})
	}
	return out
}

// The driver's part: the twins' objects churned, a twin killed now and then and once taken
// away for several grace periods.

// twinObjects are a twin's objects the churn may touch (never its pinned one).
func (d *driver) twinObjects(inst string) []*Object {
	return d.objectsOf(inst, func(o *Object) bool { return !o.pinned })
}

// freeTwinHosts are a twin's pool hostnames no object of it claims, nor a recreation to come.
func (d *driver) freeTwinHosts(inst string) []string {
	taken := d.claimedNames(inst, nil)
	var out []string
	for i := 0; i < twinPoolSize; i++ {
		if h := twinHost(inst, i); !slices.Contains(taken, h) && !d.twinReserved[h] {
			out = append(out, h)
		}
	}
	return out
}

func (d *driver) pickTwin() clusterSpec {
	ts := twinsOf(twinPair)
	return ts[d.rng.Intn(len(ts))]
}

// newTwinObject makes up an object of twin c on host: one hostname and one address of its
// own (from its annotation or its spec), as the pair's entries must stay few.
func (d *driver) newTwinObject(c clusterSpec, host string) *Object {
	d.next++
	k := []Kind{KindIngress, KindIngressRoute, KindHostMapping}[d.rng.Intn(3)]
	o := &Object{Cluster: c.name, Namespace: c.namespaces[0], Kind: k, Name: fmt.Sprintf("%s-%d", strings.ToLower(string(k)), d.next),
		Hosts: []string{host}, IPs: d.ips(c.name, 1), addressing: byAnnotation, Tags: slices.DeleteFunc(d.tags(), registry.Reserved)}
	if k == KindHostMapping {
		o.addressing = bySpec
	}
	return o
}

func (d *driver) twinCreate(ctx context.Context) error {
	c := d.pickTwin()
	free := d.freeTwinHosts(c.name)
	if len(free) == 0 {
		return d.twinDelete(ctx)
	}
	return d.put(ctx, d.newTwinObject(c, free[d.rng.Intn(len(free))]), "created")
}

func (d *driver) twinRepoint(ctx context.Context) error {
	os := d.twinObjects(d.pickTwin().name)
	if len(os) == 0 {
		return nil
	}
	o := os[d.rng.Intn(len(os))]
	return d.setIPs(ctx, o, d.ips(o.Cluster, 1))
}

// twinRename moves an object of a twin to another of its pool's hostnames.
func (d *driver) twinRename(ctx context.Context) error {
	c := d.pickTwin()
	os, free := d.twinObjects(c.name), d.freeTwinHosts(c.name)
	if len(os) == 0 || len(free) == 0 {
		return nil
	}
	o, repl := os[d.rng.Intn(len(os))], free[d.rng.Intn(len(free))]
	old := o.Hosts[0]
	d.m.dropHosts(o, nil, time.Now())
	n := *o
	n.Hosts = []string{repl}
	if err := d.w.kube.apply(ctx, &n); err != nil {
		return err
	}
	d.m.addHosts(o, []string{repl}, time.Now())
	d.note(fmt.Sprintf("renamed %s's %s to %s", o, old, repl), old, repl)
	return nil
}

func (d *driver) twinDelete(ctx context.Context) error {
	os := d.twinObjects(d.pickTwin().name)
	if len(os) == 0 {
		return nil
	}
	return d.deleteObject(ctx, os[d.rng.Intn(len(os))], "deleted")
}

// twinRecreate deletes an object of a twin and creates it again under its name a moment later.
func (d *driver) twinRecreate(ctx context.Context) error {
	os := d.twinObjects(d.pickTwin().name)
	if len(os) == 0 {
		return nil
	}
	o := os[d.rng.Intn(len(os))]
	if err := d.deleteObject(ctx, o, "deleted (to recreate)"); err != nil {
		return err
	}
	again := &Object{Cluster: o.Cluster, Namespace: o.Namespace, Name: o.Name, Kind: o.Kind, addressing: o.addressing,
		Hosts: slices.Clone(o.Hosts), IPs: slices.Clone(o.IPs), Tags: o.Tags}
	d.twinReserved[o.Hosts[0]] = true
	d.later(time.Duration(300+d.rng.Intn(1700))*time.Millisecond, "recreated", func(ctx context.Context) error {
		delete(d.twinReserved, again.Hosts[0])
		return d.put(ctx, again, "recreated")
	})
	return nil
}

// sideBySide reports whether both twins run, and have run side by side for at least least, at
// now. The times are the driver's (when each start was due; the churn's start for the first),
// so that the choice is the seed's.
func (d *driver) sideBySide(now time.Time, least time.Duration) bool {
	for _, c := range twinsOf(twinPair) {
		if s := d.twinUp[c.name]; s.IsZero() || now.Sub(s) < least {
			return false
		}
	}
	return true
}

// killTwin kills one twin, started again 0.5–3 s later: a fresh process that fights a round
// before it holds again. Only while the other runs, and not in its first round.
func (d *driver) killTwin(context.Context) error {
	c := d.pickTwin()
	back := time.Duration(500+d.rng.Intn(2500)) * time.Millisecond
	if !d.sideBySide(d.now, twinsFight) {
		return nil
	}
	d.takeTwinAway(c.name, back, "twin-restarted", "twin "+c.name)
	return nil
}

// takeTwinAway kills a twin and starts it again after away.
func (d *driver) takeTwinAway(inst string, away time.Duration, name, what string) {
	r := d.w.replicas[inst][0]
	p := r.kill()
	if p == nil {
		return
	}
	d.twinUp[inst] = time.Time{}
	d.note(fmt.Sprintf("SIGKILL %s (%s), back in %v", p.name, what, away.Round(100*time.Millisecond)))
	d.later(away, name, func(context.Context) error {
		if r.current() != nil {
			return nil
		}
		p, err := r.start()
		if err != nil {
			return err
		}
		d.twinUp[inst] = d.now
		d.note("restarted operator " + p.name)
		return nil
	})
}

// scheduleTwinAway picks, from the seed, the moment in the first half of the churn one twin is
// taken away for two to three grace periods; it waits until both twins have run side by side
// for twinsTogether.
// A churn too short for it has none.
func (d *driver) scheduleTwinAway() {
	span := d.end.Sub(d.start)
	at := d.start.Add(span/5 + time.Duration(d.rng.Int63n(int64(span/4)+1)))
	away := twinGrace*2 + time.Duration(d.rng.Int63n(int64(twinGrace)))
	inst := d.pickTwin().name
	if span < twinsTogether {
		return
	}
	var try func(ctx context.Context) error
	try = func(context.Context) error {
		if !d.sideBySide(d.now, twinsTogether) {
			d.later(time.Second, "twin-away-deferred", try)
			return nil
		}
		d.takeTwinAway(inst, away, "twin-back", fmt.Sprintf("twin %s away for %.1f grace periods", inst, float64(away)/float64(twinGrace)))
		return nil
	}
	d.pending = append(d.pending, pendingAction{at: at, name: "twin-away", do: try})
}

// startTwins pins each twin's own name and the name both read, creates a first object of each,
// and starts them one after the other.
func startTwins(ctx context.Context, w *world, d *driver) error {
	for i, c := range twinsOf(twinPair) {
		pin := &Object{Cluster: c.name, Namespace: c.namespaces[0], Name: "pin", Kind: KindHostMapping, addressing: bySpec,
			Hosts: []string{twinHost(c.name, -1)}, IPs: []string{fmt.Sprintf("10.77.20.%d", 101+i)}, pinned: true}
		if err := d.put(ctx, pin, "pinned"); err != nil {
			return err
		}
		if err := d.put(ctx, d.newTwinObject(c, twinHost(c.name, 0)), "created before the twins started"); err != nil {
			return err
		}
	}
	var statics []string
	for _, c := range twinsOf(twinPair) {
		statics = append(statics, c.static)
	}
	shared := &Object{Cluster: twinPair, Namespace: twinSharedNamespace, Name: "shared", Kind: KindIngress, addressing: byChain,
		Hosts: []string{twinShared}, IPs: statics, pinned: true}
	if err := d.put(ctx, shared, "pinned (both twins read it, each at its own address)"); err != nil {
		return err
	}
	for _, c := range twinsOf(twinPair) {
		if err := w.startInstallation(c); err != nil {
			return err
		}
	}
	return nil
}
