package registry

import (
	"fmt"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// Twins: two writers with one identity. A cluster restored from an etcd backup and its
// original, a cloned VM (the same kube-system UID), two releases sharing a Lease name: each
// takes the other's entries for its own, re-points what it wants elsewhere and marks what it
// does not want, and the other undoes it, every interval. Nothing on the router tells them
// apart; what gives a twin away is what it does: it undoes this process's writes. So every
// process keeps, for each entry of its identity, what it last saw and wrote (the caller's
// writers), and counts a strike against an entry each time another writer rewrites it after
// this process did, lifts a mark this process wrote, or marks it while it is wanted:
//   - an entry with two strikes is contested: no update, mark, deletion or release goes to it
//     (lifting a mark from it still does: that keeps a name), so neither twin re-points or
//     deletes it. It holds nothing else: whoever can write to the router holds at most the
//     entries it rewrites, and only while it keeps rewriting them (strikeMemory after the
//     last rewrite, the contest is forgotten);
//   - a mark on an entry this process neither wrote nor saw wanted waits markReads whole reads
//     beyond its grace period, so that a twin that wants it lifts it first (a strike) and a
//     short grace period never lets one twin delete the other's name;
//   - a person's one-off hand edit is one strike: corrected, as ever. A leader's handover and
//     a restart start a new process, which has seen nothing yet.
// The fix is an identity of each one's own: --cluster-id pinned on one of them.

// writers is what this process saw other writers do on the router: the strikes against each
// entry (by ID), and the identities seen writing entries of this cluster's name.
type writers interface {
	Strikes(id string) int
	Alive(identity string) bool
	Waits(id string) bool
	Quiet(identity string, fallback time.Duration) bool
	Proven(identity string) bool
}

type noWitness struct{}

func (noWitness) Strikes(string) int               { return 0 }
func (noWitness) Alive(string) bool                { return false }
func (noWitness) Waits(string) bool                { return false }
func (noWitness) Quiet(string, time.Duration) bool { return false }
func (noWitness) Proven(string) bool               { return false }

// contestedAt is the number of strikes that make an entry contested.
const contestedAt = 2

// Contested reports whether an entry with this many strikes is contested.
func Contested(strikes int) bool { return strikes >= contestedAt }

// Strike is how many strikes another writer's rewrite of an entry of this installation's
// earns: wasMarked and ours say whether the entry as this process last saw it carried a mark
// and was this process's own write, same whether it is as it was but for the tags others put
// on an entry without taking it (a release probe, another cluster's co-owner tag); now is the
// entry as it is. Such a rewrite earns none, whatever else it carries; one that lifts a mark or
// marks the entry, or rewrites what this process wrote, one.
func Strike(wasMarked, ours, same bool, now *Parsed) int {
	if same {
		return 0
	}
	if ours || now.Marked() != wasMarked {
		return 1
	}
	return 0
}

// Twin is another writer of this installation's identity, as the sync found it.
type Twin struct {
	// Disputed is the number of contested entries this sync would have written.
	Disputed int
	// ClusterID is the identity both write.
	ClusterID string
}

// Message is what the user is told, with the fix. It names no count (the twin_entries metric
// does), so that it is said once while the fight lasts, not at each of its turns.
func (t *Twin) Message() string {
	return fmt.Sprintf("another writer undoes this installation's writes to entries of its identity cluster-id %s, "+
		"which it holds without writing them: a copy of this cluster (restored from an etcd backup, a cloned VM), a second "+
		"installation on the same Lease, or a script runs with the same identity; the entries it contests are left as they are meanwhile. "+
		"Pin --cluster-id (chart: clusterId) to an identity of its own on one of them; renaming the cluster does not help",
		t.ClusterID)
}

// twins drops the writes to contested entries, but a mark lifted: a contested entry holds
// only itself.
func (r *Registry) twins(in *changesIn, changes []plan.Change) changed {
	st, disputed := in.st, 0
	contested := func(c *plan.Change) bool {
		return c.Old != nil && c.Action != plan.Unmark && Contested(st.witness.Strikes(c.Old.ID))
	}
	for i := range changes {
		if contested(&changes[i]) {
			disputed++
		}
	}
	if disputed == 0 {
		return changed{changes: changes}
	}
	out := changed{changes: make([]plan.Change, 0, len(changes)), twin: &Twin{Disputed: disputed, ClusterID: r.cfg.ClusterID}}
	for _, c := range changes {
		switch {
		case contested(&c):
			out.held = append(out.held, Held{Change: c, Reason: ReasonTwinInstallation, Contested: true})
		case mutation == "cluster-freeze" && (c.Action == plan.Mark || retiring(&c) || beatOnly(&c)):
			out.held = append(out.held, Held{Change: c, Reason: ReasonTwinInstallation})
		default:
			out.changes = append(out.changes, c)
		}
	}
	return out
}
