package soak

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// One hostname shared between clusters a and b: each holds a shared HostMapping for it (in its
// first namespace) at an address of its own. At seeded moments one of them may take the
// other's address (the router keeps one line, which the taker co-owns), a's object goes (a
// move to b: a's own line goes after its grace period, a line b co-owns is handed over to b),
// and a's object may come back. b's object stays all along, so the name is wanted throughout.
// The churn never touches either object, and no other object claims the name.

// InvSharedAvailable: while a cluster's object wants the shared name, the name keeps an
// address some cluster wants: a line that serves a cluster that still wants its address (it
// carries that cluster's identity or its co-owner tag) never goes without another wanted
// address in its place, and the name never resolves to nothing.
const InvSharedAvailable = "shared-name-available"

// shareHost is the shared name; shareIPs the address each cluster's object starts at.
const shareHost = "share.soak.lan"

var shareIPs = map[string]string{"a": "10.77.1.250", "b": "10.77.2.250"}

// shareSeedSalt sets the sharing's own random source apart from the churn's, so that the
// churn a seed plays is the same with the sharing as without it.
const shareSeedSalt = 0x5a4ed

// shareNamespace is the namespace of cluster inst's shared object, of its own: the move
// deletes that object, which in a namespace the churn empties too would add to an everyday
// deletion and may trip the namespace's mass-deletion brake, which the driver never confirms.
func shareNamespace(inst string) string { return inst + "-share" }

// shareObject is cluster inst's shared HostMapping at ip.
func shareObject(inst, ip string) *Object {
	return &Object{Cluster: inst, Namespace: shareNamespace(inst), Name: "share-" + inst, Kind: KindHostMapping, addressing: bySpec,
		Hosts: []string{shareHost}, IPs: []string{ip}, Shared: true, pinned: true}
}

// shareSeed creates both clusters' objects for the shared name before the operators start.
func (d *driver) shareSeed(ctx context.Context) error {
	d.share = map[string]*Object{}
	for _, inst := range []string{"a", "b"} {
		o := shareObject(inst, shareIPs[inst])
		if err := d.put(ctx, o, "created (shared) before the operators started"); err != nil {
			return err
		}
		d.share[inst] = o
	}
	return nil
}

// scheduleSharing picks, from the seed, what happens to the shared name during the churn:
// perhaps one cluster takes the other's address (in the first quarter), a's object goes (in
// the middle), and perhaps it comes back a few grace periods later, at its own address or at
// b's.
func (d *driver) scheduleSharing(seed int64) {
	r := newRand(seed ^ shareSeedSalt)
	span := d.end.Sub(d.start)
	at := func(lo, hi float64) time.Time {
		return d.start.Add(time.Duration((lo + r.Float64()*(hi-lo)) * float64(span)))
	}
	same, sameAt := r.Intn(3), at(0.1, 0.25)
	moveAt := at(0.35, 0.55)
	back, backAfter, backSame := r.Intn(2) == 0, time.Duration(4000+r.Intn(8000))*time.Millisecond, r.Intn(2) == 0
	if same > 0 {
		taker, giver := "b", "a"
		if same == 2 {
			taker, giver = "a", "b"
		}
		d.pending = append(d.pending, pendingAction{at: sameAt, name: "share-same", do: func(ctx context.Context) error {
			return d.shareTake(ctx, taker, giver)
		}})
	}
	d.pending = append(d.pending, pendingAction{at: moveAt, name: "share-move", do: func(ctx context.Context) error {
		o := d.share["a"]
		delete(d.share, "a")
		if err := d.deleteObject(ctx, o, "moved the shared name to b: deleted"); err != nil {
			return err
		}
		d.shareNote("a's object deleted")
		if back {
			d.later(backAfter, "share-back", func(ctx context.Context) error {
				ip := shareIPs["a"]
				if backSame {
					d.m.mu.Lock()
					ip = d.share["b"].IPs[0]
					d.m.mu.Unlock()
				}
				o := shareObject("a", ip)
				d.share["a"] = o
				if err := d.put(ctx, o, "came back to the shared name"); err != nil {
					return err
				}
				d.shareNote("a's object back at %s", ip)
				return nil
			})
		}
		return nil
	}})
}

