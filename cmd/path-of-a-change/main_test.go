package main

import (
	"context"
	"slices"
	"testing"
)

// TestAChangeTravelsFromTheInformerToTheRouter: the change the command makes reaches the
// router through the whole operator, and no other entry moves. Its journey crosses each
// boundary once, downward: the loop calls the source once, decides, hands the provider the
// writes once, and reports after the planner and the registry learnt what was written.
func TestAChangeTravelsFromTheInformerToTheRouter(t *testing.T) {
	seen, err := run(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1-the-event-reaches-the-loop", "2-the-source-lists", "3-the-decision", "4-the-write", "5-after-the-write"}
	if !slices.Equal(seen, want) {
		t.Fatalf("phases %q, want %q", seen, want)
	}
}
