package registry

import (
	"slices"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// parses caches the registry's reading of each entry's tags, by entry ID: the syncs between
// two writes to an entry parse its tags once. The rule: a reading stands while the entry's
// tags are the ones it was made from; entries a read no longer returns are swept at the end
// of each sync; a reconfiguration (another cluster name) drops them all.
type parses struct {
	reg  *Registry
	byID map[string]*parsedTags
	// pass counts the syncs; a reading not used in the current one is swept by sweep.
	pass uint64
}

type parsedTags struct {
	tags   []string
	parsed *Parsed
	pass   uint64
}

// parse is the parser: the entry's parsed tags, from the memory while they hold.
func (v *parses) parse(rec *endpoint.Record) *Parsed {
	if v.byID == nil {
		v.byID = map[string]*parsedTags{}
	}
	p := v.byID[rec.ID]
	if p == nil || !slices.Equal(p.tags, rec.Tags) {
		p = &parsedTags{tags: rec.Tags, parsed: v.reg.parse(rec)}
		v.byID[rec.ID] = p
	}
	// The entry's own slice from now on: after a whole read every entry's tags are new
	// strings, and comparing the same strings again is a pointer check, not their bytes.
	p.tags, p.pass = rec.Tags, v.pass
	return p.parsed
}

// begin starts a sync.
func (v *parses) begin() { v.pass++ }

// sweep drops the readings of entries the sync did not meet.
func (v *parses) sweep() {
	for id, p := range v.byID {
		if p.pass != v.pass {
			delete(v.byID, id)
		}
	}
}

func (v *parses) reset() { v.byID = nil }
