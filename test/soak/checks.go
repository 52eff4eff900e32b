package soak

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// The invariants, as failures name them.
const (
	// InvWanted: every wanted (hostname, address) has exactly one entry, owned by the right
	// cluster, carrying its objects' aliases and tags and no deletion mark.
	InvWanted = "wanted-entries"
	// InvUnwanted: nothing a cluster no longer wants is still its own after the grace period.
	InvUnwanted = "unwanted-gone"
	// InvHandMade: a hand-made entry on a name no cluster claims is exactly as the person last
	// wrote it, version included.
	InvHandMade = "hand-made-untouched"
	// InvForeign: another cluster's entries keep their version.
	InvForeign = "foreign-untouched"
	// InvAdopted: an adopted entry kept its ID, comment and the person's tags.
	InvAdopted = "adopted-kept"
	// InvReleased: a released entry is exactly what the person had.
	InvReleased = "released-exactly"
	// InvNobodyMade: no entry exists that nobody made.
	InvNobodyMade = "nobody-made"
	// InvDuplicate: no two entries share a hostname and an address.
	InvDuplicate = "no-duplicates"
	// InvAvailability: a hostname that resolves keeps resolving while it stays claimed.
	InvAvailability = "availability"
	// InvSticky: a namespace that holds a hostname keeps it until it has let go of it for a
	// grace period.
	InvSticky = "sticky-namespace"
	// InvOneHolder: once settled, no alias an operator's entry carries is carried by an entry
	// of another namespace, another cluster or a person.
	InvOneHolder = "one-holder-per-name"
	// InvProcess: no operator process panicked, raced or exited on its own.
	InvProcess = "process"
	// InvResources: the leader's memory, goroutines and file descriptors do not grow
	// without bound.
	InvResources = "resources"
	// InvOwnWrites: no installation writes another's entries. Every write an installation
	// sends (its tap saw it) is to an entry of its own identity, or adopts a hand-made one;
	// it leaves the entry of its own identity, or gives it back; and it names a cluster the
	// installation runs under. A namesake's entries, which carry its name, are never written.
	// Sharing is the exception: on another installation's shared line it writes its co-owner
	// tag and nothing else, and a line of its own it co-owns it hands over to its co-owner.
	InvOwnWrites = "own-entries-only"
	// InvRename: a rename keeps the entries: once it settles, every entry the renamed
	// installation's objects wanted before has the same ID and carries the new name alone.
	InvRename = "rename-keeps-ids"
	// InvQuiet: once the world has settled, a quiet window of a sync of every installation
	// and more (three, in a run of a minute or longer) sees no write at all: no installation
	// rewrites what another wrote (namesakes do not fight), and none rewrites its own.
	InvQuiet = "bounded-writes"
	// InvNamesakes: once settled, each installation's leader reports as many namesakes as
	// the router shows other identities under its name.
	InvNamesakes = "namesakes-reported"
	// InvTwinsKept: no twin deletes an entry of a hostname a twin's object claims: twins may
	// fight over an address, never over whether a name answers.
	InvTwinsKept = "twin-names-kept"
	// InvTwinsReported: once settled, each twin says it has a twin (the twin_entries metric
	// and a TwinInstallation warning in its log) and has stopped writing.
	InvTwinsReported = "twins-reported"
	// InvBrake: while a hostname-replacement burst is held, none of its namespace's entries is
	// written or deleted, none of its new names is written, its old names keep answering, and
	// the installation says MassDeletionHeld with the token that lets it through.
	InvBrake = "brake-holds"
)

// Failure is one broken invariant.
type Failure struct {
	// At is when it was seen, from the start of the churn.
	At        time.Duration
	Invariant string
	Hosts     []string
	Detail    string
	// Again counts the later times the same invariant failed for the same hostnames.
	Again int
}

func (f Failure) String() string {
	again := ""
	if f.Again > 0 {
		again = fmt.Sprintf(" (and %d times again)", f.Again)
	}
	return fmt.Sprintf("[%s] %s at %s%s: %s", f.Invariant, strings.Join(f.Hosts, ","), f.At.Round(time.Millisecond), again, f.Detail)
}

