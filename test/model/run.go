package model

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"time"
)

// settleEvery is how many party actions run between two settlings: every installation then
// syncs, round after round, with nothing else acting, until the router is at rest.
const settleEvery = 400

// settleRounds bounds the rounds a settling may take (O8).
const settleRounds = 20

// Failure is an invariant broken: at which step, by what, and the actions that led there.
type Failure struct {
	Seed       int64
	Step       int
	Invariant  string
	Violations []string
	Actions    []Action
}

func (f *Failure) Error() string {
	return fmt.Sprintf("model seed %d, step %d: %s broken:\n  %s", f.Seed, f.Step, f.Invariant, strings.Join(f.Violations, "\n  "))
}

// Draw draws n party actions from seed, with a settling every settleEvery of them and one at
// the end: the run a seed stands for.
func Draw(seed int64, n int) ([]Action, error) {
	w, err := NewWorld(seed)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	r := rand.New(rand.NewSource(seed))
	total := 0
	for _, m := range moves {
		total += m.weight
	}
	out := make([]Action, 0, n+n/settleEvery+1)
	for i := 0; i < n; i++ {
		if r.Intn(400) == 0 {
			out = append(out, flap(w, r)...)
		}
		x := r.Intn(total)
		for _, m := range moves {
			if x < m.weight {
				out = append(out, m.draw(w, r))
				break
			}
			x -= m.weight
		}
		if (i+1)%settleEvery == 0 {
			out = append(out, Action{Kind: "settle"})
		}
	}
	return append(out, Action{Kind: "settle"}), nil
}

// flap is an object's owner flipping its host every two seconds, and its installation syncing
// after each flip, as the event syncs of a running operator would: 48 actions. (A webhook's
// record is its hostname: it does not flip.)
func flap(w *World, r *rand.Rand) []Action {
	in := w.insts[r.Intn(4)]
	i := r.Int()
	var out []Action
	for k := 0; k < 16; k++ {
		out = append(out, Action{Kind: "flip", Party: in.cluster.key, I: i, J: k},
			Action{Kind: "sync", Party: in.name}, Action{Kind: "tick", D: 2 * time.Second})
	}
	return out
}

// Play plays actions on a new world of seed, checking every invariant after every step, and
// returns the first failure.
func Play(seed int64, actions []Action) (*Failure, error) {
	w, err := NewWorld(seed)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	for i, a := range actions {
		var steps []*turn
		if a.Kind == "settle" {
			steps, err = w.settle()
		} else {
			var s *turn
			s, err = w.play(a)
			steps = []*turn{s}
		}
		if err != nil {
			return &Failure{Seed: seed, Step: i, Invariant: "the world", Violations: []string{err.Error()}, Actions: actions[:i+1]}, nil
		}
		for _, s := range steps {
			for _, inv := range Contract {
				if v := inv.check(w, s); len(v) > 0 {
					return &Failure{Seed: seed, Step: i, Invariant: inv.ID + " " + inv.Name, Violations: v, Actions: actions[:i+1]}, nil
				}
			}
		}
	}
	return nil, nil
}

// play runs one action and returns its step as the router saw it.
func (w *World) play(a Action) (*turn, error) {
	w.steps++
	w.compacted = nil
	before := w.entries()
	party := ""
	for _, m := range moves {
		if m.kind == a.Kind {
			var err error
			if party, err = m.play(w, a); err != nil {
				return nil, err
			}
			break
		}
	}
	s := &turn{party: party, before: before, after: w.entries(), compacted: w.compacted}
	s.writes = diff(s.before, s.after)
	w.record(party, s.writes)
	return s, nil
}

// settle stops every party but the installations that are up, and syncs each in turn, a
// minute apart, until a whole round writes nothing (O8); then checks that every address an
// object wants is served, or refused or held in so many words (O9).
func (w *World) settle() ([]*turn, error) {
	// The router's log is compacted first, so that a long run's reads cost what its live
	// entries do; the versions stay, and with them every expected_version.
	w.svc.Store().Compact()
	var steps []*turn
	for round := 0; round < settleRounds; round++ {
		wrote := 0
		for _, in := range w.insts {
			if !in.up {
				continue
			}
			s, err := w.play(Action{Kind: "sync", Party: in.name})
			if err != nil {
				return nil, err
			}
			s.rest = true
			wrote += len(s.writes)
			steps = append(steps, s)
		}
		if wrote == 0 {
			return append(steps, w.served()), nil
		}
		s, err := w.play(Action{Kind: "tick", D: Interval})
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	return append(steps, &turn{party: "settle", settleFailed: fmt.Sprintf("still writing after %d rounds of syncs", settleRounds)}), nil
}

// served is the step that checks O9 at rest: the router's answer, whoever's line gives it.
func (w *World) served() *turn {
	s := &turn{party: "settle", after: w.entries(), rest: true}
	for _, in := range w.insts {
		if !in.up || in.last == nil {
			continue
		}
		refused := map[string]bool{}
		for _, c := range in.last.Conflicts {
			refused[c.Loser.UID+" "+c.Hostname] = true
		}
		for _, p := range in.last.Problems {
			refused[p.Source.UID] = true
		}
		// A change held back (a contested entry, the brake) is said with its reason too.
		heldHosts := map[string]bool{}
		for _, h := range in.last.Held {
			heldHosts[strings.ToLower(h.Change.Hostname())] = true
		}
		for _, o := range in.cluster.objects {
			for _, h := range o.hosts {
				uid := o.uid
				if in.cluster.webhook {
					uid = webhookUID(o.ns, h)
				}
				if refused[uid] || refused[uid+" "+h] || heldHosts[h] {
					continue
				}
				for _, ip := range o.ips {
					if !slices.ContainsFunc(sortedIDs(s.after), func(id string) bool {
						e := s.after[id]
						// Its own line, a line it co-owns or shares, or one a person made that it
						// may not adopt: the name answers.
						return strings.EqualFold(e.GetHostname(), h) && e.GetIpAddress() == ip
					}) {
						s.unserved = append(s.unserved, fmt.Sprintf("%s: %s %s wanted by %s/%s is not on the router, and no conflict, problem or hold says why", in.name, h, ip, o.ns, o.name))
					}
				}
			}
		}
	}
	return s
}

// Run draws and plays n actions of seed; a failure is shrunk (within budget) before it is
// returned.
func Run(seed int64, n int, budget time.Duration) (*Failure, error) {
	actions, err := Draw(seed, n)
	if err != nil {
		return nil, err
	}
	f, err := Play(seed, actions)
	if err != nil || f == nil {
		return f, err
	}
	return Shrink(f, budget)
}

// Shrink removes actions from a failure's run, a chunk at a time, for as long as the same
// invariant still breaks and the budget lasts: what is left is the story to read.
func Shrink(f *Failure, budget time.Duration) (*Failure, error) {
	deadline := time.Now().Add(budget)
	best := f
	for chunk := len(best.Actions) / 2; chunk >= 1 && time.Now().Before(deadline); {
		removed := false
		for at := 0; at+chunk <= len(best.Actions) && time.Now().Before(deadline); {
			try := append(slices.Clone(best.Actions[:at]), best.Actions[at+chunk:]...)
			g, err := Play(best.Seed, try)
			if err != nil {
				return nil, err
			}
			if g != nil && g.Invariant == best.Invariant {
				best, removed = g, true
				continue
			}
			at += chunk
		}
		if !removed {
			chunk /= 2
		}
	}
	return best, nil
}
