package main

import (
	"context"
	"testing"
)

// TestAChangeTravelsFromTheInformerToTheRouter: the change the command makes reaches the
// router through the whole operator, and no other entry moves.
func TestAChangeTravelsFromTheInformerToTheRouter(t *testing.T) {
	if err := run(context.Background(), false); err != nil {
		t.Fatal(err)
	}
}