// operatorFacts are what the checker must know of the operators' configuration.
type operatorFacts struct {
	// clusters are the owners of entries (ownerGroup: an installation, or a twin pair), with
	// their default grace period; ids the identities of the installations and of the pairs.
	clusters map[string]time.Duration
	ids      map[string]string
	// slack is how late an operator may act on what it is told: informer delivery, the spacing
	// of event-triggered syncs and one sync.
	slack time.Duration
	// writeLag is how long a write may take to land after the sync planned it (the operators'
	// --request-timeout): a deletion mark carries the time it was planned.
	writeLag time.Duration
}

// checker holds the invariants against what the router shows. The continuous checks run
// during the churn; the final ones once it has stopped and the operators have had the
// settle time.
type checker struct {
	m     *Model
	set   operatorFacts
	start time.Time

	mu       sync.Mutex
	failures []Failure
	// reported indexes failures by invariant and hostnames: a state that stays broken is one
	// failure, seen again at every check.
	reported map[string]int

	// Availability, from the hosts file: each hostname's lines when it last resolved, and
	// its state.
	lastLines map[string][]hostsLine
	hosts     map[string]*hostState
	// Vanishes are every stretch a claimed hostname did not resolve.
	Vanishes []Vanish

	// lastNS is the namespace a cluster's entries named for a hostname at the last listing.
	lastNS map[nsKey]nsSeen

	// share is the shared name's availability (InvSharedAvailable).
	share shareState
}

type nsKey struct{ cluster, host string }

// nsSeen is what a listing showed of a cluster's entries for a hostname: the namespace they
// name and when each one's grace period can end at the earliest.
type nsSeen struct {
	ns string
	at time.Time
	// due is the latest of the entries' earliest ends of grace: a marked entry's mark plus
	// its grace period; an unmarked one cannot carry a mark from before this listing, less
	// the time a write may take to land.
	due time.Time
}

// hostState is one hostname's availability.
type hostState struct {
	resolving, claimed bool
	epoch              int
	// vanished is when it stopped resolving while claimed; zero while it resolves.
	vanished time.Time
}

// Vanish is a stretch a claimed hostname did not resolve.
type Vanish struct {
	Host     string
	At       time.Duration
	Duration time.Duration
}

func newChecker(m *Model, set operatorFacts, start time.Time) *checker {
	return &checker{m: m, set: set, start: start, reported: map[string]int{}, hosts: map[string]*hostState{}, lastLines: map[string][]hostsLine{},
		lastNS: map[nsKey]nsSeen{}}
}

// fail records a failure; the same invariant failing again for the same hostnames is counted
// on the first one. Vanishings and process failures are each their own.
func (c *checker) fail(now time.Time, inv string, hosts []string, format string, args ...any) {
	f := Failure{At: now.Sub(c.start), Invariant: inv, Hosts: hosts, Detail: fmt.Sprintf(format, args...)}
	key := f.Invariant + "|" + strings.Join(hosts, ",")
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.reported[key]; ok && inv != InvAvailability && inv != InvProcess {
		c.failures[i].Again++
		return
	}
	c.reported[key] = len(c.failures)
	c.failures = append(c.failures, f)
}

// Failures are the failures recorded so far.
func (c *checker) Failures() []Failure {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Failure(nil), c.failures...)
}

// pollHosts is one availability poll of the hosts file, read at now. A hostname is claimed
// while an object asks for it that has an address (from when the operators can have seen
// that: seenBy), or whose source tag its lines carried when it last resolved (a held object
// keeps exactly those); once it resolves while claimed, every poll that finds it gone before
// its claim ends is part of a vanishing. Router restarts are excepted.
func (c *checker) pollHosts(lines map[string][]hostsLine, now time.Time) {
	restarting := c.m.routerRestarting(now, 2*time.Second)
	c.m.mu.Lock()
	type look struct {
		claimed bool
		epoch   int
	}
	looks := map[string]look{}
	for _, o := range c.m.objects {
		held := len(c.m.ips(o)) == 0
		for _, h := range o.Hosts {
			l := looks[h]
			l.epoch = c.m.epoch[h]
			since := o.since[h]
			if o.addressed.After(since) {
				since = o.addressed
			}
			seen := !held && !now.Before(c.m.seenBy(since))
			l.claimed = l.claimed || seen || carries(c.lastLines[h], registry.PrefixSource+o.UID)
			looks[h] = l
		}
	}
	for h := range c.hosts {
		if _, ok := looks[h]; !ok {
			looks[h] = look{epoch: c.m.epoch[h]}
		}
	}
	c.m.mu.Unlock()
	for h, l := range looks {
		st := c.hosts[h]
		if st == nil {
			st = &hostState{}
			c.hosts[h] = st
		}
		res := len(lines[h]) > 0
		if !st.vanished.IsZero() && (res || !l.claimed || l.epoch != st.epoch) {
			c.endVanish(h, st, now)
		}
		if st.vanished.IsZero() && st.resolving && st.claimed && l.claimed && l.epoch == st.epoch && !res && !restarting {
			st.vanished = now
		}
		st.resolving, st.claimed, st.epoch = res, l.claimed, l.epoch
		if res {
			c.lastLines[h] = lines[h]
		}
	}
	c.pollBursts(lines, now, restarting)
	c.pollShared(lines[shareHost], now, restarting)
}

