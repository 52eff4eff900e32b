package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// driver plays the world at random from the seed: clusters' objects created, re-pointed,
// renamed, deleted and recreated; the person editing the router by hand; operators killed,
// the router and the apiserver restarted, the network to one cluster slowed, killed and
// reset. Everything it chooses comes from the seed and from what it did itself, never from
// what the operators did, so a seed replays the same actions in the same order.
type driver struct {
	w     *world
	m     *Model
	ck    *checker
	rng   *rand.Rand
	start time.Time
	end   time.Time
	hist  *history
	// pending are the actions a fault left for later: a restart, a healed network, a
	// recreation.
	pending []pendingAction
	counts  map[string]int
	// next numbers objects and the person's adoptable names.
	next int
	// routerDown and netFault say which faults are under way.
	routerDown, netFault bool
	// quietLeaderFrom is when the run stops killing cluster a's leader, so that its
	// resources can be followed over one long-lived process; zero for never.
	quietLeaderFrom time.Time
	// now is when the action under way was due: what a fault schedules is timed from it,
	// not from the clock, so the order of all actions is the seed's alone, however long
	// each one takes.
	now time.Time
	// frozen are the installations whose objects the churn leaves alone for now (around the
	// rename).
	frozen map[string]bool
	// healing is set once the churn is over and heal runs what the faults left pending.
	healing bool
	// renameWaited is set once the rename has waited for the installation to catch up.
	renameWaited bool
	// twinUp is when each twin's process started, zero while it is down; twinReserved the
	// twins' hostnames a recreation to come will claim.
	twinUp       map[string]time.Time
	twinReserved map[string]bool
	// burstGen numbers the generations of the burst namespace's hostnames.
	burstGen int
	// share are a's and b's objects for the shared name, while they exist; shareNotes what
	// the churn did to them, for the report.
	share      map[string]*Object
	shareNotes []string
}

type pendingAction struct {
	at   time.Time
	name string
	do   func(ctx context.Context) error
}

// action is one kind of thing that happens, with its weight among all.
type action struct {
	name   string
	weight float64
	do     func(d *driver, ctx context.Context) error
}

var actions = []action{
	{"create", 14, (*driver).create},
	{"repoint", 9, (*driver).repoint},
	{"rename", 5, (*driver).rename},
	{"delete", 6, (*driver).remove},
	{"recreate", 3, (*driver).recreate},
	{"lose-address", 3, (*driver).loseAddress},
	{"regain-address", 3, (*driver).regainAddress},
	{"aliases-tags", 3, (*driver).aliasesTags},
	{"hand-add", 3, (*driver).handAdd},
	{"hand-edit", 4, (*driver).handEdit},
	{"hand-delete", 1.5, (*driver).handDelete},
	{"hand-add-adoptable", 2, (*driver).handAddAdoptable},
	{"kill-leader", 1.2, (*driver).killLeader},
	{"kill-follower", 0.8, (*driver).killFollower},
	{"kill-b", 0.8, (*driver).killB},
	{"kill-n", 0.5, (*driver).killN},
	{"router-restart", 0.8, (*driver).routerRestart},
	{"apiserver-restart", 0.15, (*driver).apiserverRestart},
	{"network-fault", 2, (*driver).networkFault},
	{"twin-create", 1.5, (*driver).twinCreate},
	{"twin-repoint", 1, (*driver).twinRepoint},
	{"twin-rename", 0.6, (*driver).twinRename},
	{"twin-delete", 0.8, (*driver).twinDelete},
	{"twin-recreate", 0.5, (*driver).twinRecreate},
	{"kill-twin", 0.6, (*driver).killTwin},
}

// gap is the time between two actions: a third of a second on average.
func (d *driver) gap() time.Duration {
	return time.Duration(100+d.rng.Intn(460)) * time.Millisecond
}

// run plays actions until the churn's end.
func (d *driver) run(ctx context.Context) error {
	total := 0.0
	for _, a := range actions {
		total += a.weight
	}
	next := d.start.Add(d.gap())
	for {
		sort.SliceStable(d.pending, func(i, j int) bool { return d.pending[i].at.Before(d.pending[j].at) })
		at := next
		fromPending := len(d.pending) > 0 && !d.pending[0].at.After(next)
		if fromPending {
			at = d.pending[0].at
		}
		if at.After(d.end) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(at)):
		}
		d.now = at
		if fromPending {
			p := d.pending[0]
			d.pending = d.pending[1:]
			d.counts[p.name]++
			if err := p.do(ctx); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			continue
		}
		pick := d.rng.Float64() * total
		for _, a := range actions {
			if pick -= a.weight; pick < 0 {
				d.counts[a.name]++
				if err := a.do(d, ctx); err != nil {
					return fmt.Errorf("%s: %w", a.name, err)
				}
				break
			}
		}
		next = next.Add(d.gap())
	}
}

