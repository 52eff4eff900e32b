package registry

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Letting a cluster go on purpose (the release command): every entry of the cluster leaves the
// router at once, as the grace period would have it leave one by one. An adopted entry is given
// back as the user had it (released), one the operator created is deleted; nothing else on the
// router is touched. Which entries are the cluster's is the rule a sync uses (classOf and
// resolveOpen) with no object left to claim any: its identity and name, its name alone when
// its entries carry no identity, an earlier version's entries of its name unless another
// installation writes that name, and its identity's under another name only on their way out
// (marked), since the others may be a second installation's that shares the identity.

// ActionProbe is the write of the release probe (PrefixReleaseProbe), as dry-run lines and logs
// name it, and ActionAnswer a running operator's answer to it: the probe taken off again. The
// provider sends both as an UpdateHost.
const (
	ActionProbe  plan.Action = "probe"
	ActionAnswer plan.Action = "answer"
)

// Letting is what releasing a cluster does to the router.
type Letting struct {
	// ClusterID is the identity released: the configured one, else the single identity the
	// router holds for the cluster's name; "" when its entries carry none.
	ClusterID string
	// Changes are a plan.Release (one UpdateHost) per adopted entry, a plan.Delete per entry
	// the operator created, or an ActionHandOver when another cluster co-owns its line, and an
	// ActionWithdraw per other cluster's line the cluster co-owns, sorted like a plan's.
	Changes []plan.Change
	// Left are the entries an earlier version wrote under the cluster's name (no identity)
	// that stay on the router: another installation writes that name, and they may be its.
	Left []endpoint.Record
	// Renamed are the entries of the identity under another cluster name, not marked for
	// deletion, that stay: left by a rename with no object to claim them, or a second
	// installation's that shares the identity. Releasing that name lets them go.
	Renamed []endpoint.Record
	// Namesakes are the other installations that write the cluster's name, sorted by identity.
	Namesakes []Namesake
	// Interval is the --interval the cluster's newest heartbeat carries, zero when none
	// does: a running operator of the cluster answers the probe within it (MinProbeWait).
	Interval time.Duration

	// probe is the entry the probe goes on, nil when there are no changes.
	probe *endpoint.Record
}

// Unknowable says why the probe cannot tell whether an operator of the cluster runs, "" when it
// can. Every operator that writes the identity in a tag of its own answers a probe on any
// entry of its cluster, whatever its policy, whatever it holds, dry run or not; versions before
// answered only by rewriting an entry they wanted or marking one they did not, which one run
// with --policy=upsert-only, create-only or --dry-run never does. So when no entry of the
// cluster shows that a version of the first kind wrote it, a probe left alone proves nothing.
func (l *Letting) Unknowable() string {
	if len(l.Changes) == 0 {
		return ""
	}
	for _, c := range l.Changes {
		v := viewOf(c.Old)
		if _, ok := v.value(PrefixClusterID); ok && c.Action != ActionWithdraw {
			return ""
		}
	}
	return "every entry of the cluster was written by a version of the operator that answers the release probe only on an entry it " +
		"rewrites or marks, which it never does with --policy=upsert-only or create-only, with --dry-run, or with every entry held; " +
		"stop that operator by hand (helm uninstall / scale to 0), then run release again with --force"
}

// Counts returns how many entries are given back and how many deleted.
func (l *Letting) Counts() (released, deleted int) {
	for _, c := range l.Changes {
		switch c.Action {
		case plan.Release:
			released++
		case plan.Delete:
			deleted++
		}
	}
	return released, deleted
}

// SharedCounts returns how many lines go to a cluster that co-owns them and how many of
// other clusters' lines lose the cluster's co-owner tag.
func (l *Letting) SharedCounts() (handed, withdrawn int) {
	for _, c := range l.Changes {
		switch c.Action {
		case ActionHandOver:
			handed++
		case ActionWithdraw:
			withdrawn++
		}
	}
	return handed, withdrawn
}

// AmbiguousError refuses to release a cluster by name alone when several installations write
// that name: their entries are not one cluster's, and only the identity says which to let go.
type AmbiguousError struct {
	ClusterName string
	// Identities are the installations that write the name, with their entry counts, sorted.
	Identities []Namesake
	// Legacy is the number of entries of the name an earlier version wrote (no identity).
	Legacy int
}

func (e *AmbiguousError) Error() string {
	ids := make([]string, len(e.Identities))
	for i, n := range e.Identities {
		ids[i] = fmt.Sprintf("cluster-id %s (%d entries)", n.ID, n.Entries)
	}
	msg := fmt.Sprintf("cluster %s: the router holds entries of this name from %d installations: %s", e.ClusterName, len(e.Identities), strings.Join(ids, ", "))
	if e.Legacy > 0 {
		msg += fmt.Sprintf(", and %d entries of an earlier version without a cluster-id", e.Legacy)
	}
	return msg + "; pass --cluster-id to say which installation to release"
}