// endVanish closes a vanishing and reports it with its duration.
func (c *checker) endVanish(h string, st *hostState, now time.Time) {
	d := now.Sub(st.vanished)
	c.mu.Lock()
	c.Vanishes = append(c.Vanishes, Vanish{Host: h, At: st.vanished.Sub(c.start), Duration: d})
	c.mu.Unlock()
	var was []string
	for _, l := range c.lastLines[h] {
		was = append(was, fmt.Sprintf("%s %s %v", l.IP, l.Hostname, l.Tags))
	}
	c.fail(st.vanished, InvAvailability, []string{h}, "stopped resolving for %v while claimed; its lines before: %s", d.Round(time.Millisecond), strings.Join(was, "; "))
	st.vanished = time.Time{}
}

// closeVanishes ends the vanishings still open at the end of the run.
func (c *checker) closeVanishes(now time.Time) {
	for h, st := range c.hosts {
		if !st.vanished.IsZero() {
			c.endVanish(h, st, now)
		}
	}
}

func carries(lines []hostsLine, tag string) bool {
	for _, l := range lines {
		if slices.Contains(l.Tags, tag) {
			return true
		}
	}
	return false
}

// view is the checker's reading of the router's entries.
type view struct {
	entries []*pb.HostEntry
	byHost  map[string][]*pb.HostEntry
	// byName are the entries that carry each name (lowercase), as hostname or alias.
	byName map[string][]*pb.HostEntry
}

func newView(entries []*pb.HostEntry) *view {
	v := &view{entries: entries, byHost: map[string][]*pb.HostEntry{}, byName: map[string][]*pb.HostEntry{}}
	for _, e := range entries {
		h := strings.ToLower(e.GetHostname())
		v.byHost[h] = append(v.byHost[h], e)
		for _, n := range append([]string{h}, e.GetAliases()...) {
			n = strings.ToLower(n)
			if !slices.Contains(v.byName[n], e) {
				v.byName[n] = append(v.byName[n], e)
			}
		}
	}
	return v
}

// holderOf is who an entry's names belong to: "installation/namespace" for an operator's
// entry, "" for anyone else's (a person's, the third cluster's). Namesakes' namespaces of one
// name are two holders.
func (c *checker) holderOf(e *pb.HostEntry) string {
	cluster := c.owner(e)
	if cluster == "" || c.m.foreign[e.GetId()] != nil {
		return ""
	}
	tags, _ := c.opTags(e)
	return cluster + "/" + strings.Join(values(tags, registry.PrefixNamespace), ",")
}

// carriedElsewhere reports whether an entry of anyone but holder carries name: one namespace of
// one cluster holds each name, hostname or alias, and a person's and the third cluster's names
// are theirs.
func (c *checker) carriedElsewhere(v *view, name, holder string) bool {
	for _, e := range v.byName[strings.ToLower(name)] {
		if h := c.holderOf(e); h == "" || h != holder {
			return true
		}
	}
	return false
}

// opTags are the tags of e the operator wrote: all of them, except on a hand-made entry,
// where the person's own tags (as they last wrote them) come first and are theirs. ok is
// false when a hand-made entry no longer starts with the person's tags.
func (c *checker) opTags(e *pb.HostEntry) (tags []string, ok bool) {
	h := c.m.hand[e.GetId()]
	if h == nil {
		return e.GetTags(), true
	}
	mine := h.Entry.GetTags()
	if len(e.GetTags()) < len(mine) || !slices.Equal(e.GetTags()[:len(mine)], mine) {
		return nil, false
	}
	return e.GetTags()[len(mine):], true
}