// heal ends every fault at once: what the faults left pending (restarts, a twin away, a
// healed network, a burst's revert or confirmation) runs now; recreations are dropped, their
// objects stay deleted, and so are the rename, a twin's going away and a burst if still to
// come, and the shared name's moves still to come; a rename still to be checked is checked
// once the world settles.
func (d *driver) heal(ctx context.Context) error {
	d.healing = true
	pending := d.pending
	d.pending = nil
	for _, p := range pending {
		switch p.name {
		case "recreated", "freeze", "cluster-rename", "rename-checked", "twin-away", "twin-away-deferred", "burst", "share-same", "share-move", "share-back":
			continue
		}
		if err := p.do(ctx); err != nil {
			return fmt.Errorf("healing (%s): %w", p.name, err)
		}
	}
	return nil
}

func (d *driver) later(after time.Duration, name string, do func(ctx context.Context) error) {
	d.pending = append(d.pending, pendingAction{at: d.now.Add(after), name: name, do: do})
}

// note records an action in the history, timed from the start of the churn (0 before it).
func (d *driver) note(what string, hosts ...string) {
	at := time.Duration(0)
	if !d.start.IsZero() {
		at = time.Since(d.start)
	}
	d.hist.add(at, what, hosts)
}

// pickCluster is a for nine actions in twenty, b for six, n for five; an installation the
// churn leaves alone for now is drawn again.
func (d *driver) pickCluster() clusterSpec {
	for {
		c := clusterSpecs[2]
		switch r := d.rng.Intn(20); {
		case r < 9:
			c = clusterSpecs[0]
		case r < 15:
			c = clusterSpecs[1]
		}
		if !d.frozen[c.name] {
			return c
		}
	}
}

