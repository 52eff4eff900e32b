package main

import (
	"reflect"
	"slices"
	"testing"
)

// TestTheHomelabsDays: the year's churn keeps the long-lived names at Live, each preview goes
// the day after it came, the redeploys, hand edits and the rename fall on their days, and the
// same seed gives the same year.
func TestTheHomelabsDays(t *testing.T) {
	m := mix{Live: 10, Replaced: 2, Previews: 3, Moves: 1, RedeployEvery: 3, HandEvery: 2, RenameOn: 5}
	lab := newHomelab(m, 7)
	if d := lab.first(); len(d.Creates) != 10 || len(d.Removes) != 0 {
		t.Fatalf("day 0: %d creates, %d removes; want the 10 long-lived names", len(d.Creates), len(d.Removes))
	}
	var previews []string
	var hands []handKind
	for n := 1; n <= 12; n++ {
		d := lab.day(n)
		if len(lab.live) != 10 {
			t.Errorf("day %d: %d long-lived names, want 10", n, len(lab.live))
		}
		if !slices.Equal(d.Removes[:len(previews)], previews) {
			t.Errorf("day %d removes %v, want yesterday's previews %v first", n, d.Removes, previews)
		}
		previews = lab.preview
		if len(d.Creates) != 5 || len(d.Moves) != 1 {
			t.Errorf("day %d: %d creates and %d moves, want 5 and 1", n, len(d.Creates), len(d.Moves))
		}
		if got, want := d.Redeploy != "", n%3 == 0; got != want {
			t.Errorf("day %d: redeploy %q", n, d.Redeploy)
		}
		if d.Hand != nil {
			hands = append(hands, *d.Hand)
		}
		if d.Rename != (n == 5) {
			t.Errorf("day %d: rename %v", n, d.Rename)
		}
		for _, o := range append(d.Creates, d.Moves...) {
			if o.Name == d.Redeploy {
				t.Errorf("day %d: %s is redeployed and changed the same day", n, o.Name)
			}
		}
	}
	if want := []handKind{handAdd, handTag, handMove, handOverride, handAdd, handRemove}; !reflect.DeepEqual(hands, want) {
		t.Errorf("hand edits %v, want %v", hands, want)
	}
	a, b := newHomelab(m, 7), newHomelab(m, 7)
	a.first()
	b.first()
	for n := 1; n <= 5; n++ {
		if da, db := a.day(n), b.day(n); !reflect.DeepEqual(da, db) {
			t.Fatalf("day %d differs with the same seed:\n%v\n%v", n, da, db)
		}
	}
}
