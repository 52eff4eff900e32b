package soak

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// Kind is a resource kind the soak drives, spelled as the operator writes it in kind: tags.
type Kind string

// The kinds a user runs at scale.
const (
	KindIngress      Kind = "Ingress"
	KindHostMapping  Kind = "HostMapping"
	KindService      Kind = "Service"
	KindHTTPRoute    Kind = "HTTPRoute"
	KindIngressRoute Kind = "IngressRoute"
)

var kinds = []Kind{KindIngress, KindHostMapping, KindService, KindHTTPRoute, KindIngressRoute}

// addressing is where an object's address comes from, which decides whether it can lose it.
type addressing uint8

const (
	// byAnnotation: the ip-address annotation (Ingress, IngressRoute); never lost.
	byAnnotation addressing = iota
	// bySpec: a HostMapping's spec.ipAddress; never lost.
	bySpec
	// byStatus: the load-balancer status of an Ingress or Service, which the soak empties
	// and refills as a controller would; the object is held while it is empty.
	byStatus
	// byGateway: a route's Gateway's addresses; held while the Gateway has none.
	byGateway
	// byChain: none of its own; each installation that reads it resolves it by its
	// --ip-resolution chain (the object both twins read, at each twin's static address).
	// IPs are every address it resolves to.
	byChain
)

// Object is one cluster object as the soak made it: what it claims and where its address
// comes from.
type Object struct {
	// Cluster is the installation whose cluster holds the object (clusterSpec.name).
	Cluster, Namespace, Name string
	Kind                     Kind
	addressing               addressing
	// Gateway names a route's Gateway, in its cluster's first namespace.
	Gateway string
	// UID and Created are the apiserver's, learnt when the object is created.
	UID     string
	Created time.Time
	Hosts   []string
	// IPs are the object's own addresses; empty while it has none (held). A route's come
	// from its Gateway instead.
	IPs     []string
	Aliases []string
	Tags    []string
	// Grace is the grace-period annotation in seconds; 0 when there is none.
	Grace int
	// had is every address the object has had since it was created, for the held check.
	had map[string]bool
	// since is when it began to claim each of its hostnames; addressed when it last got an
	// address (zero while it has none).
	since     map[string]time.Time
	addressed time.Time
	// pinned: the churn never touches it (a claim on a name two namesakes share).
	pinned bool
	// Shared: it shares its hostnames with other clusters (the shared annotation,
	// spec.shared on a HostMapping).
	Shared bool
}

// key names an object within the world.
func (o *Object) key() string { return o.Cluster + "/" + o.Namespace + "/" + o.Name }

func (o *Object) String() string {
	return fmt.Sprintf("%s %s/%s (cluster %s, uid %s)", o.Kind, o.Namespace, o.Name, o.Cluster, shortUID(o.UID))
}

func shortUID(uid string) string {
	if len(uid) > 8 {
		return uid[:8]
	}
	return uid
}

// Gateway is one Gateway of a cluster; its addresses are its routes'.
type Gateway struct {
	Cluster, Namespace, Name string
	IPs                      []string
}

// HandEntry is an entry the person made on the router by hand, as they last wrote it.
type HandEntry struct {
	// Entry is the server's answer to the person's last write, version included.
	Entry *pb.HostEntry
	// Adoptable: the name is one a cluster may later claim (a hand-* name); the person never
	// writes it again once a cluster has claimed it.
	Adoptable bool
	// Claimed: some object has claimed the name since the person's last write, so the entry
	// may have been adopted (and released).
	Claimed bool
	Deleted bool
}

// interval is a stretch of time during which a namespace asked for addresses on a hostname;
// an open one has a zero end.
type interval struct{ start, end time.Time }

// Model is what the soak knows it did: the objects and Gateways it keeps in the clusters,
// the person's entries, the third cluster's entries, and the history of every hostname's
// claims. The driver changes it as it acts; the checkers read it. A claim starts when the
// apiserver has taken the object and ends just before the soak asks for its removal, so the
// model never says a hostname is claimed when the operator could not know it.
type Model struct {
	// personMu is held across each of the person's writes and each of the checker's
	// listings, so the checker never compares an entry with a hand write under way.
	personMu sync.Mutex
	mu       sync.Mutex
	objects  map[string]*Object
	gateways map[string]*Gateway
	// hand are the person's entries by ID; foreign the third cluster's, as seeded.
	hand    map[string]*HandEntry
	foreign map[string]*pb.HostEntry
	// epoch counts, per hostname (lowercase), the times its last claim ended: a hostname
	// whose epoch is unchanged has been claimed without a break.
	epoch   map[string]int
	claimed map[string]bool
	// wanting holds, per cluster, hostname and namespace, when that namespace had a claim on
	// it with an address: what keeps a namespace holding a hostname once its entries are gone.
	wanting map[claimKey][]interval
	// routerDown are the stretches the router was restarting, apiDown those a
	// kube-apiserver was (either: an operator of the other cluster only waits longer).
	routerDown, apiDown outages
	// names are the cluster name each installation (and each twin pair) runs under now; ran
	// all it ran under.
	names map[string]string
	ran   map[string][]string
	// everHad are the addresses any object ever asked for on each hostname (lowercase): where
	// a twin's entry may stand, since a contested entry is never re-pointed.
	everHad map[string]map[string]bool
	// bursts are the run's hostname-replacement bursts, in order.
	bursts []*burst
	// heldBy names, for a hostname two installations both claim from the start, the one
	// that wrote it first and holds it for good: the other's claim is a conflict.
	heldBy map[string]string
	// rename is the run's rename, nil until it happens.
	rename *renaming
	// shareWants are the stretches each cluster wanted each address of the shared name, by
	// "installation|address".
	shareWants map[string][]interval
}