// shareTake re-points taker's object to giver's address; while the churn leaves taker alone
// (its rename), it waits, and once either object has gone meanwhile (the move), it is dropped.
func (d *driver) shareTake(ctx context.Context, taker, giver string) error {
	if d.frozen[taker] {
		d.later(time.Second, "share-same", func(ctx context.Context) error { return d.shareTake(ctx, taker, giver) })
		return nil
	}
	if d.share[taker] == nil || d.share[giver] == nil {
		d.shareNote("%s did not take %s's address: an object went first", taker, giver)
		return nil
	}
	d.m.mu.Lock()
	ip := d.share[giver].IPs[0]
	d.m.mu.Unlock()
	if err := d.setIPs(ctx, d.share[taker], []string{ip}); err != nil {
		return err
	}
	d.shareNote("%s took %s's address %s", taker, giver, ip)
	return nil
}

// shareNote records what happened to the shared name, timed from the start of the churn.
func (d *driver) shareNote(format string, args ...any) {
	d.shareNotes = append(d.shareNotes, fmt.Sprintf(format, args...)+fmt.Sprintf(" at %v", time.Since(d.start).Round(100*time.Millisecond)))
}

// shareReport says what the shared name went through and its lines at the end.
func (d *driver) shareReport(entries []*pb.HostEntry) string {
	notes := "no move"
	if len(d.shareNotes) > 0 {
		notes = strings.Join(d.shareNotes, ", ")
	}
	return fmt.Sprintf("%s: %s; at the end %s", shareHost, notes, describe(newView(entries).byHost[shareHost]))
}

// noteShareWants brings the stretches each cluster wanted each address of the shared name up
// to the objects as they are now. The caller holds m.mu.
func (m *Model) noteShareWants(now time.Time) {
	wanting := map[string]bool{}
	for _, o := range m.objects {
		if slices.Contains(o.Hosts, shareHost) {
			for _, ip := range m.ips(o) {
				wanting[o.Cluster+"|"+ip] = true
			}
		}
	}
	for k, iv := range m.shareWants {
		if !wanting[k] && len(iv) > 0 && iv[len(iv)-1].end.IsZero() {
			iv[len(iv)-1].end = now
		}
	}
	for k := range wanting {
		iv := m.shareWants[k]
		if len(iv) == 0 || !iv[len(iv)-1].end.IsZero() {
			m.shareWants[k] = append(iv, interval{start: now})
		}
	}
}

// shareWanted are the addresses of the shared name some cluster wants at now, or stopped
// wanting so recently that the operators cannot have seen it, each with those clusters. The
// caller holds m.mu.
func (m *Model) shareWanted(now time.Time, slack time.Duration) map[string][]string {
	out := map[string][]string{}
	for _, k := range sortedKeys(m.shareWants) {
		inst, ip, _ := strings.Cut(k, "|")
		for _, iv := range m.shareWants[k] {
			if !now.Before(iv.start) && (iv.end.IsZero() || now.Before(m.seenBy(iv.end).Add(slack))) {
				out[ip] = append(out[ip], inst)
				break
			}
		}
	}
	return out
}

// stillWants reports whether installation inst wants ip for the shared name now. The caller
// holds m.mu.
func (m *Model) stillWants(inst, ip string) bool {
	iv := m.shareWants[inst+"|"+ip]
	return len(iv) > 0 && iv[len(iv)-1].end.IsZero()
}

// coOwnerIDs are the identities of the co-owner tags among tags, by the cluster name each
// names.
func coOwnerIDs(tags []string) (ids, names []string) {
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, registry.PrefixCoOwner); ok {
			name, id, _ := strings.Cut(v, registry.IdentitySeparator)
			ids, names = append(ids, id), append(names, name)
		}
	}
	return ids, names
}

