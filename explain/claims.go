package explain

import (
	"fmt"
	"maps"
	"slices"

	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// ClaimOutcome is one outcome of an object's claim that keeps it from the router as it asks:
// outside the domain filter, a name another holds, a part the registry dropped, a problem of
// the object's input.
type ClaimOutcome struct {
	// UID is the object's; Name the hostname or alias concerned, "" for the object as a whole.
	UID, Name string
	Outcome   Outcome
}

// ClaimOutcomes are every such outcome of one decision, in one pass over it and worded as
// explain words them, for the plan command, which compares two decisions' outcomes object by
// object (ExplainNames answers a name at a time).
func ClaimOutcomes(in *Input) []ClaimOutcome {
	d := index(in)
	rep := in.Report
	var out []ClaimOutcome
	for _, uid := range slices.Sorted(maps.Keys(rep.Objects)) {
		for _, ep := range rep.Objects[uid].Endpoints {
			if d.unmanaged[ep.Hostname] {
				out = append(out, ClaimOutcome{UID: uid, Name: ep.Hostname, Outcome: d.outside(ep.Hostname)})
			}
		}
		for _, p := range rep.Objects[uid].Problems {
			out = append(out, ClaimOutcome{UID: uid, Outcome: Outcome{Code: p.Reason, Message: p.Message, Fix: problemFix(p.Reason)}})
		}
	}
	for i := range rep.Conflicts {
		c := &rep.Conflicts[i]
		out = append(out, ClaimOutcome{UID: c.Loser.UID, Name: c.Hostname, Outcome: conflictOutcome(c)})
	}
	for i := range rep.Problems {
		p := &rep.Problems[i]
		out = append(out, ClaimOutcome{UID: p.Source.UID, Outcome: problemOutcome(p)})
	}
	return out
}

// conflictOutcome is a claim on a name another holds.
func conflictOutcome(c *registry.Conflict) Outcome {
	what := "the name"
	if c.Alias {
		what = "the alias " + c.Hostname
	}
	return Outcome{Code: c.Reason, Stage: c.Stage, Holder: c.Winner, Message: fmt.Sprintf("%s is held by %s", what, c.Winner),
		Fix: "remove the claim from one side, or have the holder let go; " + holderFix(c.Winner)}
}

// problemOutcome is a part of a claim the registry refused to write.
func problemOutcome(p *registry.Problem) Outcome {
	return Outcome{Code: p.Reason, Stage: p.Stage, Message: p.Message, Fix: problemFix(p.Reason)}
}