// owner is the installation whose operator owns e, by the identity its tags carry, "" when
// none does (a person's entry, cluster c's, or one with no identity or an unknown one).
func (c *checker) owner(e *pb.HostEntry) string {
	tags, ok := c.opTags(e)
	if !ok {
		return ""
	}
	return c.ownerOfTags(tags)
}

func (c *checker) ownerOfTags(tags []string) string {
	if !slices.Contains(tags, registry.TagOwner) {
		return ""
	}
	ids := clusterIDs(tags)
	if len(ids) != 1 {
		return ""
	}
	// Twins share an identity: their entries are the pair's.
	for _, inst := range sortedKeys(c.set.ids) {
		if c.set.ids[inst] == ids[0] {
			return ownerGroup(inst)
		}
	}
	return ""
}

// namedRight reports whether e carries one cluster: tag, a name its owner inst has run
// under. The caller holds m.mu.
func (c *checker) namedRight(e *pb.HostEntry, inst string) bool {
	tags, _ := c.opTags(e)
	cs := clusterNames(tags)
	return len(cs) == 1 && slices.Contains(c.m.ran[inst], cs[0])
}

func values(tags []string, prefix string) []string {
	var out []string
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, prefix); ok {
			out = append(out, v)
		}
	}
	return out
}

// clusterNames are the cluster names of tags' cluster: tags.
func clusterNames(tags []string) []string {
	var out []string
	for _, t := range tags {
		if name, _, ok := registry.ParseClusterTag(t); ok {
			out = append(out, name)
		}
	}
	return out
}

// clusterIDs are the identities tags carry, in cluster-id: tags or (versions before the
// design's tags) after the name in their cluster: tags.
func clusterIDs(tags []string) []string {
	var out []string
	for _, t := range tags {
		if id, ok := registry.TagIdentity(t); ok {
			out = append(out, id)
		}
	}
	return out
}

// describe renders entries for a failure message.
func describe(es []*pb.HostEntry) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, fmt.Sprintf("{%s %s %s v%s aliases=%v tags=%v comment=%q}", e.GetId(), e.GetIpAddress(), e.GetHostname(),
			e.GetVersion(), e.GetAliases(), e.GetTags(), e.GetComment()))
	}
	if len(parts) == 0 {
		return "{none}"
	}
	return strings.Join(parts, " ")
}

// continuous are the checks that hold at every moment, churn or not: the person's and the
// other cluster's entries untouched, nothing nobody made, no duplicate, and no namespace
// taking a hostname from one that still holds it. The caller holds the person's lock, so
// that no hand write is under way.
func (c *checker) continuous(v *view, now time.Time) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	byID := map[string]*pb.HostEntry{}
	for _, e := range v.entries {
		byID[e.GetId()] = e
	}
	for id, h := range c.m.hand {
		if h.Claimed || h.Deleted {
			continue
		}
		if e := byID[id]; e == nil {
			c.fail(now, InvHandMade, []string{strings.ToLower(h.Entry.GetHostname())}, "the person's entry %s is gone; they last wrote %s",
				id, describe([]*pb.HostEntry{h.Entry}))
		} else if !proto.Equal(stripTimes(e), stripTimes(h.Entry)) {
			c.fail(now, InvHandMade, []string{strings.ToLower(h.Entry.GetHostname())}, "the person's entry was written by someone else: is %s, they last wrote %s",
				describe([]*pb.HostEntry{e}), describe([]*pb.HostEntry{h.Entry}))
		}
	}
	for id, f := range c.m.foreign {
		if e := byID[id]; e == nil || !proto.Equal(stripTimes(e), stripTimes(f)) {
			c.fail(now, InvForeign, []string{strings.ToLower(f.GetHostname())}, "cluster c's entry changed: is %s, was %s",
				describe(nonNil(e)), describe([]*pb.HostEntry{f}))
		}
	}
	for _, e := range v.entries {
		if c.m.hand[e.GetId()] != nil || c.m.foreign[e.GetId()] != nil {
			continue
		}
		if inst := c.owner(e); inst == "" {
			c.fail(now, InvNobodyMade, []string{strings.ToLower(e.GetHostname())}, "an entry neither the person, cluster c nor a running installation made: %s",
				describe([]*pb.HostEntry{e}))
		} else if !c.namedRight(e, inst) {
			c.fail(now, InvNobodyMade, []string{strings.ToLower(e.GetHostname())}, "an entry of %s's identity under a name it never ran as (it ran as %v): %s",
				inst, c.m.ran[inst], describe([]*pb.HostEntry{e}))
		}
	}
	for h, es := range v.byHost {
		seen := map[string]bool{}
		for _, e := range es {
			if seen[e.GetIpAddress()] {
				c.fail(now, InvDuplicate, []string{h}, "two entries for %s at %s: %s", h, e.GetIpAddress(), describe(es))
			}
			seen[e.GetIpAddress()] = true
		}
	}
	c.sticky(v, now)
}