// Release decides what letting the cluster go does to records, one read of the whole server.
// Without a configured identity the name decides, and the router must hold at most one
// identity for it (else an *AmbiguousError): that one is then the cluster's. An earlier
// version's entry of the name goes along unless another identity writes the name, and the
// identity's entry under another name only when it is marked for deletion; the others are
// listed as Left and Renamed. An adopted entry without a loan record keeps its address and
// aliases, as the grace period's release does.
func (r *Registry) Release(records []endpoint.Record) (*Letting, error) {
	sel := *r
	ids, legacyOfName := r.identitiesOfName(records)
	if sel.cfg.ClusterID == "" {
		switch len(ids) {
		case 0:
		case 1:
			sel.cfg.ClusterID = ids[0].ID
		default:
			return nil, &AmbiguousError{ClusterName: r.cfg.ClusterName, Identities: ids, Legacy: legacyOfName}
		}
	}
	l := &Letting{ClusterID: sel.cfg.ClusterID}
	for _, n := range ids {
		if n.ID != sel.cfg.ClusterID {
			l.Namesakes = append(l.Namesakes, n)
		}
	}
	best, newest := -1, ""
	for i := range records {
		rec := &records[i]
		v := viewOf(rec)
		class := sel.classOf(&v)
		_, marked := v.value(PrefixPending)
		if m, ok := v.value(PrefixAlive); ok && (class == endpoint.OwnerThis || class == endpoint.OwnerRenamed) && m > newest {
			newest, l.Interval = m, duration(beatSettingsOf(&v).interval)
		}
		switch {
		case class == endpoint.OwnerThis, class == endpoint.OwnerRenamed && marked:
		case class == endpoint.OwnerEarlierVersion && sel.sameName(&v) && len(l.Namesakes) == 0:
		case class == endpoint.OwnerEarlierVersion && sel.sameName(&v):
			l.Left = append(l.Left, *rec)
			continue
		case class == endpoint.OwnerRenamed:
			l.Renamed = append(l.Renamed, *rec)
			continue
		default:
			if sel.hasOwnCoOwner(rec.Tags) {
				// Another cluster's line the cluster co-owns: its tag comes off, the line stays.
				n := *rec
				n.Tags = slices.DeleteFunc(slices.Clone(rec.Tags), sel.ownCoOwner)
				l.Changes = append(l.Changes, plan.Change{Action: ActionWithdraw, Old: rec, New: &n})
			}
			continue
		}
		c := plan.Change{Action: plan.Delete, Old: rec}
		if v.has(TagPreExisting) {
			c = plan.Change{Action: plan.Release, Old: rec, New: released(rec, &v)}
		} else if co := sel.coOwners(&v); len(co) > 0 {
			// A line another cluster wants too goes to it, not away.
			c = plan.Change{Action: ActionHandOver, Old: rec, New: sel.handedOver(rec, co)}
		}
		l.Changes = append(l.Changes, c)
		if rank := probeRank(&v, class); best < 0 || rank < best || (rank == best && rec.ID < l.probe.ID) {
			best, l.probe = rank, rec
		}
	}
	plan.Sort(l.Changes)
	return l, nil
}

// identitiesOfName counts, per identity, the entries that carry the cluster's name and no
// other, and the entries of the name without an identity.
func (r *Registry) identitiesOfName(records []endpoint.Record) (ids []Namesake, legacy int) {
	for i := range records {
		v := viewOf(&records[i])
		if !v.has(TagOwner) || !r.sameName(&v) {
			continue
		}
		id, ok := v.clusterID()
		if !ok {
			legacy++
			continue
		}
		if k := slices.IndexFunc(ids, func(n Namesake) bool { return n.ID == id }); k >= 0 {
			ids[k].Entries++
		} else {
			ids = append(ids, Namesake{ID: id, Entries: 1})
		}
	}
	slices.SortFunc(ids, func(a, b Namesake) int { return strings.Compare(a.ID, b.ID) })
	return ids, legacy
}

// sameName reports whether the operator's cluster: tags on v name this cluster and no other.
func (r *Registry) sameName(v *view) bool {
	names := v.clusterNames()
	return len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return n != r.cfg.ClusterName })
}

// probeRank orders the entries the probe may go on, best first. A running operator takes the
// probe off at its next sync only where that sync rewrites the entry's tags: every entry it
// wants, but not one marked for deletion, which it leaves alone until the mark falls due. An
// entry it created beats an adopted one (the probe is a plain extra tag there), and one of
// the identity and name beats an earlier version's (or a marked one of another name).
func probeRank(v *view, c endpoint.Owner) int {
	rank := 0
	if _, marked := v.value(PrefixPending); marked {
		rank += 4
	}
	if v.has(TagPreExisting) {
		rank += 2
	}
	if c != endpoint.OwnerThis {
		rank++
	}
	return rank
}

// Probe is the write that asks whether the cluster's operator still runs: the probe tag,
// stamped with now, on one of the entries l lets go of; nil when there are none. The tag goes
// where the operator's tags are, so that the operator takes it for its own and rewrites it
// away, and releasing the entry drops it with them.
func (l *Letting) Probe(now time.Time) *plan.Change {
	if l.probe == nil {
		return nil
	}
	rec := l.probe
	v := viewOf(rec)
	n := *rec
	n.Tags = probedTags(rec.Tags, &v, PrefixReleaseProbe+now.UTC().Format(time.RFC3339))
	return &plan.Change{Action: ActionProbe, Old: rec, New: &n}
}

// probedTags is tags with probe as the operator's only release-probe tag, placed as a mark is.
func probedTags(tags []string, v *view, probe string) []string {
	return withOwnTag(tags, v, PrefixReleaseProbe, probe)
}

// Probed returns the probe tag on rec the operator's way (as Letting.Probe wrote it), "" when
// there is none.
func Probed(rec *endpoint.Record) string {
	v := viewOf(rec)
	p, _ := v.value(PrefixReleaseProbe)
	return p
}

// ClusterNames returns the names the operator's cluster: tags on rec carry, for telling whose
// an entry left alone is.
func ClusterNames(rec *endpoint.Record) []string {
	v := viewOf(rec)
	return v.clusterNames()
}