// objectsOf are a cluster's objects that match keep, in a stable order.
func (d *driver) objectsOf(cluster string, keep func(*Object) bool) []*Object {
	d.m.mu.Lock()
	defer d.m.mu.Unlock()
	var out []*Object
	for _, o := range d.m.objects {
		if o.Cluster == cluster && (keep == nil || keep(o)) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// pickObject picks one of a cluster's objects that match keep, never a pinned one.
func (d *driver) pickObject(cluster string, keep func(*Object) bool) *Object {
	os := d.objectsOf(cluster, func(o *Object) bool { return !o.pinned && (keep == nil || keep(o)) })
	if len(os) == 0 {
		return nil
	}
	return os[d.rng.Intn(len(os))]
}

// maxObjects bounds each cluster's objects, so the hostnames stay contended.
const maxObjects = 22

// ip is a random address of a cluster's range.
func (d *driver) ip(cluster string) string {
	return fmt.Sprintf("10.77.%d.%d", cluster[0]-'a'+1, 1+d.rng.Intn(24))
}

func (d *driver) ips(cluster string, n int) []string {
	var out []string
	for len(out) < n {
		if ip := d.ip(cluster); !slices.Contains(out, ip) {
			out = append(out, ip)
		}
	}
	slices.Sort(out)
	return out
}

// hostname picks a name for an object of cluster in namespace ns: mostly from the cluster's
// small pool, so that objects share names and namespaces contend for them; sometimes one
// another object of the namespace has, one another namespace holds, one the third cluster
// owns, or one the person made by hand.
func (d *driver) hostname(c clusterSpec, ns string, avoid []string) string {
	for {
		h := d.hostnameOnce(c, ns)
		if !slices.Contains(avoid, h) {
			return h
		}
	}
}

func (d *driver) hostnameOnce(c clusterSpec, ns string) string {
	r := d.rng.Float64()
	sameNS := d.claimedNames(c.name, func(o *Object) bool { return o.Namespace == ns })
	// The burst namespace's names are its own: a claim elsewhere would change its share.
	otherNS := d.claimedNames(c.name, func(o *Object) bool { return o.Namespace != ns && !slices.Contains(c.quiet, o.Namespace) })
	hand := d.adoptableNames(c.name)
	switch {
	case r < 0.12 && len(sameNS) > 0:
		return sameNS[d.rng.Intn(len(sameNS))]
	case r < 0.26 && len(otherNS) > 0:
		return otherNS[d.rng.Intn(len(otherNS))]
	case r < 0.31:
		return fmt.Sprintf("c-%d.soak.lan", d.rng.Intn(3))
	case r < 0.42 && len(hand) > 0:
		return hand[d.rng.Intn(len(hand))]
	}
	return fmt.Sprintf("%s-%d.soak.lan", c.name, d.rng.Intn(10))
}

func (d *driver) claimedNames(cluster string, keep func(*Object) bool) []string {
	var out []string
	// The shared name is its two objects' alone.
	for _, o := range d.objectsOf(cluster, func(o *Object) bool { return !o.Shared && (keep == nil || keep(o)) }) {
		out = append(out, o.Hosts...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// adoptableNames are the hand-* names the person made for cluster, still there.
func (d *driver) adoptableNames(cluster string) []string {
	d.m.mu.Lock()
	defer d.m.mu.Unlock()
	var out []string
	for _, h := range d.m.hand {
		name := strings.ToLower(h.Entry.GetHostname())
		if h.Adoptable && !h.Deleted && adoptableBy(name) == cluster {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// adoptableBy is the installation whose objects may claim the hand-made name: hand-N goes to
// a for even N, to b for odd.
func adoptableBy(name string) string {
	var n int
	if _, err := fmt.Sscanf(name, "hand-%d.", &n); err != nil {
		return ""
	}
	return clusterSpecs[n%2].name
}

var (
	aliasPool = []string{"x-0.soak.lan", "x-1.soak.lan", "x-2.soak.lan", "x-3.soak.lan", "x-4.soak.lan", "x-5.soak.lan"}
	tagPool   = []string{"team-web", "tier-1", "env-lab", "owner-bob"}
)

func (d *driver) aliases() []string {
	var out []string
	for i := d.rng.Intn(3); i > 0; i-- {
		out = append(out, aliasPool[d.rng.Intn(len(aliasPool))])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// tags are a few of the user's tags, now and then with a reserved one the operator must drop.
func (d *driver) tags() []string {
	var out []string
	for i := d.rng.Intn(3); i > 0; i-- {
		out = append(out, tagPool[d.rng.Intn(len(tagPool))])
	}
	if d.rng.Intn(20) == 0 {
		out = append(out, registry.PrefixCluster+"z")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// newObject makes up an object of cluster c: a kind, a namespace, hostnames, addresses.
func (d *driver) newObject(c clusterSpec) *Object {
	d.next++
	k := kinds[d.rng.Intn(len(kinds))]
	o := &Object{Cluster: c.name, Namespace: c.namespaces[d.rng.Intn(len(c.namespaces))], Kind: k,
		Name: fmt.Sprintf("%s-%d", strings.ToLower(string(k)), d.next)}
	hosts := 1
	if k != KindHostMapping {
		hosts += d.rng.Intn(2)
	}
	for len(o.Hosts) < hosts {
		o.Hosts = append(o.Hosts, d.hostname(c, o.Namespace, o.Hosts))
	}
	switch k {
	case KindIngress:
		o.addressing = byAnnotation
		if d.rng.Intn(5) < 2 {
			o.addressing = byStatus
		}
		o.IPs = d.ips(c.name, 1+d.rng.Intn(2))
	case KindIngressRoute:
		o.addressing, o.IPs = byAnnotation, d.ips(c.name, 1)
	case KindService:
		o.addressing, o.IPs = byStatus, d.ips(c.name, 1+d.rng.Intn(2))
	case KindHostMapping:
		o.addressing, o.IPs = bySpec, d.ips(c.name, 1)
	case KindHTTPRoute:
		o.addressing, o.Gateway = byGateway, c.gateways[d.rng.Intn(len(c.gateways))]
	}
	o.Aliases, o.Tags = d.aliases(), d.tags()
	if k == KindHostMapping {
		// The HostMapping CRD refuses a reserved tag at the apiserver.
		o.Tags = slices.DeleteFunc(o.Tags, registry.Reserved)
	}
	if d.rng.Intn(4) == 0 {
		o.Grace = []int{2, 8}[d.rng.Intn(2)]
	}
	return o
}

func (d *driver) create(ctx context.Context) error {
	c := d.pickCluster()
	if len(d.objectsOf(c.name, func(o *Object) bool { return !slices.Contains(c.quiet, o.Namespace) })) >= maxObjects {
		return d.remove(ctx)
	}
	return d.put(ctx, d.newObject(c), "created")
}

// put creates o in the cluster and records it; an object addressed by its status is held
// until the status is written.
func (d *driver) put(ctx context.Context, o *Object, verb string) error {
	ips := o.IPs
	if o.addressing == byStatus {
		o.IPs = nil
	}
	uid, created, err := d.w.kube.create(ctx, o)
	if err != nil {
		return err
	}
	o.UID, o.Created = uid, created
	if o.Kind == KindHTTPRoute {
		// A route claims nothing until its Gateway has accepted it.
		if err := d.w.kube.writeStatus(ctx, o); err != nil {
			return err
		}
	}
	d.m.add(o, time.Now())
	if o.addressing == byStatus {
		o2 := *o
		o2.IPs = ips
		if err := d.w.kube.writeStatus(ctx, &o2); err != nil {
			return err
		}
		d.m.setIPs(o, ips, time.Now())
	}
	d.note(fmt.Sprintf("%s %s: hosts %v at %v, aliases %v, tags %v, grace %d", verb, o, o.Hosts, d.addrText(o), o.Aliases, o.Tags, o.Grace), o.Hosts...)
	return nil
}

func (d *driver) addrText(o *Object) string {
	if o.addressing == byGateway {
		return "Gateway " + o.Gateway
	}
	d.m.mu.Lock()
	defer d.m.mu.Unlock()
	return fmt.Sprint(o.IPs)
}

func (d *driver) repoint(ctx context.Context) error {
	c := d.pickCluster()
	if d.rng.Intn(5) == 0 {
		gw := d.m.gateways[c.name+"/"+c.gateways[d.rng.Intn(len(c.gateways))]]
		return d.setGateway(ctx, gw, d.ips(c.name, 1+d.rng.Intn(2)))
	}
	o := d.pickObject(c.name, func(o *Object) bool { return o.addressing != byGateway && len(o.IPs) > 0 })
	if o == nil {
		return nil
	}
	n := 1
	if o.Kind == KindIngress || o.Kind == KindService {
		n += d.rng.Intn(2)
	}
	return d.setIPs(ctx, o, d.ips(c.name, n))
}

// setIPs gives o new addresses (none: it loses its address and is held).
func (d *driver) setIPs(ctx context.Context, o *Object, ips []string) error {
	n := *o
	n.IPs = ips
	var err error
	if o.addressing == byStatus {
		err = d.w.kube.writeStatus(ctx, &n)
	} else {
		err = d.w.kube.apply(ctx, &n)
	}
	if err != nil {
		return err
	}
	d.m.setIPs(o, ips, time.Now())
	d.note(fmt.Sprintf("re-pointed %s to %v", o, ips), o.Hosts...)
	return nil
}

func (d *driver) setGateway(ctx context.Context, gw *Gateway, ips []string) error {
	n := *gw
	n.IPs = ips
	if err := d.w.kube.writeGatewayStatus(ctx, &n); err != nil {
		return err
	}
	d.m.setGatewayIPs(gw, ips, time.Now())
	var hosts []string
	for _, o := range d.objectsOf(gw.Cluster, func(o *Object) bool { return o.Gateway == gw.Name }) {
		hosts = append(hosts, o.Hosts...)
	}
	d.note(fmt.Sprintf("Gateway %s/%s of cluster %s now at %v", gw.Namespace, gw.Name, gw.Cluster, ips), hosts...)
	return nil
}

func (d *driver) rename(ctx context.Context) error {
	c := d.pickCluster()
	o := d.pickObject(c.name, nil)
	if o == nil {
		return nil
	}
	i := d.rng.Intn(len(o.Hosts))
	old := o.Hosts[i]
	repl := d.hostname(c, o.Namespace, o.Hosts)
	keep := slices.Delete(slices.Clone(o.Hosts), i, i+1)
	d.m.dropHosts(o, keep, time.Now())
	n := *o
	n.Hosts = append(slices.Clone(keep), repl)
	if err := d.w.kube.apply(ctx, &n); err != nil {
		return err
	}
	d.m.addHosts(o, []string{repl}, time.Now())
	d.note(fmt.Sprintf("renamed %s's %s to %s", o, old, repl), old, repl)
	return nil
}

func (d *driver) remove(ctx context.Context) error {
	o := d.pickObject(d.pickCluster().name, nil)
	if o == nil {
		return nil
	}
	return d.deleteObject(ctx, o, "deleted")
}

// deleteObject ends o's claims and deletes it.
func (d *driver) deleteObject(ctx context.Context, o *Object, verb string) error {
	d.m.remove(o, time.Now())
	if err := d.w.kube.delete(ctx, o); err != nil {
		return err
	}
	d.note(fmt.Sprintf("%s %s", verb, o), o.Hosts...)
	return nil
}

// recreate deletes an object and creates it again under the same name within the grace
// period: a new object (a new UID) claiming the same names.
func (d *driver) recreate(ctx context.Context) error {
	o := d.pickObject(d.pickCluster().name, nil)
	if o == nil {
		return nil
	}
	if err := d.deleteObject(ctx, o, "deleted (to recreate)"); err != nil {
		return err
	}
	again := &Object{Cluster: o.Cluster, Namespace: o.Namespace, Name: o.Name, Kind: o.Kind, addressing: o.addressing, Gateway: o.Gateway,
		Hosts: slices.Clone(o.Hosts), IPs: slices.Clone(o.IPs), Aliases: o.Aliases, Tags: o.Tags, Grace: o.Grace}
	if len(again.IPs) == 0 && again.addressing == byStatus {
		again.IPs = d.ips(o.Cluster, 1)
	}
	d.later(time.Duration(300+d.rng.Intn(1700))*time.Millisecond, "recreated", func(ctx context.Context) error {
		return d.put(ctx, again, "recreated")
	})
	return nil
}

func (d *driver) loseAddress(ctx context.Context) error {
	c := d.pickCluster()
	if d.rng.Intn(4) == 0 {
		gw := d.m.gateways[c.name+"/"+c.gateways[d.rng.Intn(len(c.gateways))]]
		if len(gw.IPs) == 0 {
			return nil
		}
		return d.setGateway(ctx, gw, nil)
	}
	o := d.pickObject(c.name, func(o *Object) bool { return o.addressing == byStatus && len(o.IPs) > 0 })
	if o == nil {
		return nil
	}
	return d.setIPs(ctx, o, nil)
}

func (d *driver) regainAddress(ctx context.Context) error {
	c := d.pickCluster()
	if d.rng.Intn(4) == 0 {
		gw := d.m.gateways[c.name+"/"+c.gateways[d.rng.Intn(len(c.gateways))]]
		if len(gw.IPs) > 0 {
			return nil
		}
		return d.setGateway(ctx, gw, d.ips(c.name, 1))
	}
	o := d.pickObject(c.name, func(o *Object) bool { return o.addressing == byStatus && len(o.IPs) == 0 })
	if o == nil {
		return nil
	}
	return d.setIPs(ctx, o, d.ips(c.name, 1+d.rng.Intn(2)))
}

func (d *driver) aliasesTags(ctx context.Context) error {
	o := d.pickObject(d.pickCluster().name, nil)
	if o == nil {
		return nil
	}
	n := *o
	n.Aliases, n.Tags = d.aliases(), d.tags()
	if o.Kind == KindHostMapping {
		n.Tags = slices.DeleteFunc(n.Tags, registry.Reserved)
	}
	if err := d.w.kube.apply(ctx, &n); err != nil {
		return err
	}
	d.m.update(func() { o.Aliases, o.Tags = n.Aliases, n.Tags })
	d.note(fmt.Sprintf("%s now has aliases %v, tags %v", o, n.Aliases, n.Tags), o.Hosts...)
	return nil
}

// spell writes a hostname as a person might: as it is, or capitalised.
func (d *driver) spell(name string) string {
	if d.rng.Intn(3) == 0 {
		parts := strings.Split(name, ".")
		for i, p := range parts {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
		return strings.Join(parts, ".")
	}
	return name
}

var personTags = [][]string{nil, {"manual"}, {"manual", "owner:alice"}, {"kind:printer"}, {"iot", "manual"}}

// handWrite sends one of the person's writes while holding the person's lock, so that the
// checker never compares an entry with a write under way.
func (d *driver) handWrite(ctx context.Context, write func(ctx context.Context) error) error {
	if d.routerDown {
		return nil
	}
	d.m.personMu.Lock()
	defer d.m.personMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return write(ctx)
}

// handAdd makes an entry by hand on a name no cluster ever claims.
func (d *driver) handAdd(ctx context.Context) error {
	name := d.spell(fmt.Sprintf("p-%d.soak.lan", d.rng.Intn(8)))
	req := &pb.AddHostRequest{IpAddress: fmt.Sprintf("192.168.77.%d", 1+d.rng.Intn(40)), Hostname: name,
		Tags: personTags[d.rng.Intn(len(personTags))], Comment: proto.String(fmt.Sprintf("made by hand #%d", d.rng.Intn(100)))}
	if d.rng.Intn(3) == 0 {
		req.Aliases = []string{"alias-" + strings.ToLower(name)}
	}
	return d.handWrite(ctx, func(ctx context.Context) error {
		if d.liveHand(name) {
			return nil // one entry a name, as a person keeps them
		}
		resp, err := d.w.person.AddHost(ctx, req)
		if err != nil {
			return fmt.Errorf("AddHost %s by hand: %w", name, err)
		}
		d.w.ledger.saw(resp.GetEntry())
		d.m.update(func() { d.m.hand[resp.GetEntry().GetId()] = &HandEntry{Entry: resp.GetEntry()} })
		d.note(fmt.Sprintf("by hand: added %s", describe([]*pb.HostEntry{resp.GetEntry()})), strings.ToLower(name))
		return nil
	})
}

func (d *driver) liveHand(name string) bool {
	d.m.mu.Lock()
	defer d.m.mu.Unlock()
	for _, h := range d.m.hand {
		if !h.Deleted && strings.EqualFold(h.Entry.GetHostname(), name) {
			return true
		}
	}
	return false
}

// handPick picks one of the person's entries on names no cluster claims.
func (d *driver) handPick() *HandEntry {
	d.m.mu.Lock()
	defer d.m.mu.Unlock()
	var ids []string
	for id, h := range d.m.hand {
		if !h.Adoptable && !h.Deleted {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	return d.m.hand[ids[d.rng.Intn(len(ids))]]
}

// handEdit re-points, re-tags or re-comments one of the person's entries.
func (d *driver) handEdit(ctx context.Context) error {
	h := d.handPick()
	if h == nil {
		return nil
	}
	e := h.Entry
	req := &pb.UpdateHostRequest{Id: e.GetId(), ExpectedVersion: proto.String(e.GetVersion())}
	switch d.rng.Intn(3) {
	case 0:
		req.IpAddress = proto.String(fmt.Sprintf("192.168.77.%d", 41+d.rng.Intn(40)))
	case 1:
		req.Tags = &pb.TagsUpdate{Values: personTags[d.rng.Intn(len(personTags))]}
	default:
		req.Comment = proto.String(fmt.Sprintf("edited by hand #%d", d.rng.Intn(100)))
	}
	return d.handWrite(ctx, func(ctx context.Context) error {
		resp, err := d.w.person.UpdateHost(ctx, req)
		if err != nil {
			return fmt.Errorf("UpdateHost %s by hand: %w", e.GetHostname(), err)
		}
		d.w.ledger.saw(resp.GetEntry())
		d.m.update(func() { h.Entry = resp.GetEntry() })
		d.note(fmt.Sprintf("by hand: edited to %s", describe([]*pb.HostEntry{resp.GetEntry()})), strings.ToLower(e.GetHostname()))
		return nil
	})
}

func (d *driver) handDelete(ctx context.Context) error {
	h := d.handPick()
	if h == nil {
		return nil
	}
	e := h.Entry
	return d.handWrite(ctx, func(ctx context.Context) error {
		if _, err := d.w.person.DeleteHost(ctx, &pb.DeleteHostRequest{Id: e.GetId(), ExpectedVersion: proto.String(e.GetVersion())}); err != nil {
			return fmt.Errorf("DeleteHost %s by hand: %w", e.GetHostname(), err)
		}
		d.m.update(func() { h.Deleted = true })
		d.note(fmt.Sprintf("by hand: deleted %s", describe([]*pb.HostEntry{e})), strings.ToLower(e.GetHostname()))
		return nil
	})
}

// handAddAdoptable makes an entry by hand on a name a cluster may claim later (hand-N): the
// cluster adopts it, and gives it back once it lets go.
func (d *driver) handAddAdoptable(ctx context.Context) error {
	d.next++
	name := d.spell(fmt.Sprintf("hand-%d.soak.lan", d.next))
	req := &pb.AddHostRequest{IpAddress: fmt.Sprintf("192.168.78.%d", 1+d.rng.Intn(200)), Hostname: name,
		Tags: personTags[d.rng.Intn(len(personTags))], Comment: proto.String("the person's " + strings.ToLower(name))}
	if d.rng.Intn(2) == 0 {
		req.Aliases = []string{"old-" + strings.ToLower(name)}
	}
	return d.handWrite(ctx, func(ctx context.Context) error {
		resp, err := d.w.person.AddHost(ctx, req)
		if err != nil {
			return fmt.Errorf("AddHost %s by hand: %w", name, err)
		}
		d.w.ledger.saw(resp.GetEntry())
		d.m.update(func() { d.m.hand[resp.GetEntry().GetId()] = &HandEntry{Entry: resp.GetEntry(), Adoptable: true} })
		d.note(fmt.Sprintf("by hand: added %s, for cluster %s to claim", describe([]*pb.HostEntry{resp.GetEntry()}), adoptableBy(strings.ToLower(name))),
			strings.ToLower(name))
		return nil
	})
}

// restartIn starts r again after a moment, as a kubelet restarts a killed container.
func (d *driver) restartIn(r *replica) {
	d.later(time.Duration(500+d.rng.Intn(2500))*time.Millisecond, "operator-restarted", func(ctx context.Context) error {
		if r.current() != nil {
			return nil
		}
		p, err := r.start()
		if err != nil {
			return err
		}
		d.note("restarted operator " + p.name)
		return nil
	})
}

func (d *driver) kill(r *replica, what string) {
	if p := r.kill(); p != nil {
		d.note(fmt.Sprintf("SIGKILL %s (%s)", p.name, what))
		d.restartIn(r)
	}
}

func (d *driver) killLeader(context.Context) error {
	if !d.quietLeaderFrom.IsZero() && time.Now().After(d.quietLeaderFrom) {
		return nil
	}
	r := d.w.leader("a")
	if r == nil {
		r = d.w.replicas["a"][d.rng.Intn(len(d.w.replicas["a"]))]
	}
	d.kill(r, "cluster a's leader")
	return nil
}

func (d *driver) killFollower(context.Context) error {
	leader := d.w.leader("a")
	for _, r := range d.w.replicas["a"] {
		if r != leader && r.current() != nil {
			if !d.quietLeaderFrom.IsZero() && time.Now().After(d.quietLeaderFrom) && leader == nil {
				return nil // it may be the leader whose resources are followed
			}
			d.kill(r, "cluster a's follower")
			return nil
		}
	}
	return nil
}

func (d *driver) killB(context.Context) error {
	d.kill(d.w.replicas["b"][0], "cluster b's only replica")
	return nil
}

func (d *driver) killN(context.Context) error {
	d.kill(d.w.replicas["n"][0], "namesake n's only replica")
	return nil
}

// routerRestart takes the router down for up to three seconds, its data kept.
func (d *driver) routerRestart(context.Context) error {
	if d.routerDown {
		return nil
	}
	d.m.personMu.Lock() // no hand write is under way when it goes
	d.routerDown = true
	d.m.down(&d.m.routerDown, time.Now())
	err := d.w.stopRouter()
	d.m.personMu.Unlock()
	if err != nil {
		return err
	}
	d.note("router stopped")
	d.later(time.Duration(500+d.rng.Intn(2500))*time.Millisecond, "router-started", func(context.Context) error {
		if err := d.w.startRouter(); err != nil {
			return err
		}
		d.m.up(&d.m.routerDown, time.Now())
		d.routerDown = false
		d.note("router started")
		return nil
	})
	return nil
}

// apiserverRestart stops a kube-apiserver (a and b's for three in four, n's otherwise) and
// starts it again, etcd untouched; the churn waits for it, as kubectl would.
func (d *driver) apiserverRestart(context.Context) error {
	i := 0
	if d.rng.Intn(4) == 0 {
		i = len(d.w.cps) - 1
	}
	cp := d.w.cps[i]
	d.note(fmt.Sprintf("kube-apiserver %d stopping", i))
	start := time.Now()
	d.m.down(&d.m.apiDown, start)
	if err := cp.StopAPIServer(); err != nil {
		return err
	}
	stopped := time.Now()
	if err := cp.StartAPIServer(); err != nil {
		return err
	}
	d.m.up(&d.m.apiDown, time.Now())
	d.note(fmt.Sprintf("kube-apiserver started (stopped in %v, started in %v)", stopped.Sub(start).Round(100*time.Millisecond), time.Since(stopped).Round(100*time.Millisecond)))
	return nil
}

// networkFault makes cluster b's network to the router slow, dead or hostile for a few
// seconds.
func (d *driver) networkFault(context.Context) error {
	if d.netFault {
		return nil
	}
	mode := []netMode{netDelay, netHold, netReset}[d.rng.Intn(3)]
	delay := time.Duration(100+d.rng.Intn(700)) * time.Millisecond
	d.netFault = true
	d.w.proxy.set(mode, delay)
	d.note(fmt.Sprintf("cluster b's network: %s (%v)", mode, delay))
	d.later(time.Duration(2000+d.rng.Intn(6000))*time.Millisecond, "network-healed", func(context.Context) error {
		d.w.proxy.set(netPass, 0)
		d.netFault = false
		d.note("cluster b's network healed")
		return nil
	})
	return nil
}

const (
	// renameLead is how long before the rename the churn leaves the renamed installation's
	// objects alone, so that what it wants is written when the rename starts.
	renameLead = 4 * time.Second
	// renameSettle is how long the rename has, from the moment it was due (its replicas'
	// restarts included), to put the new name on every entry; the churn leaves the
	// installation's objects alone until then, or, when the churn ends first, to the end, and
	// the final check holds the rename to its entries.
	renameSettle = 15 * time.Second
)

// scheduleRename picks the rename's moment and new name from the seed: b is renamed, in the
// middle third of the churn, to b-renamed (a name nobody had) or to a (it joins a and n under
// a's name: a third installation of it). A churn too short for the lead has no rename.
func (d *driver) scheduleRename() {
	span := d.end.Sub(d.start)
	at := d.start.Add(span/3 + time.Duration(d.rng.Int63n(int64(span/3)+1)))
	to := []string{"b-renamed", "a"}[d.rng.Intn(2)]
	if at.Sub(d.start) < renameLead+time.Second {
		return
	}
	d.pending = append(d.pending, pendingAction{at: at.Add(-renameLead), name: "freeze", do: func(context.Context) error {
		d.frozen[renamed] = true
		d.note(fmt.Sprintf("the churn leaves %s's objects alone, for its rename to %s", renamed, to))
		return nil
	}}, pendingAction{at: at, name: "cluster-rename", do: func(ctx context.Context) error { return d.renameCluster(ctx, to) }})
}

// renameCluster restarts the renamed installation's replicas under the name to, once it has
// noted the entries its objects want; they are checked renameSettle later. While the router is
// down, the rename waits for it.
func (d *driver) renameCluster(ctx context.Context, to string) error {
	retry := func() error {
		d.later(time.Second, "cluster-rename", func(ctx context.Context) error { return d.renameCluster(ctx, to) })
		return nil
	}
	if d.routerDown {
		return retry()
	}
	entries, err := d.w.list(ctx)
	if err != nil {
		return retry()
	}
	if left := d.ck.renameUnsettled(newView(entries), renamed); len(left) > 0 {
		if !d.renameWaited {
			d.renameWaited = true
			d.note(fmt.Sprintf("the rename of %s waits: %d of its entries name objects it has not yet seen go: %s", renamed, len(left), describe(left)))
		}
		return retry()
	}
	snap := d.ck.renameSnapshot(newView(entries), renamed)
	r := &renaming{inst: renamed, to: to, at: time.Now(), snapshot: snap}
	d.m.update(func() { r.from, d.m.rename = d.m.names[renamed], r })
	d.m.renamed(renamed, to)
	started, err := d.w.restartAll(renamed, to)
	if err != nil {
		return err
	}
	var hosts []string
	for _, e := range snap {
		hosts = append(hosts, strings.ToLower(e.GetHostname()))
	}
	d.note(fmt.Sprintf("renamed installation %s from cluster %s to %s (restarted %v); %d of its entries must keep their IDs: %s",
		renamed, r.from, to, started, len(snap), describe(snap)), hosts...)
	d.later(renameSettle, "rename-checked", func(ctx context.Context) error { return d.checkRename(ctx, r) })
	return nil
}

// checkRename holds the renamed entries to their IDs and the new name, and gives the
// installation's objects back to the churn. While the router is down, the check waits for it.
func (d *driver) checkRename(ctx context.Context, r *renaming) error {
	var entries []*pb.HostEntry
	err := errors.New("the router is down")
	if !d.routerDown {
		entries, err = d.w.list(ctx)
	}
	if err != nil {
		d.later(time.Second, "rename-checked", func(ctx context.Context) error { return d.checkRename(ctx, r) })
		return nil
	}
	now := time.Now()
	for _, f := range d.ck.checkRename(newView(entries), r) {
		d.ck.fail(now, f.Invariant, f.Hosts, "%s", f.Detail)
	}
	d.m.update(func() { r.checked, r.checkedAt = true, now })
	d.frozen[r.inst] = false
	d.note(fmt.Sprintf("checked the rename of %s; the churn takes up its objects again", r.inst))
	return nil
}