func nonNil(e *pb.HostEntry) []*pb.HostEntry {
	if e == nil {
		return nil
	}
	return []*pb.HostEntry{e}
}

// stripTimes is e without its timestamps, which a restarted server may render differently.
func stripTimes(e *pb.HostEntry) *pb.HostEntry {
	c := proto.Clone(e).(*pb.HostEntry)
	c.CreatedAt, c.UpdatedAt = nil, nil
	return c
}

// sticky checks that a cluster's entries for a hostname move from one namespace to another
// only as a hand-over: the old namespace had let go of it (no claim with an address at some
// moment since the last listing), and every one of its entries had been marked for its whole
// grace period. The caller holds m.mu.
func (c *checker) sticky(v *view, now time.Time) {
	for cluster, def := range c.set.clusters {
		if isPair(cluster) {
			// Each twin's names live in one namespace of its own; what the pair must keep is
			// its names (finalTwins, checkTwinDeletes).
			continue
		}
		for h, es := range v.byHost {
			var (
				nss []string
				due time.Time
			)
			for _, e := range es {
				if c.owner(e) != cluster {
					continue
				}
				tags, _ := c.opTags(e)
				nss = append(nss, values(tags, registry.PrefixNamespace)...)
				grace := def
				for _, g := range values(tags, registry.PrefixGracePeriod) {
					var s int
					if _, err := fmt.Sscan(g, &s); err == nil {
						grace = time.Duration(s) * time.Second
					}
				}
				from := now.Add(-c.set.writeLag)
				if m := values(tags, registry.PrefixPending); len(m) > 0 {
					if t, err := time.Parse(time.RFC3339, m[0]); err == nil {
						from = t
					}
				}
				if d := from.Add(grace); d.After(due) {
					due = d
				}
			}
			slices.Sort(nss)
			nss = slices.Compact(nss)
			if len(nss) != 1 {
				continue
			}
			k := nsKey{cluster, h}
			last, ok := c.lastNS[k]
			c.lastNS[k] = nsSeen{ns: nss[0], at: now, due: due}
			if !ok || last.ns == nss[0] {
				continue
			}
			switch {
			case now.Before(last.due.Add(-c.set.slack)):
				c.fail(now, InvSticky, []string{h}, "cluster %s's entries moved from namespace %s to %s before %s's grace period could end (%s): %s",
					cluster, last.ns, nss[0], last.ns, last.due.Sub(c.start).Round(time.Millisecond), describe(es))
			case !c.m.hadGap(cluster, h, last.ns, 0, last.at.Add(-c.set.slack), now):
				c.fail(now, InvSticky, []string{h}, "cluster %s's entries moved from namespace %s to %s while %s claimed %s all along: %s",
					cluster, last.ns, nss[0], last.ns, h, describe(es))
			}
		}
	}
}

