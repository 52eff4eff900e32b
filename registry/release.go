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
// router at once, an adopted one given back as the user had it, one the operator created
// deleted; nothing else is touched. Which entries are the cluster's is the rule a sync uses
// with no object left to claim any (Release).

// ActionProbe is the write of the release probe (PrefixReleaseProbe) and ActionAnswer a running
// operator's answer to it, the probe taken off again; both are an UpdateHost.
const (
	ActionProbe  plan.Action = "probe"
	ActionAnswer plan.Action = "answer"
)

// Letting is what releasing a cluster does to the router.
type Letting struct {
	// ClusterID is the identity released: the configured one, else the one the router holds
	// for the name; "" when its entries carry none.
	ClusterID string
	// Changes release each adopted entry, delete each created one (or hand it over when
	// another cluster co-owns its line) and withdraw from others' lines, sorted like a plan's.
	Changes []plan.Change
	// Left are an earlier version's entries of the name that stay: another installation writes
	// the name, and they may be its.
	Left []endpoint.Record
	// Renamed are the identity's unmarked entries under another name, which stay: a rename's,
	// or a second installation's that shares the identity. Releasing that name lets them go.
	Renamed []endpoint.Record
	// Namesakes are the other installations that write the cluster's name, sorted by identity.
	Namesakes []Namesake
	// Interval is the --interval the cluster's newest heartbeat carries (MinProbeWait), zero
	// when none does.
	Interval time.Duration

	// probe is the entry the probe goes on, nil when there are no changes.
	probe *endpoint.Record
}

// Unknowable says why the probe cannot tell whether an operator of the cluster runs, "" when it
// can: versions that wrote no cluster-id tag answered a probe only by rewriting or marking an
// entry, which some settings never do, so a probe left alone on their entries proves nothing.
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

// AmbiguousError refuses to release a cluster by name alone when several installations write
// that name: only the identity says which to let go.
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

// Release decides what letting the cluster go does to records, one whole read. Without a
// configured identity, the router must hold at most one for the name (else *AmbiguousError).
// An earlier version's entry of the name goes unless another identity writes the name (Left),
// the identity's entry under another name only when marked (else Renamed): the others may be
// a second installation's.
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

// probeRank orders the entries the probe may go on, best first: one not marked (an earlier
// version answers only where it rewrites), created rather than adopted, of the identity and
// name rather than an earlier version's.
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
// stamped with now, among the operator's tags on one of the entries l lets go of (so that
// releasing the entry drops it too); nil when there are none.
func (l *Letting) Probe(now time.Time) *plan.Change {
	if l.probe == nil {
		return nil
	}
	rec := l.probe
	v := viewOf(rec)
	n := *rec
	n.Tags = withOwnTag(rec.Tags, &v, PrefixReleaseProbe, PrefixReleaseProbe+now.UTC().Format(time.RFC3339))
	return &plan.Change{Action: ActionProbe, Old: rec, New: &n}
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
