// Package plan computes the writes that bring the router-hosts entries the operator owns in line
// with the endpoints the cluster wants. It is a pure function: no I/O, no clock, no ownership
// rules beyond what the registry hands it, so every decision can be tested as a table.
package plan

import (
	"slices"
	"sort"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Current is an entry the plan may use for a hostname, as the registry hands it over.
type Current struct {
	endpoint.Record
	// Owner is whose the entry is, which decides what may happen to it: this installation's
	// own entries are the ones deleted when there are too many; adopted ones were the user's
	// and are kept to the last while their hostname is wanted; hand-made ones may only be
	// adopted, never deleted; co-owned ones are another cluster's lines of a shared hostname
	// that this cluster wants too (or wanted): they serve their address, are never re-pointed
	// or deleted, and only gain or lose this cluster's co-owner tag.
	Owner endpoint.Owner
	// Keep lists the tags that stay on an adopted (or to-be-adopted) entry, in order, ahead of
	// the ownership tags: the user's own tags verbatim, then the registry's opening marker. On a
	// created entry, the tags it carries beside the ownership tags (other clusters' co-owner
	// tags, the heartbeat); on a co-owned one, every tag but this cluster's co-owner tag.
	Keep []string
	// Trail lists the tags that follow the ownership tags on such an entry: the registry's loan
	// record, which closes its block. On a co-owned entry, this cluster's co-owner tag.
	Trail []string
	// Pinned: another cluster wants the entry's line too, so it is never re-pointed to another
	// address (the registry hands it over instead of deleting it).
	Pinned bool
	// Yields: a co-owned line of the same address is older; this created entry doubles it, and
	// never serves its address (a duplicate, deleted at once).
	Yields bool
}

// Plan is the input of one calculation.
type Plan struct {
	// Current are the entries the operator owns and the adoption candidates (any order).
	Current []Current
	// Desired holds at most one endpoint per hostname (the registry merges claims).
	Desired []*endpoint.Endpoint
}

// Calculate returns the changes, sorted by hostname, then action, then IP, so that dry-run
// output and tests are stable. Entries are matched per hostname, without regard to case: an
// entry whose IP is a target is kept for it, a changed IP is updated in place on a surplus
// entry (keeping its ID), and only what is left over becomes a create or a delete. Adoption
// candidates become Adopt changes. It knows no policy: the registry holds back what --policy
// forbids of what it returns, as external-dns does after its Calculate.
func (p *Plan) Calculate() []Change {
	byHost := make(map[string][]*Current, len(p.Current))
	// One backing array for the common single-entry hostnames instead of one slice each.
	singles := make([]*Current, len(p.Current))
	for i := range p.Current {
		c := &p.Current[i]
		key := strings.ToLower(c.Hostname)
		if prev, ok := byHost[key]; ok {
			byHost[key] = append(prev[:len(prev):len(prev)], c)
			continue
		}
		singles[i] = c
		byHost[key] = singles[i : i+1 : i+1]
	}
	var out []Change
	seen := make(map[string]bool, len(p.Desired))
	for _, ep := range p.Desired {
		seen[ep.Hostname] = true
		out = append(out, planHostname(ep, byHost[ep.Hostname])...)
	}
	for host, recs := range byHost {
		if seen[host] {
			continue
		}
		for _, c := range recs {
			switch c.Owner {
			case endpoint.OwnerHandMade:
			case endpoint.OwnerCoOwned:
				out = append(out, withdraw(c)...)
			default:
				out = append(out, Change{Action: Delete, Old: recordPtr(c.Record)})
			}
		}
	}
	Sort(out)
	return out
}

// planHostname matches one endpoint's targets to the entries that exist for its hostname:
//
//  1. each target keeps an entry that already has its IP, preferring an adopted entry, then
//     one the operator created, then one it may adopt;
//  2. targets left over take surplus entries, re-pointed: adopted first, then adoptable ones
//     (a hand-made line with a stale address must not stay beside ours), then created ones;
//  3. an adopted entry still left over takes the target of a created entry, so adopted
//     entries are the last to go while the hostname is wanted (the created entry goes at
//     once, a duplicate: two must not serve one address);
//  4. what is still missing is created; surplus created and adopted entries are deleted
//     (the registry turns that into a grace period), surplus adoptable entries left alone.
//     A surplus created entry whose address another entry serves is a duplicate, deleted
//     at once.
func planHostname(ep *endpoint.Endpoint, recs []*Current) []Change {
	// The common case, one address served by one entry already right, costs no allocation.
	if len(recs) == 1 && len(ep.Targets) == 1 && (recs[0].Owner == endpoint.OwnerThis || recs[0].Owner == endpoint.OwnerAdopted) && recs[0].IP == ep.Targets[0] && upToDate(ep, recs[0]) {
		return nil
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	assigned := make(map[string]*Current, len(ep.Targets))
	used := make(map[*Current]bool, len(recs))
	for _, class := range []endpoint.Owner{endpoint.OwnerAdopted, endpoint.OwnerThis, endpoint.OwnerCoOwned, endpoint.OwnerHandMade} {
		for _, c := range recs {
			if c.Owner == class && !used[c] && !c.Yields && assigned[c.IP] == nil && slices.Contains(ep.Targets, c.IP) {
				assigned[c.IP], used[c] = c, true
			}
		}
	}
	var missing []string
	for _, ip := range ep.Targets {
		if assigned[ip] == nil {
			missing = append(missing, ip)
		}
	}
	for _, class := range []endpoint.Owner{endpoint.OwnerAdopted, endpoint.OwnerHandMade, endpoint.OwnerThis} {
		if class != endpoint.OwnerHandMade && ep.Shared {
			// A shared hostname's entries are never re-pointed: another cluster may put the
			// address on the name in the same moment, and only AddHost refuses a second line.
			continue
		}
		for _, c := range recs {
			if len(missing) == 0 {
				break
			}
			if c.Owner == class && !used[c] && !c.Pinned && !c.Yields {
				assigned[missing[0]], used[c] = c, true
				missing = missing[1:]
			}
		}
	}
	if !ep.Shared {
		for _, c := range recs {
			if c.Owner != endpoint.OwnerAdopted || used[c] {
				continue
			}
			for _, ip := range ep.Targets {
				if a := assigned[ip]; a != nil && a.Owner == endpoint.OwnerThis && !a.Pinned {
					used[a] = false
					assigned[ip], used[c] = c, true
					break
				}
			}
		}
	}
	var out []Change
	for _, ip := range ep.Targets {
		c := assigned[ip]
		if c == nil {
			continue
		}
		want := desiredRecord(ep, c, ip)
		switch {
		case c.Owner == endpoint.OwnerCoOwned:
			if !slices.Equal(c.Tags, want.Tags) {
				out = append(out, Change{Action: Update, Old: recordPtr(c.Record), New: want})
			}
		case c.Owner == endpoint.OwnerHandMade:
			out = append(out, Change{Action: Adopt, Old: recordPtr(c.Record), New: want})
		case endpoint.Diff(&c.Record, want) != 0:
			out = append(out, Change{Action: Update, Old: recordPtr(c.Record), New: want})
		}
	}
	for _, ip := range missing {
		out = append(out, Change{Action: Create, New: newRecord(ep, ip)})
	}
	for _, c := range recs {
		if !used[c] && c.Owner == endpoint.OwnerCoOwned {
			out = append(out, withdraw(c)...)
		}
	}
	for _, c := range recs {
		if !used[c] && c.Owner != endpoint.OwnerHandMade && c.Owner != endpoint.OwnerCoOwned {
			out = append(out, Change{Action: Delete, Old: recordPtr(c.Record), Duplicate: c.Owner == endpoint.OwnerThis && assigned[c.IP] != nil})
		}
	}
	return out
}

// upToDate reports whether entry c already is what desiredRecord would make of it (IP aside),
// without building that record.
func upToDate(ep *endpoint.Endpoint, c *Current) bool {
	if c.Hostname != ep.Hostname || !endpoint.SameSet(c.Aliases, ep.Aliases) {
		return false
	}
	if c.Owner == endpoint.OwnerAdopted {
		return len(c.Tags) == len(c.Keep)+len(ep.OwnerTags)+len(ep.TargetTags[c.IP])+len(c.Trail) &&
			endpoint.SameUnion(c.Tags, c.Keep, ep.OwnerTags, ep.TargetTags[c.IP], c.Trail)
	}
	return c.Comment == ep.CommentAt(c.IP) && endpoint.SameUnion(c.Tags, ep.OwnerTags, ep.TargetTags[c.IP], ep.Tags, c.Keep)
}

// withdraw is what becomes of a co-owned line this cluster no longer wants: its co-owner tag
// comes off (the line stays, its writer's), nothing when the line does not carry it.
func withdraw(c *Current) []Change {
	if slices.Equal(c.Tags, c.Keep) {
		return nil
	}
	n := c.Record
	n.Tags = append([]string{}, c.Keep...)
	return []Change{{Action: Update, Old: recordPtr(c.Record), New: &n}}
}

// desiredRecord is what entry c should look like to serve ep at ip. An adopted entry keeps
// its comment and its tags are Keep, the ownership tags, then Trail; it takes none of the
// cluster's user tags, so that releasing it gives back what the user had.
func desiredRecord(ep *endpoint.Endpoint, c *Current, ip string) *endpoint.Record {
	r := c.Record
	if c.Owner == endpoint.OwnerCoOwned {
		// Another cluster's line: only this cluster's co-owner tag is this cluster's to write.
		r.Tags = append(append([]string{}, c.Keep...), c.Trail...)
		return &r
	}
	r.IP, r.Hostname, r.Aliases = ip, ep.Hostname, ep.Aliases
	if c.Owner == endpoint.OwnerThis {
		r.Tags = endpoint.SortedUnique(append(append(append(append([]string{}, ep.OwnerTags...), ep.TargetTags[ip]...), ep.Tags...), c.Keep...))
		r.Comment = ep.CommentAt(ip)
		return &r
	}
	owner := endpoint.SortedUnique(append(append([]string{}, ep.OwnerTags...), ep.TargetTags[ip]...))
	r.Tags = append(append(append(make([]string, 0, len(c.Keep)+len(owner)+len(c.Trail)), c.Keep...), owner...), c.Trail...)
	return &r
}

// newRecord is the entry to create for ep at ip.
func newRecord(ep *endpoint.Endpoint, ip string) *endpoint.Record {
	return &endpoint.Record{
		IP:       ip,
		Hostname: ep.Hostname,
		Aliases:  ep.Aliases,
		Tags:     endpoint.SortedUnique(append(append(append([]string{}, ep.OwnerTags...), ep.TargetTags[ip]...), ep.Tags...)),
		Comment:  ep.CommentAt(ip),
	}
}

func recordPtr(r endpoint.Record) *endpoint.Record { return &r }

// actionOrder puts removals before additions in the sorted output of a hostname, the order in
// which a reader expects them.
var actionOrder = map[Action]int{Delete: 0, Release: 1, Mark: 2, Unmark: 3, Update: 4, Adopt: 5, Create: 6}

// Sort orders changes by hostname, action and IP.
func Sort(cs []Change) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := &cs[i], &cs[j]
		if ha, hb := a.Hostname(), b.Hostname(); ha != hb {
			return ha < hb
		}
		if oa, ob := actionOrder[a.Action], actionOrder[b.Action]; oa != ob {
			return oa < ob
		}
		return ipOf(a) < ipOf(b)
	})
}

func ipOf(c *Change) string {
	if c.New != nil {
		return c.New.IP
	}
	return c.Old.IP
}