// final checks the state the churn must settle into: every wanted entry right, nothing
// unwanted owned, adoptions and releases exact. It returns the failures instead of recording
// them, since the operators may still be converging; the last call's are the result.
func (c *checker) final(v *view) []Failure {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	var out []Failure
	fail := func(inv string, h string, format string, args ...any) {
		out = append(out, Failure{Invariant: inv, Hosts: []string{h}, Detail: fmt.Sprintf(format, args...)})
	}
	hosts := map[string]bool{}
	for h := range v.byHost {
		hosts[h] = true
	}
	for _, o := range c.m.objects {
		for _, h := range o.Hosts {
			hosts[h] = true
		}
	}
	for _, h := range sortedKeys(hosts) {
		claims := c.m.claimers(h)
		for cluster := range c.set.clusters {
			var mine []*Object
			for _, o := range claims {
				if ownerGroup(o.Cluster) == cluster {
					mine = append(mine, o)
				}
			}
			var owned []*pb.HostEntry
			for _, e := range v.byHost[h] {
				if c.owner(e) == cluster {
					owned = append(owned, e)
				}
			}
			if isPair(cluster) {
				c.finalTwins(cluster, h, mine, owned, fail)
				continue
			}
			c.finalHost(cluster, h, mine, owned, v, fail)
		}
		c.finalHand(h, claims, v, fail)
	}
	c.finalCoOwners(v, fail)
	for _, e := range v.entries {
		holder := c.holderOf(e)
		if holder == "" {
			continue
		}
		for _, a := range e.GetAliases() {
			if c.carriedElsewhere(v, a, holder) {
				fail(InvOneHolder, strings.ToLower(e.GetHostname()), "%s's entry carries the alias %s, which another holder's entry carries too: %s",
					holder, a, describe(v.byName[strings.ToLower(a)]))
			}
		}
	}
	return out
}

