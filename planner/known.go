package planner

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// known is the server's entries by ID as of the last read, with the results of the operator's
// own writes since (every write answers with the entry as stored): event-triggered syncs plan
// from it instead of reading the whole server. The rules: a sync that read the whole server
// replaces it once its writes are done; a search replaces one hostname's entries; every write
// that went through is applied to it; a failed write, a sync that found it out of date or left
// out what only a fresh read may send, and a reconfiguration put it in doubt (forget), and the
// next sync reads the server.
type known struct {
	// list holds the entries in no order, at the index of their ID: a sync reads them as they
	// stand, without a copy.
	list  []endpoint.Record
	at    map[string]int
	valid bool
}

// records are the known entries, in no order. The slice is the known state's own: it is
// read, never kept or changed, and stands until the next change to the known state.
func (k *known) records() []endpoint.Record { return k.list }

// read takes a whole read of the server; the slice becomes the known state's.
func (k *known) read(records []endpoint.Record) {
	k.list, k.at, k.valid = records[:0], make(map[string]int, len(records)), true
	for _, r := range records {
		k.put(r)
	}
}

// put stores r, replacing the entry of its ID.
func (k *known) put(r endpoint.Record) {
	if i, ok := k.at[r.ID]; ok {
		k.list[i] = r
		return
	}
	k.at[r.ID] = len(k.list)
	k.list = append(k.list, r)
}

// remove drops the entry of id, moving the last one into its place.
func (k *known) remove(id string) {
	i, ok := k.at[id]
	if !ok {
		return
	}
	last := len(k.list) - 1
	if i != last {
		k.list[i] = k.list[last]
		k.at[k.list[i].ID] = i
	}
	k.list[last] = endpoint.Record{}
	k.list = k.list[:last]
	delete(k.at, id)
}

// searched takes a search's answer: every entry of hostname (any case) there is. It reports
// whether the answer differs from what was known of hostname, field by field.
func (k *known) searched(hostname string, found []endpoint.Record) (changed bool) {
	var gone []string
	for i := range k.list {
		if r := &k.list[i]; strings.EqualFold(r.Hostname, hostname) {
			changed = changed || !slices.ContainsFunc(found, func(f endpoint.Record) bool { return sameRecord(&f, r) })
			gone = append(gone, r.ID)
		}
	}
	before := len(gone)
	for _, id := range gone {
		k.remove(id)
	}
	for _, r := range found {
		k.put(r)
	}
	// IDs are unique, so equal counts and every known entry found mean the same set.
	return changed || before != len(found)
}

// has reports whether an entry of hostname (any case) is known.
func (k *known) has(hostname string) bool {
	for i := range k.list {
		if strings.EqualFold(k.list[i].Hostname, hostname) {
			return true
		}
	}
	return false
}

func sameRecord(a, b *endpoint.Record) bool {
	return a.ID == b.ID && a.Version == b.Version && a.IP == b.IP && a.Hostname == b.Hostname &&
		a.Comment == b.Comment && slices.Equal(a.Aliases, b.Aliases) && slices.Equal(a.Tags, b.Tags)
}

// wrote applies the writes that went through: results[i] is what became of sent[i].
func (k *known) wrote(sent []plan.Change, results []plan.Result) {
	for i := range results {
		r := &results[i]
		switch {
		case r.Err != nil:
		case sent[i].New == nil:
			k.remove(sent[i].Old.ID)
		case r.Stored != nil && r.Stored.ID != "":
			k.put(*r.Stored)
		}
	}
}

func (k *known) forget() { k.list, k.at, k.valid = nil, nil, false }
