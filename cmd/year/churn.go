package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// mix is a homelab's year, as rates a day. docs/performance.md ("A year on the real router")
// gives where each rate comes from.
type mix struct {
	// Live is the number of long-lived names, at the start and every day after.
	Live int
	// Replaced long-lived names go each day and as many new ones come.
	Replaced int
	// Previews are preview environments created each day, each deleted the day after.
	Previews int
	// Moves are address changes a day.
	Moves int
	// RedeployEvery is how often (in days) an object is deleted and created again within the
	// grace period: an uninstall and install, which marks its entry and lifts the mark.
	RedeployEvery int
	// HandEvery is how often (in days) a person edits the router by hand.
	HandEvery int
	// RenameOn is the day the cluster gets a new name (0: never).
	RenameOn int
}

// homelabMix is the year `make year` runs.
var homelabMix = mix{Live: 300, Replaced: 2, Previews: 2, Moves: 2, RedeployEvery: 3, HandEvery: 30, RenameOn: 182}

// object is one annotated Ingress of the cluster and the name it asks for.
type object struct {
	Name, Hostname, IP string
}

// handKind is what a person does to the router on a day of hand edits.
type handKind int

const (
	handAdd      handKind = iota // a line of their own (a printer, a NAS)
	handTag                      // a tag on one of their lines (no-adopt)
	handMove                     // a new address for one of their lines
	handOverride                 // a new address for one of the operator's entries, which it puts back
	handRemove                   // one of their lines goes
)

// handCycle is the order of the hand edits through the year.
var handCycle = []handKind{handAdd, handTag, handMove, handOverride, handAdd, handRemove}

func (k handKind) String() string {
	return [...]string{"add a line", "tag a line", "move a line", "move an operator's entry", "remove a line"}[k]
}

// day is what changes in the cluster and on the router on one day of the year.
type day struct {
	N int
	// Creates are new objects; Removes are objects deleted (by name); Moves are objects whose
	// address changes (the new one in IP).
	Creates []object
	Removes []string
	Moves   []object
	// Redeploy is an object deleted and created again within the grace period ("" for none).
	Redeploy string
	// Hand is what a person does by hand that day, if anything.
	Hand *handKind
	// Rename is true on the day the cluster gets a new name.
	Rename bool
}

// homelab generates the year's days from a seed: the same seed, the same year.
type homelab struct {
	mix     mix
	rng     *rand.Rand
	live    map[string]object // long-lived objects by name
	preview []string          // yesterday's previews, which go today
	next    int               // the number of names made so far
}

func newHomelab(m mix, seed uint64) *homelab {
	return &homelab{mix: m, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), live: map[string]object{}}
}

// ip is an address no name has had yet, for a new object or a move.
func (h *homelab) ip() string {
	n := h.next
	h.next++
	return fmt.Sprintf("10.%d.%d.%d", 20+n/62500%200, n/250%250, n%250+1)
}

func (h *homelab) newObject(kind, domain string) object {
	n := h.next
	return object{Name: fmt.Sprintf("%s-%05d", kind, n), Hostname: fmt.Sprintf("%s-%05d.%s", kind, n, domain), IP: h.ip()}
}

// first is day 0: the Live long-lived objects the cluster starts with.
func (h *homelab) first() day {
	d := day{N: 0}
	for range h.mix.Live {
		o := h.newObject("app", "home.lab")
		h.live[o.Name] = o
		d.Creates = append(d.Creates, o)
	}
	return d
}

// pick is a long-lived object chosen at random, not one of skip.
func (h *homelab) pick(skip []string) (object, bool) {
	names := make([]string, 0, len(h.live))
	for n := range h.live {
		if !slices.Contains(skip, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return object{}, false
	}
	slices.Sort(names)
	return h.live[names[h.rng.IntN(len(names))]], true
}

// day is day n (n ≥ 1) of the year.
func (h *homelab) day(n int) day {
	d := day{N: n, Removes: h.preview}
	h.preview = nil
	var touched []string
	for range h.mix.Replaced {
		if o, ok := h.pick(touched); ok {
			delete(h.live, o.Name)
			d.Removes = append(d.Removes, o.Name)
		}
		o := h.newObject("app", "home.lab")
		h.live[o.Name] = o
		touched = append(touched, o.Name)
		d.Creates = append(d.Creates, o)
	}
	for range h.mix.Previews {
		o := h.newObject("pr", "preview.home.lab")
		h.preview = append(h.preview, o.Name)
		d.Creates = append(d.Creates, o)
	}
	for range h.mix.Moves {
		if o, ok := h.pick(touched); ok {
			o.IP = h.ip()
			h.live[o.Name] = o
			touched = append(touched, o.Name)
			d.Moves = append(d.Moves, o)
		}
	}
	if h.mix.RedeployEvery > 0 && n%h.mix.RedeployEvery == 0 {
		if o, ok := h.pick(touched); ok {
			d.Redeploy = o.Name
		}
	}
	if h.mix.HandEvery > 0 && n%h.mix.HandEvery == 0 {
		k := handCycle[(n/h.mix.HandEvery-1)%len(handCycle)]
		d.Hand = &k
	}
	d.Rename = h.mix.RenameOn > 0 && n == h.mix.RenameOn
	return d
}