// finalHost checks one cluster's entries for one hostname against its claims.
func (c *checker) finalHost(cluster, h string, mine []*Object, owned []*pb.HostEntry, v *view, fail func(string, string, string, ...any)) {
	all := v.byHost[h]
	// The lines another cluster wrote and this one co-owns serve this one's addresses too.
	coOwned := map[string]bool{}
	for _, e := range c.coOwnedBy(cluster, all) {
		coOwned[e.GetIpAddress()] = true
	}
	// A name cluster c holds, or one a namesake wrote first, is never this installation's.
	foreignHeld := c.m.heldBy[h] != "" && c.m.heldBy[h] != cluster
	for _, e := range all {
		if f := c.m.foreign[e.GetId()]; f != nil {
			foreignHeld = true
		}
	}
	switch {
	case len(mine) == 0 || foreignHeld:
		if len(owned) > 0 {
			fail(InvUnwanted, h, "cluster %s still owns %s although none of its objects may have it: %s", cluster, h, describe(owned))
		}
		return
	case len(owned) == 0:
		// A hostname without entries goes to the oldest claim with an address; only held
		// claims ask for nothing.
		for _, o := range mine {
			if ips := c.m.ips(o); len(ips) > 0 && slices.ContainsFunc(ips, func(ip string) bool { return !coOwned[ip] }) {
				fail(InvWanted, h, "no entry of cluster %s for %s, which %s wants at %v", cluster, h, o, ips)
				break
			}
		}
		return
	}
	var nss []string
	for _, e := range owned {
		tags, _ := c.opTags(e)
		nss = append(nss, values(tags, registry.PrefixNamespace)...)
	}
	slices.Sort(nss)
	nss = slices.Compact(nss)
	if len(nss) != 1 {
		fail(InvWanted, h, "cluster %s's entries for %s name namespaces %v, not one: %s", cluster, h, nss, describe(owned))
		return
	}
	ns := nss[0]
	var holders []*Object
	for _, o := range mine {
		if o.Namespace == ns {
			holders = append(holders, o)
		}
	}
	if len(holders) == 0 {
		fail(InvUnwanted, h, "cluster %s's entries for %s still name namespace %s, which no longer claims it (claims: %v): %s", cluster, h, ns, mine, describe(owned))
		return
	}
	// What each address is wanted by: an object with an address wants those; a held one the
	// entries that carry its source tag, which must be at addresses it once had.
	want := map[string][]*Object{}
	for _, o := range holders {
		if ips := c.m.ips(o); len(ips) > 0 {
			for _, ip := range ips {
				want[ip] = append(want[ip], o)
			}
			continue
		}
		for _, e := range owned {
			tags, _ := c.opTags(e)
			if slices.Contains(tags, registry.PrefixSource+o.UID) {
				if !o.had[e.GetIpAddress()] {
					fail(InvWanted, h, "held %s keeps an entry at %s, an address it never had: %s", o, e.GetIpAddress(), describe([]*pb.HostEntry{e}))
				}
				want[e.GetIpAddress()] = append(want[e.GetIpAddress()], o)
			}
		}
	}
	got := map[string][]*pb.HostEntry{}
	for _, e := range owned {
		got[e.GetIpAddress()] = append(got[e.GetIpAddress()], e)
	}
	for _, ip := range sortedKeys(want) {
		n := len(got[ip])
		if coOwned[ip] {
			n++
		}
		if n != 1 {
			fail(InvWanted, h, "%d entries of cluster %s for %s at %s, want one for %v: %s", n, cluster, h, ip, want[ip], describe(owned))
		}
	}
	for _, ip := range sortedKeys(got) {
		if want[ip] == nil {
			fail(InvUnwanted, h, "cluster %s keeps %s at %s, which none of %v wants: %s", cluster, h, ip, holders, describe(got[ip]))
		}
	}
	aliases, kindTags, userTags := []string{}, []string{}, []string{}
	shared := false
	for _, o := range holders {
		shared = shared || o.Shared
		aliases = append(aliases, o.Aliases...)
		kindTags = append(kindTags, registry.PrefixKind+string(o.Kind))
		for _, t := range o.Tags {
			if !registry.Reserved(t) {
				userTags = append(userTags, t)
			}
		}
	}
	slices.Sort(aliases)
	aliases = slices.Compact(aliases)
	// An alias another namespace, cluster or person carries is theirs, and refused here.
	aliases = slices.DeleteFunc(aliases, func(a string) bool { return c.carriedElsewhere(v, a, cluster+"/"+ns) })
	for _, ip := range sortedKeys(want) {
		if len(got[ip]) != 1 {
			continue
		}
		e := got[ip][0]
		tags, _ := c.opTags(e)
		var uids []string
		for _, o := range want[ip] {
			uids = append(uids, o.UID)
		}
		slices.Sort(uids)
		uids = slices.Compact(uids)
		srcs := values(tags, registry.PrefixSource)
		slices.Sort(srcs)
		problems := []string{}
		if !slices.Equal(srcs, uids) {
			problems = append(problems, fmt.Sprintf("source tags %v, want %v", srcs, uids))
		}
		if m := values(tags, registry.PrefixPending); len(m) > 0 {
			problems = append(problems, "marked for deletion "+m[0])
		}
		for _, t := range append([]string{registry.TagOwner, registry.ClusterTag(c.m.names[cluster]), registry.IdentityTag(c.set.ids[cluster]),
			registry.PrefixNamespace + ns}, kindTags...) {
			if !slices.Contains(tags, t) {
				problems = append(problems, "lacks "+t)
			}
		}
		if cs := clusterNames(tags); len(cs) != 1 {
			problems = append(problems, fmt.Sprintf("names clusters %v", cs))
		}
		if shared && !slices.Contains(tags, registry.TagShared) {
			problems = append(problems, "lacks "+registry.TagShared+" although its objects share the name")
		}
		gotAliases := append([]string(nil), e.GetAliases()...)
		slices.Sort(gotAliases)
		if !slices.Equal(gotAliases, aliases) {
			problems = append(problems, fmt.Sprintf("aliases %v, want %v", e.GetAliases(), aliases))
		}
		if hand := c.m.hand[e.GetId()]; hand != nil {
			if len(tags) == 0 || tags[0] != registry.TagPreExisting {
				problems = append(problems, "the person's tags are not followed by "+registry.TagPreExisting)
			}
			for _, t := range []string{registry.PrefixOriginalHostname + hand.Entry.GetHostname(), registry.PrefixOriginalIP + hand.Entry.GetIpAddress()} {
				if !slices.Contains(tags, t) {
					problems = append(problems, "the loan lacks "+t)
				}
			}
			if e.GetComment() != hand.Entry.GetComment() {
				problems = append(problems, fmt.Sprintf("comment %q, the person's was %q", e.GetComment(), hand.Entry.GetComment()))
			}
		} else {
			for _, t := range userTags {
				if !slices.Contains(tags, t) {
					problems = append(problems, "lacks the object's tag "+t)
				}
			}
			if !strings.HasPrefix(e.GetComment(), "router-hosts-operator: ") {
				problems = append(problems, fmt.Sprintf("comment %q is not the operator's", e.GetComment()))
			}
		}
		if len(problems) > 0 {
			inv := InvWanted
			if c.m.hand[e.GetId()] != nil {
				inv = InvAdopted
			}
			fail(inv, h, "cluster %s's entry for %s at %s: %s; wanted by %v: %s", cluster, h, ip, strings.Join(problems, "; "), want[ip], describe([]*pb.HostEntry{e}))
		}
	}
}

