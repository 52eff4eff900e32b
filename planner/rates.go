package planner

import (
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// rates are the write-rate budgets' allowances of the objects and namespaces that wrote lately
// (the registry's rate stage), by key. The rules: a sync's charged allowances replace those of the keys it
// touched; an allowance whole again is forgotten, when touched and, for every key, at each sync
// that reads the whole server (so that an object gone leaves nothing behind); a
// reconfiguration forgets them all. An allowance overdrawn (by the writes of objects gone) is
// kept like any other until it is whole, so what a namespace deleted spent holds back its next
// writes in this process.
type rates struct {
	byKey registry.Rates
}

// charged takes a sync's charged allowances (registry.Charge) at now; sweep: the sync read the
// whole server, and every key whole again by now is forgotten.
func (r *rates) charged(reg *registry.Registry, charged registry.Rates, sweep bool, now time.Time) {
	if r.byKey == nil && len(charged) > 0 {
		r.byKey = make(registry.Rates, len(charged))
	}
	for key, a := range charged {
		if a.Tokens >= a.Cap {
			delete(r.byKey, key)
			continue
		}
		r.byKey[key] = a
	}
	if sweep {
		for key, a := range r.byKey {
			if reg.Whole(key, a, now) {
				delete(r.byKey, key)
			}
		}
	}
}