// serves reports whether a line's tags carry installation inst's identity, as its writer or
// as a co-owner.
func (c *checker) serves(tags []string, inst string) bool {
	id := c.set.ids[inst]
	co, _ := coOwnerIDs(tags)
	return slices.Contains(co, id) || slices.Equal(clusterIDs(tags), []string{id})
}

// shareState is the shared name's availability.
type shareState struct {
	// anchored: at the last poll, a line served a cluster that still wants its address;
	// resolving: the name had lines.
	anchored, resolving bool
	// gap is when the name stopped having a wanted address; zero while it has one.
	gap    time.Time
	before []hostsLine
}

// pollShared is InvSharedAvailable at one poll of the hosts file. A gap opens when the name
// has no line at an address wanted now (or too recently unwanted for the operators to know)
// while one is, after a poll at which a line served a cluster that still wants its address,
// or at which the name resolved and now it does not resolve at all. Router restarts are
// excepted, as for InvAvailability; the gap closes once a wanted address is back or nobody
// wants the name.
func (c *checker) pollShared(lines []hostsLine, now time.Time, restarting bool) {
	c.m.mu.Lock()
	wanted := c.m.shareWanted(now, c.set.slack)
	anchored := false
	for _, l := range lines {
		for _, inst := range []string{"a", "b"} {
			if c.m.stillWants(inst, l.IP) && c.serves(l.Tags, inst) {
				anchored = true
			}
		}
	}
	c.m.mu.Unlock()
	st := &c.share
	served := slices.ContainsFunc(lines, func(l hostsLine) bool { return wanted[l.IP] != nil })
	if !st.gap.IsZero() && (served || len(wanted) == 0) {
		c.endShareGap(now, wanted)
	}
	if st.gap.IsZero() && !restarting && len(wanted) > 0 && !served && (st.anchored || (st.resolving && len(lines) == 0)) {
		st.gap = now
	}
	if st.gap.IsZero() {
		st.before = lines
	}
	st.anchored, st.resolving = anchored, len(lines) > 0
}

// endShareGap reports a gap in the shared name's addresses with its length.
func (c *checker) endShareGap(now time.Time, wanted map[string][]string) {
	st := &c.share
	var was []string
	for _, l := range st.before {
		was = append(was, fmt.Sprintf("%s %s %v", l.IP, l.Hostname, l.Tags))
	}
	c.fail(st.gap, InvSharedAvailable, []string{shareHost}, "had no address a cluster wants for %v (wanted at the end: %v); its lines before: %s",
		now.Sub(st.gap).Round(time.Millisecond), wanted, strings.Join(was, "; "))
	st.gap = time.Time{}
}

// closeShareGap ends a gap still open at the end of the run.
func (c *checker) closeShareGap(now time.Time) {
	if !c.share.gap.IsZero() {
		c.m.mu.Lock()
		wanted := c.m.shareWanted(now, c.set.slack)
		c.m.mu.Unlock()
		c.endShareGap(now, wanted)
	}
}

// coOwnedBy are the entries of all that another owner wrote and that carry cluster's
// co-owner tag: the lines it shares rather than writes.
func (c *checker) coOwnedBy(cluster string, all []*pb.HostEntry) []*pb.HostEntry {
	var out []*pb.HostEntry
	for _, e := range all {
		tags, _ := c.opTags(e)
		if co, _ := coOwnerIDs(tags); c.owner(e) != cluster && slices.Contains(co, c.set.ids[cluster]) {
			out = append(out, e)
		}
	}
	return out
}

