// Package plan computes the writes that bring the router-hosts entries the operator owns in line
// with the endpoints the cluster wants. It is a pure function: no I/O, no clock, no ownership
// rules beyond what the registry hands it, so every decision can be tested as a table.
package plan

import (
	"fmt"
	"sort"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Policy limits which kinds of change a plan may contain, as external-dns's --policy does.
type Policy string

// The policies. Sync makes the server match the cluster; UpsertOnly never deletes; CreateOnly
// only adds entries and never touches an existing one.
const (
	Sync       Policy = "sync"
	UpsertOnly Policy = "upsert-only"
	CreateOnly Policy = "create-only"
)

// ParsePolicy checks a --policy value.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case Sync, UpsertOnly, CreateOnly:
		return p, nil
	}
	return "", fmt.Errorf("unknown policy %q (want sync, upsert-only or create-only)", s)
}

func (p Policy) allowsUpdates() bool { return p != CreateOnly }
func (p Policy) allowsDeletes() bool { return p == Sync }

// Current is an entry the operator owns, as the registry hands it to the plan.
type Current struct {
	endpoint.Record
	// Keep lists tags that stay on the entry whatever the endpoint wants: an adopted entry's
	// own tags and its pre-existing marker.
	Keep []string
	// Adopted entries take only the endpoint's ownership tags, not its user tags, and keep
	// their own comment, so that releasing them later gives the user back what they had.
	Adopted bool
}

// Plan is the input of one calculation.
type Plan struct {
	// Current are the entries the operator owns (any order).
	Current []Current
	// Desired holds at most one endpoint per hostname (the registry merges claims).
	Desired []*endpoint.Endpoint
	// Policy limits the output; the zero value means Sync.
	Policy Policy
}

// Calculate returns the changes, sorted by hostname, then action, then IP, so that dry-run
// output and tests are stable. Entries are matched per hostname: an entry whose IP is still a
// target is kept, a changed IP is updated in place on a surplus entry (keeping its ID), and only
// what is left over becomes a create or a delete. Held endpoints leave their entries alone.
func (p *Plan) Calculate() []Change {
	policy := p.Policy
	if policy == "" {
		policy = Sync
	}
	byHost := make(map[string][]*Current, len(p.Current))
	// One backing array for the common single-entry hostnames instead of one slice each.
	singles := make([]*Current, len(p.Current))
	for i := range p.Current {
		c := &p.Current[i]
		if prev, ok := byHost[c.Hostname]; ok {
			byHost[c.Hostname] = append(prev[:len(prev):len(prev)], c)
			continue
		}
		singles[i] = c
		byHost[c.Hostname] = singles[i : i+1 : i+1]
	}
	var out []Change
	seen := make(map[string]bool, len(p.Desired))
	for _, ep := range p.Desired {
		seen[ep.Hostname] = true
		if ep.Held() {
			// Nothing resolved (e.g. a load balancer between addresses): keep whatever exists.
			continue
		}
		out = append(out, planHostname(ep, byHost[ep.Hostname], policy)...)
	}
	if policy.allowsDeletes() {
		for host, recs := range byHost {
			if seen[host] {
				continue
			}
			for _, c := range recs {
				out = append(out, Change{Action: Delete, Old: recordPtr(c.Record)})
			}
		}
	}
	Sort(out)
	return out
}

// planHostname matches one endpoint's targets to the entries that exist for its hostname.
func planHostname(ep *endpoint.Endpoint, recs []*Current, policy Policy) []Change {
	// The common case, one address served by one entry already right, costs no allocation.
	if len(recs) == 1 && len(ep.Targets) == 1 && recs[0].IP == ep.Targets[0] && upToDate(ep, recs[0]) {
		return nil
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	wanted := make(map[string]bool, len(ep.Targets))
	for _, ip := range ep.Targets {
		wanted[ip] = true
	}
	var (
		out      []Change
		kept     = make(map[string]bool, len(recs))
		surplus  []*Current
		missing  []string
		matchIDs = make(map[string]*Current, len(recs))
	)
	for _, c := range recs {
		if wanted[c.IP] && !kept[c.IP] {
			kept[c.IP] = true
			matchIDs[c.IP] = c
			continue
		}
		// A second entry with the same IP, or an IP no longer wanted.
		surplus = append(surplus, c)
	}
	for _, ip := range ep.Targets {
		if !kept[ip] {
			missing = append(missing, ip)
		}
	}
	if policy.allowsUpdates() {
		// Reuse surplus entries for new IPs: an IP change becomes one in-place update.
		for len(missing) > 0 && len(surplus) > 0 {
			matchIDs[missing[0]] = surplus[0]
			missing, surplus = missing[1:], surplus[1:]
		}
		for ip, c := range matchIDs {
			want := desiredRecord(ep, c, ip)
			if endpoint.Diff(&c.Record, want) != 0 {
				out = append(out, Change{Action: Update, Old: recordPtr(c.Record), New: want})
			}
		}
	}
	for _, ip := range missing {
		out = append(out, Change{Action: Create, New: newRecord(ep, ip)})
	}
	if policy.allowsDeletes() {
		for _, c := range surplus {
			out = append(out, Change{Action: Delete, Old: recordPtr(c.Record)})
		}
	}
	return out
}

// upToDate reports whether entry c already is what desiredRecord would make of it (IP aside),
// without building that record.
func upToDate(ep *endpoint.Endpoint, c *Current) bool {
	if !endpoint.SameSet(c.Aliases, ep.Aliases) {
		return false
	}
	if c.Adopted {
		return endpoint.SameUnion(c.Tags, ep.OwnerTags, c.Keep)
	}
	return c.Comment == ep.Comment && endpoint.SameUnion(c.Tags, ep.OwnerTags, c.Keep, ep.Tags)
}

// desiredRecord is what entry c should look like to serve ep at ip.
func desiredRecord(ep *endpoint.Endpoint, c *Current, ip string) *endpoint.Record {
	r := c.Record
	r.IP = ip
	r.Aliases = ep.Aliases
	tags := append(append([]string{}, ep.OwnerTags...), c.Keep...)
	if !c.Adopted {
		tags = append(tags, ep.Tags...)
		r.Comment = ep.Comment
	}
	r.Tags = endpoint.SortedUnique(tags)
	return &r
}

// newRecord is the entry to create for ep at ip.
func newRecord(ep *endpoint.Endpoint, ip string) *endpoint.Record {
	return &endpoint.Record{
		IP:       ip,
		Hostname: ep.Hostname,
		Aliases:  ep.Aliases,
		Tags:     endpoint.SortedUnique(append(append([]string{}, ep.OwnerTags...), ep.Tags...)),
		Comment:  ep.Comment,
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
