package model

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestTheSeedReplays: a seed plays the same run twice, write for write, or a failure's seed
// would not replay it.
func TestTheSeedReplays(t *testing.T) {
	trace := func() string {
		actions, err := Draw(7, 1500)
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewWorld(7)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		var b strings.Builder
		for _, a := range actions {
			if a.Kind == "settle" {
				continue
			}
			s, err := w.play(a)
			if err != nil {
				t.Fatal(err)
			}
			for _, wr := range s.writes {
				fmt.Fprintf(&b, "%s %v %v\n", s.party, wr.before, wr.after)
			}
		}
		return b.String()
	}
	a, b := trace(), trace()
	if d := os.Getenv("MODEL_TRACE"); d != "" {
		_ = os.WriteFile(d+".1", []byte(a), 0o644)
		_ = os.WriteFile(d+".2", []byte(b), 0o644)
	}
	if a == "" || a != b {
		t.Fatalf("two plays of seed 7 wrote differently (%d and %d bytes of trace)", len(a), len(b))
	}
}