// renaming is an installation's rename: its replicas restarted under a new --cluster-name.
type renaming struct {
	inst, from, to string
	// at is when the first replica restarted under the new name.
	at time.Time
	// snapshot are the installation's entries its objects wanted just before, which must keep
	// their IDs and take the new name; its objects are left alone until checked.
	snapshot []*pb.HostEntry
	// checked: the snapshot was checked during the churn (at checkedAt); otherwise the final
	// check does it.
	checked   bool
	checkedAt time.Time
}

// outages are the stretches a part of the world was down, the last one open while it is.
type outages []interval

func (o *outages) begin(now time.Time) { *o = append(*o, interval{start: now}) }

func (o *outages) end(now time.Time) {
	if n := len(*o); n > 0 && (*o)[n-1].end.IsZero() {
		(*o)[n-1].end = now
	}
}

const (
	// observeLag is how long an operator may take to act on a change of the cluster: informer
	// delivery, the spacing of event-triggered syncs (1 s) and a sync.
	observeLag = 2 * time.Second
	// relistLag is how long after the kube-apiserver's return an operator may still miss what
	// changed while it was away or meanwhile: client-go's reflectors retry their watches with
	// a backoff of up to 30 s and as much jitter again, which only two minutes without a
	// failure reset (seen: an HTTPRoute's deletion noticed 56 s late after three restarts in
	// 23 s).
	relistLag = 2 * time.Minute
)

// seenBy is when the operators can be expected to have seen a change made at t. The caller
// holds m.mu.
func (m *Model) seenBy(t time.Time) time.Time {
	s := t.Add(observeLag)
	for _, iv := range m.apiDown {
		if s.Before(iv.start) {
			continue
		}
		if iv.end.IsZero() {
			return time.Unix(1<<40, 0)
		}
		if back := iv.end.Add(relistLag); s.Before(back) {
			s = back
		}
	}
	return s
}

// down records that a part of the world (the router, the kube-apiserver) went down at now;
// up that it came back.
func (m *Model) down(o *outages, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o.begin(now)
}

func (m *Model) up(o *outages, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o.end(now)
}

type claimKey struct{ cluster, host, namespace string }

func newModel() *Model {
	m := &Model{objects: map[string]*Object{}, gateways: map[string]*Gateway{}, hand: map[string]*HandEntry{},
		foreign: map[string]*pb.HostEntry{}, epoch: map[string]int{}, claimed: map[string]bool{}, wanting: map[claimKey][]interval{},
		names: map[string]string{}, ran: map[string][]string{}, heldBy: map[string]string{}, everHad: map[string]map[string]bool{},
		shareWants: map[string][]interval{}}
	for _, c := range clusterSpecs {
		m.names[c.name], m.ran[c.name] = c.clusterName, []string{c.clusterName}
		if c.twin != "" {
			m.names[c.twin], m.ran[c.twin] = c.clusterName, []string{c.clusterName}
		}
	}
	return m
}

// renamed records that inst runs under name from now on.
func (m *Model) renamed(inst, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.names[inst] = name
	if !slices.Contains(m.ran[inst], name) {
		m.ran[inst] = append(m.ran[inst], name)
	}
}

// ips are the addresses o asks for now: its own, or its Gateway's.
func (m *Model) ips(o *Object) []string {
	if o.addressing == byGateway {
		if gw := m.gateways[o.Cluster+"/"+o.Gateway]; gw != nil {
			return gw.IPs
		}
		return nil
	}
	return o.IPs
}