// finalHand checks the person's entries on a hostname: one a cluster claims is adopted (the
// same entry, not a second beside it), one nobody claims any more was given back exactly.
func (c *checker) finalHand(h string, claims []*Object, v *view, fail func(string, string, string, ...any)) {
	for id, hand := range c.m.hand {
		if hand.Deleted || strings.ToLower(hand.Entry.GetHostname()) != h {
			continue
		}
		var e *pb.HostEntry
		for _, x := range v.byHost[h] {
			if x.GetId() == id {
				e = x
			}
		}
		switch {
		case !hand.Claimed:
			// Never claimed: the continuous check holds it to the person's last write.
		case e == nil:
			fail(InvAdopted, h, "the person's entry %s is gone: %s", id, describe([]*pb.HostEntry{hand.Entry}))
		case len(claims) == 0:
			want := hand.Entry
			if e.GetHostname() != want.GetHostname() || e.GetIpAddress() != want.GetIpAddress() || !slices.Equal(e.GetAliases(), want.GetAliases()) ||
				!slices.Equal(e.GetTags(), want.GetTags()) || e.GetComment() != want.GetComment() {
				fail(InvReleased, h, "not given back as the person had it: is %s, was %s", describe([]*pb.HostEntry{e}), describe([]*pb.HostEntry{want}))
			}
		default:
			// Claimed now with an address: the claiming cluster owns it (finalHost checks
			// how). Held claims alone ask for nothing.
			if c.owner(e) == "" && slices.ContainsFunc(claims, func(o *Object) bool { return len(c.m.ips(o)) > 0 }) {
				fail(InvAdopted, h, "claimed by %v but not adopted: %s", claims, describe(v.byHost[h]))
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// summary says what the final check looked at, so a pass is seen to rest on something: the
// entries by owner (each installation with the name it runs under), the hostnames each
// installation wants, adoptions and releases, held objects, claims refused because another
// cluster or a namesake holds the name.
func (c *checker) summary(v *view) string {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	owned := map[string]int{}
	adopted, released, untouched, foreign := 0, 0, 0, 0
	for _, e := range v.entries {
		o := c.owner(e)
		owned[o]++
		if c.m.foreign[e.GetId()] != nil {
			foreign++
		}
		if h := c.m.hand[e.GetId()]; h != nil {
			switch {
			case o != "":
				adopted++
			case h.Claimed:
				released++
			default:
				untouched++
			}
		}
	}
	wanted := map[string]map[string]bool{}
	held, refused, namesakes := 0, 0, 0
	for _, o := range c.m.objects {
		if len(c.m.ips(o)) == 0 {
			held++
		}
		for _, h := range o.Hosts {
			if wanted[o.Cluster] == nil {
				wanted[o.Cluster] = map[string]bool{}
			}
			wanted[o.Cluster][h] = true
			if strings.HasPrefix(h, foreignCluster+"-") {
				refused++
			}
			if by := c.m.heldBy[h]; by != "" && by != o.Cluster {
				namesakes++
			}
		}
	}
	var byInst, claimed []string
	for _, g := range groups() {
		byInst = append(byInst, fmt.Sprintf("%s (as %s) %d", g, c.m.names[g], owned[g]))
		n := 0
		for inst, hosts := range wanted {
			if ownerGroup(inst) == g {
				n += len(hosts)
			}
		}
		claimed = append(claimed, fmt.Sprintf("%s %d", g, n))
	}
	return fmt.Sprintf("%d entries (%s, c %d, the person's %d); hostnames claimed: %s; %d objects, %d held; %d adopted, %d given back, %d hand-made untouched; "+
		"%d claims on cluster c's names, %d on names a namesake holds",
		len(v.entries), strings.Join(byInst, ", "), foreign, owned[""]-foreign, strings.Join(claimed, ", "), len(c.m.objects), held,
		adopted, released, untouched, refused, namesakes)
}
