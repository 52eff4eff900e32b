package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// merges keeps the registry's merge of each hostname with what it was made from, and says
// which hostnames are settled. The rules:
//   - a merge is handed back while its hostname's claims (the same endpoints, in the same
//     order) and owned entries (the same ID, version, address and tags) are those it was made
//     from; a merge that turned claims down is never kept, so that every sync reports them;
//     merges of hostnames a sync no longer meets are swept;
//   - a hostname is settled, left out of the plan, when a sync planning from the known state
//     reused its merge, none of its entries is marked, no other cluster's entry or adoption
//     candidate shares it, and neither the last sync's plan nor this one's changed it: the
//     plan, being pure, would find nothing again;
//   - a reconfiguration drops them all.
type merges struct {
	byHost map[string]*kept
	pass   uint64
	// noisy are the hostnames the last sync's plan changed; planned those this sync's plan
	// changed so far (a sync may plan twice).
	noisy, planned map[string]bool
}

type kept struct {
	claims []*endpoint.Endpoint
	owned  []entryKey
	out    *endpoint.Endpoint
	marked bool
	// pass is the last sync that met it.
	pass uint64
}

// entryKey is what of an entry a merge depends on.
type entryKey struct {
	id, version, ip string
	tags            []string
}

// Merged is the mergeSource desired reads. A merge handed back is this sync's: it is not swept, and its
// entries' own tag slices are kept from now on, as views keeps them, so that comparing the
// same strings again is a pointer check, not their bytes.
func (m *merges) Merged(host string, claims []*endpoint.Endpoint, owned []*endpoint.Record) (*endpoint.Endpoint, bool) {
	k := m.byHost[host]
	if k == nil || !k.from(claims, owned) {
		return nil, false
	}
	k.pass = m.pass
	k.owned = k.owned[:0]
	for _, rec := range owned {
		k.owned = append(k.owned, entryKey{rec.ID, rec.Version, rec.IP, rec.Tags})
	}
	return k.out, true
}

// Keep takes the merges one decision made afresh, and forgets
// those it found no longer hold.
func (m *merges) Keep(made []Merge) {
	if m.byHost == nil {
		m.byHost = make(map[string]*kept, len(made))
	}
	for i := range made {
		r := &made[i]
		if r.Conflicted {
			delete(m.byHost, r.Host)
			continue
		}
		k := &kept{claims: r.Claims, owned: make([]entryKey, 0, len(r.Owned)), out: r.Out, marked: r.Marked, pass: m.pass}
		for _, rec := range r.Owned {
			k.owned = append(k.owned, entryKey{rec.ID, rec.Version, rec.IP, rec.Tags})
		}
		m.byHost[r.Host] = k
	}
}

// from reports whether the merge was made from these claims and entries.
func (k *kept) from(claims []*endpoint.Endpoint, owned []*endpoint.Record) bool {
	if !slices.Equal(k.claims, claims) || len(k.owned) != len(owned) {
		return false
	}
	for _, rec := range owned {
		if !slices.ContainsFunc(k.owned, func(o entryKey) bool {
			return o.id == rec.ID && o.version == rec.Version && o.ip == rec.IP && slices.Equal(o.tags, rec.Tags)
		}) {
			return false
		}
	}
	return true
}

// begin starts one plan of a sync.
func (m *merges) begin() { m.pass++ }

// settled are the hostnames of reused (the merges the claim stages reused and left as they
// were) the plan need not look at, by the rule above.
func (m *merges) settled(reused []string, st *State) map[string]bool {
	var out map[string]bool
	for _, h := range reused {
		if k := m.byHost[h]; k == nil || k.marked || m.noisy[h] || m.planned[h] || len(st.Unowned[h]) > 0 || len(st.Foreign[h]) > 0 {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[h] = true
	}
	return out
}

// changed is told the changes one plan made.
func (m *merges) changed(changes []plan.Change) {
	if m.planned == nil {
		m.planned = make(map[string]bool, len(changes))
	}
	for i := range changes {
		m.planned[strings.ToLower(changes[i].Hostname())] = true
	}
}

// end closes the sync: what it planned is the next sync's noise, and merges it did not meet
// are swept.
func (m *merges) end() {
	m.noisy, m.planned = m.planned, nil
	for h, k := range m.byHost {
		if k.pass != m.pass {
			delete(m.byHost, h)
		}
	}
}

func (m *merges) reset() { m.byHost, m.noisy, m.planned = nil, nil, nil }