// finalCoOwners holds every co-owner tag on the router to its cluster at rest: it names the
// cluster as it runs now, is on another cluster's line, once per cluster, and the cluster
// wants the line's address for its hostname. The caller holds m.mu.
func (c *checker) finalCoOwners(v *view, fail func(string, string, string, ...any)) {
	for _, e := range v.entries {
		tags, _ := c.opTags(e)
		ids, names := coOwnerIDs(tags)
		h := strings.ToLower(e.GetHostname())
		for i, id := range ids {
			inst := ""
			for _, k := range sortedKeys(c.set.ids) {
				if c.set.ids[k] == id {
					inst = ownerGroup(k)
				}
			}
			switch {
			case inst == "":
				fail(InvNobodyMade, h, "a co-owner tag of no running installation: %s", describe([]*pb.HostEntry{e}))
			case c.owner(e) == inst:
				fail(InvWanted, h, "installation %s's co-owner tag on an entry of its own: %s", inst, describe([]*pb.HostEntry{e}))
			case slices.Index(ids, id) != i:
				fail(InvWanted, h, "installation %s's co-owner tag twice on one line: %s", inst, describe([]*pb.HostEntry{e}))
			case names[i] != c.m.names[inst]:
				fail(InvWanted, h, "installation %s's co-owner tag names cluster %s; it runs as %s: %s", inst, names[i], c.m.names[inst], describe([]*pb.HostEntry{e}))
			case !slices.ContainsFunc(c.m.claimers(h), func(o *Object) bool {
				return ownerGroup(o.Cluster) == inst && slices.Contains(c.m.ips(o), e.GetIpAddress())
			}):
				fail(InvUnwanted, h, "installation %s co-owns %s at %s, which none of its objects wants: %s", inst, h, e.GetIpAddress(), describe([]*pb.HostEntry{e}))
			}
		}
	}
}

// sharingWrite judges an UpdateHost of installation me that leaves an entry another
// installation's: the write of its co-owner tag on a line it wants too, or of the tag's
// removal (it adds or removes tags of its own identity and changes nothing else), or the
// hand-over of a line of its own to the first of its co-owners (the line keeps its address
// and takes that co-owner's identity and TagShared). It returns "" for such a write, and
// otherwise what is wrong.
func (c *checker) sharingWrite(me string, w *write, before *pb.HostEntry, wrote []string) string {
	mine := ownerGroup(me)
	if before == nil {
		// The version it was sent for was never seen: only what it leaves can be judged.
		if !slices.Contains(wrote, registry.TagShared) {
			return "left an entry " + c.whose(wrote) + " that is not shared"
		}
		return ""
	}
	if w.after != nil && (w.after.GetIpAddress() != before.GetIpAddress() || !strings.EqualFold(w.after.GetHostname(), before.GetHostname())) {
		return fmt.Sprintf("moved a shared line from %s %s to %s %s", before.GetIpAddress(), before.GetHostname(), w.after.GetIpAddress(), w.after.GetHostname())
	}
	if c.ownerOfTags(before.GetTags()) == mine {
		ids, names := coOwnerIDs(before.GetTags())
		to := c.ownerOfTags(wrote)
		if len(ids) == 0 || to == "" || c.set.ids[to] != ids[0] || !slices.Equal(clusterNames(wrote), names[:1]) || !slices.Contains(wrote, registry.TagShared) {
			return fmt.Sprintf("made its own entry %s, not a hand-over to its first co-owner (co-owners %v)", c.whose(wrote), ids)
		}
		return ""
	}
	if w.after != nil && (!slices.Equal(w.after.GetAliases(), before.GetAliases()) || w.after.GetComment() != before.GetComment()) {
		return "changed the aliases or the comment of an entry that is " + c.whose(before.GetTags())
	}
	names := c.namesAt(me, w.at)
	id := c.set.ids[me]
	diff := func(a, b []string) []string {
		return slices.DeleteFunc(slices.Clone(a), func(t string) bool { return slices.Contains(b, t) })
	}
	for _, t := range append(diff(wrote, before.GetTags()), diff(before.GetTags(), wrote)...) {
		v, ok := strings.CutPrefix(t, registry.PrefixCoOwner)
		name, tid, _ := strings.Cut(v, registry.IdentitySeparator)
		if !ok || tid != id {
			return fmt.Sprintf("changed the tag %s of an entry that is %s", t, c.whose(before.GetTags()))
		}
		if !slices.Contains(names, name) && slices.Contains(wrote, t) {
			return fmt.Sprintf("wrote its co-owner tag %s, running as %v", t, names)
		}
	}
	if !slices.Contains(before.GetTags(), registry.TagShared) {
		return "co-owned an entry that is " + c.whose(before.GetTags()) + ", which is not shared"
	}
	return ""
}
