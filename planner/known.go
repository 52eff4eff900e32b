package planner

import (
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// known is the server's entries by ID as of the last read, with the results of the operator's
// own writes since (every write answers with the entry as stored): event-triggered syncs plan
// from it instead of reading the whole server. The rules: a sync that read the whole server
// replaces it once its writes are done; a search replaces one hostname's entries; every write
// that went through is applied to it; a failed write, a sync that found it out of date or
// held back what only a fresh read may send, and a reconfiguration put it in doubt (forget),
// and the next sync reads the server.
type known struct {
	byID  map[string]endpoint.Record
	valid bool
}

// records are the known entries, in no order.
func (k *known) records() []endpoint.Record {
	out := make([]endpoint.Record, 0, len(k.byID))
	for _, r := range k.byID {
		out = append(out, r)
	}
	return out
}

// read takes a whole read of the server.
func (k *known) read(records []endpoint.Record) {
	k.byID, k.valid = make(map[string]endpoint.Record, len(records)), true
	for _, r := range records {
		k.byID[r.ID] = r
	}
}

// searched takes a search's answer: every entry of hostname (any case) there is.
func (k *known) searched(hostname string, found []endpoint.Record) {
	for id, r := range k.byID {
		if strings.EqualFold(r.Hostname, hostname) {
			delete(k.byID, id)
		}
	}
	for _, r := range found {
		k.byID[r.ID] = r
	}
}

// wrote applies the writes that went through.
func (k *known) wrote(sent []plan.Change) {
	for i := range sent {
		ch := &sent[i]
		switch {
		case ch.New == nil:
			delete(k.byID, ch.Old.ID)
		case ch.New.ID != "":
			k.byID[ch.New.ID] = *ch.New
		}
	}
}

func (k *known) forget() { k.byID, k.valid = nil, false }
