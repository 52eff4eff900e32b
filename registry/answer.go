package registry

import (
	"slices"
	"strings"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// answer takes a release probe off every entry of this cluster that carries one and that no
// change of the sync writes anyway: whatever the policy, whatever the brake or a twin holds,
// marked or wanted by no object, so that a release run beside a running operator always learns
// that it runs. Any other write to the entry answers too (release refuses on any change). Its
// answers are each probe's own write, which a dry run sends (Verdict.Answers).
func (r *Registry) answer(in *changesIn, changes []plan.Change) changed {
	st := in.st
	var (
		written map[string]bool
		answers []plan.Change
	)
	for i := range st.Owned {
		rec := &st.Owned[i]
		if v := st.view(rec); !slices.ContainsFunc(v.op, func(t string) bool { return strings.HasPrefix(t, PrefixReleaseProbe) }) {
			continue
		}
		if written == nil {
			written = make(map[string]bool, len(changes))
			for _, c := range changes {
				if c.Old != nil {
					written[c.Old.ID] = true
				}
			}
		}
		a := answering(rec)
		answers = append(answers, a)
		if !written[rec.ID] {
			// Full slice expression: an append never writes past what the stage was handed.
			changes = append(changes[:len(changes):len(changes)], a)
		}
	}
	return changed{changes: changes, answers: answers}
}

// answering is the write that takes the operator's release probe off rec, and nothing else.
func answering(rec *endpoint.Record) plan.Change {
	v := viewOf(rec)
	n := *rec
	n.Tags = slices.DeleteFunc(slices.Clone(rec.Tags), func(t string) bool { return strings.HasPrefix(t, PrefixReleaseProbe) && slices.Contains(v.op, t) })
	return plan.Change{Action: ActionAnswer, Old: rec, New: &n}
}
