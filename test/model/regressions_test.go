package model

import (
	"slices"
	"testing"
	"time"
)

// regressions are runs the simulation shrank from failures, each now held: every one broke an
// invariant on the code before its fix.
var regressions = []struct {
	name    string
	seed    int64
	actions []Action
}{
	{
		// Issue 48, 1: two webhooks on the default name hash one UID from one hostname; w1 took
		// w2's record for its own former identity's and marked it (O1, O4).
		name: "a webhook leaves another webhook's record of its name alone", seed: 1,
		actions: []Action{
			{Kind: "create", Party: "W2", I: 4952771997674410968, J: 3119170057034093787},
			{Kind: "sync", Party: "w2"},
			{Kind: "create", Party: "W1", I: 1694881465938077493, J: 8994033427526121365},
			{Kind: "sync", Party: "w1"},
			{Kind: "tick", D: 180000000000},
			{Kind: "sync", Party: "w1"},
			{Kind: "sync", Party: "w2"},
			{Kind: "settle"},
		},
	},
	{
		// A writer handed its shared line over and, in the same sync, wrote its own unshared
		// line of the name beside the receiver's (O4).
		name: "a hand-over needs both consents", seed: 1,
		actions: []Action{
			{Kind: "create", Party: "W2", I: 5428658603350578075, J: 3797840465501570741},
			{Kind: "create", Party: "A", I: 7636288850561476182, J: 6459015586921615080},
			{Kind: "share", Party: "W2", I: 4136353673894269217, J: 4493988860614313135},
			{Kind: "sync", Party: "w2"},
			{Kind: "delete", Party: "W2", I: 7816810220199150299, J: 7675671191860293954},
			{Kind: "sync", Party: "a"},
			{Kind: "create", Party: "W2", I: 1008176001586657500, J: 7890118970448673079},
			{Kind: "share", Party: "W2", I: 122537549404881513, J: 8761626118042981173},
			{Kind: "sync", Party: "w2"},
			{Kind: "settle"},
		},
	},
	{
		// The soak's seed 31337: a twin created names and was away at once; the other, which
		// had read the router before, marked them and deleted them three whole reads later,
		// though the twin's object still wanted them (O3).
		name: "a twin away comes back to its names", seed: 1,
		actions: append([]Action{
			{Kind: "sync", Party: "a"},
			{Kind: "tick", D: time.Second},
			{Kind: "create", Party: "T", I: 1, J: 2},
			{Kind: "sync", Party: "t"},
			{Kind: "stop", Party: "t"},
		}, slices.Repeat([]Action{{Kind: "tick", D: time.Minute}, {Kind: "sync", Party: "a"}}, 40)...),
	},
	{
		// The compact-foreign mutation's run: a namesake compacted the twin's entry whose log
		// a person's script had made long (O10).
		name: "a namesake leaves another installation's long log alone", seed: 1,
		actions: []Action{
			{Kind: "create", Party: "T", I: 7582468639515319993, J: 3238642280712712661},
			{Kind: "sync", Party: "t"},
			{Kind: "hand-churn", I: 7756793223429037911},
			{Kind: "sync", Party: "n"},
		},
	},
}

// TestRegressions plays each shrunk run against the whole contract.
func TestRegressions(t *testing.T) {
	for _, r := range regressions {
		t.Run(r.name, func(t *testing.T) {
			f, err := Play(r.seed, r.actions)
			if err != nil {
				t.Fatal(err)
			}
			if f != nil {
				t.Fatal(f)
			}
		})
	}
}