// claimers are the objects that claim host (lowercase) now, in every cluster.
func (m *Model) claimers(host string) []*Object {
	var out []*Object
	for _, o := range m.objects {
		if slices.Contains(o.Hosts, host) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// add records that the apiserver has taken o: its claims start now.
func (m *Model) add(o *Object, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o.had, o.since = map[string]bool{}, map[string]time.Time{}
	for _, ip := range m.ips(o) {
		o.had[ip] = true
	}
	if len(m.ips(o)) > 0 {
		o.addressed = now
	}
	for _, h := range o.Hosts {
		o.since[h] = now
	}
	m.objects[o.key()] = o
	m.noteHad(o)
	m.refresh(o.Hosts, now)
}

// noteHad records the addresses o asks for on each of its hostnames. The caller holds m.mu.
func (m *Model) noteHad(o *Object) {
	for _, h := range o.Hosts {
		if m.everHad[h] == nil {
			m.everHad[h] = map[string]bool{}
		}
		for _, ip := range m.ips(o) {
			m.everHad[h][ip] = true
		}
	}
}

// remove records that o is about to be deleted: its claims end now.
func (m *Model) remove(o *Object, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, o.key())
	m.refresh(o.Hosts, now)
}

// dropHosts records that o is about to claim only keep of its hostnames.
func (m *Model) dropHosts(o *Object, keep []string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := o.Hosts
	o.Hosts = keep
	m.refresh(old, now)
}

// addHosts records that o now claims hosts too.
func (m *Model) addHosts(o *Object, hosts []string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, h := range hosts {
		if !slices.Contains(o.Hosts, h) {
			o.Hosts = append(o.Hosts, h)
			o.since[h] = now
		}
	}
	m.noteHad(o)
	m.refresh(hosts, now)
}

// setIPs records o's new addresses (empty: held).
func (m *Model) setIPs(o *Object, ips []string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case len(ips) == 0:
		o.addressed = time.Time{}
	case len(o.IPs) == 0:
		o.addressed = now
	}
	o.IPs = ips
	for _, ip := range ips {
		o.had[ip] = true
	}
	m.noteHad(o)
	m.refresh(o.Hosts, now)
}

// setGatewayIPs records a Gateway's new addresses, which every route on it now asks for.
func (m *Model) setGatewayIPs(gw *Gateway, ips []string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gained, lost := len(gw.IPs) == 0 && len(ips) > 0, len(ips) == 0
	gw.IPs = ips
	var hosts []string
	for _, o := range m.objects {
		if o.addressing == byGateway && o.Cluster == gw.Cluster && o.Gateway == gw.Name {
			for _, ip := range ips {
				o.had[ip] = true
			}
			switch {
			case lost:
				o.addressed = time.Time{}
			case gained:
				o.addressed = now
			}
			hosts = append(hosts, o.Hosts...)
		}
	}
	m.refresh(hosts, now)
}

// update applies a change to o's other fields under the model's lock.
func (m *Model) update(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fn()
}

// refresh brings the claim history of hosts up to the objects as they are now: a hostname's
// epoch moves on when its last claim ends, a namespace's stretch of wanting addresses on it
// opens or closes, and the person's entries on a claimed name count as claimed. The caller
// holds m.mu.
func (m *Model) refresh(hosts []string, now time.Time) {
	for _, h := range hosts {
		claimed := false
		wanting := map[claimKey]bool{}
		for _, o := range m.objects {
			if !slices.Contains(o.Hosts, h) {
				continue
			}
			claimed = true
			k := claimKey{o.Cluster, h, o.Namespace}
			wanting[k] = wanting[k] || len(m.ips(o)) > 0
		}
		if m.claimed[h] && !claimed {
			m.epoch[h]++
		}
		m.claimed[h] = claimed
		for k, iv := range m.wanting {
			if k.host == h && !wanting[k] && len(iv) > 0 && iv[len(iv)-1].end.IsZero() {
				iv[len(iv)-1].end = now
			}
		}
		for k, w := range wanting {
			iv := m.wanting[k]
			if w && (len(iv) == 0 || !iv[len(iv)-1].end.IsZero()) {
				m.wanting[k] = append(iv, interval{start: now})
			}
		}
		if h == shareHost {
			m.noteShareWants(now)
		}
		if claimed {
			for _, e := range m.hand {
				if strings.EqualFold(e.Entry.GetHostname(), h) && !e.Deleted {
					e.Claimed = true
				}
			}
		}
	}
}

// hadGap reports whether namespace ns of cluster went without asking for an address on host
// for at least d in one stretch that touches [from, to]: what a namespace must go through
// before another one may take a hostname it held. The caller holds m.mu.
func (m *Model) hadGap(cluster, host, ns string, d time.Duration, from, to time.Time) bool {
	var gapStart time.Time // before its first claim, the namespace never held the name
	for _, iv := range m.wanting[claimKey{cluster, host, ns}] {
		// A claim the operators cannot have seen yet does not end the gap for them.
		start := m.seenBy(iv.start)
		if iv.end.IsZero() || start.Before(iv.end) {
			iv.start = start
		}
		if !iv.start.Before(from) && iv.start.Sub(gapStart) >= d && !gapStart.After(to) {
			return true
		}
		if iv.end.IsZero() {
			return false
		}
		gapStart = iv.end
	}
	// The stretch since the last claim ended counts up to to.
	return to.Sub(gapStart) >= d
}

// routerRestarting reports whether the router was restarting at t, or had come back less
// than settle before it; availability is not asked of it then.
func (m *Model) routerRestarting(t time.Time, settle time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, iv := range m.routerDown {
		if !t.Before(iv.start) && (iv.end.IsZero() || t.Before(iv.end.Add(settle))) {
			return true
		}
	}
	return false
}
