package model

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// defaultSteps is how many party actions `make model` and `make test` play.
const defaultSteps = 100_000

// TestModel plays MODEL_STEPS party actions (default 100,000) of MODEL_SEED (default: a new
// seed, printed) and fails with the first invariant broken, shrunk to a short run, its seed
// and the Go literal of its actions for a regression test. Built with the tags of a mutation
// (make model MODEL_MUTATION=NAME), it runs an operator broken on purpose, and must fail.
func TestModel(t *testing.T) {
	steps := envInt(t, "MODEL_STEPS", defaultSteps)
	seed := int64(envInt(t, "MODEL_SEED", int(time.Now().UnixNano()%1_000_000)))
	t.Logf("model: seed %d, %d party actions (MODEL_SEED=%d replays it)", seed, steps, seed)
	start := time.Now()
	f, err := Run(seed, steps, time.Minute)
	if err != nil {
		t.Fatalf("model seed %d: %v", seed, err)
	}
	if f != nil {
		t.Fatalf("%v\n\nafter %d actions (shrunk); replay with MODEL_SEED=%d, or as a regression test:\n%s", f, len(f.Actions), seed, literal(f.Actions))
	}
	t.Logf("model: seed %d held every invariant over %d party actions in %s", seed, steps, time.Since(start).Round(time.Millisecond))
}

func literal(actions []Action) string {
	var b strings.Builder
	b.WriteString("[]Action{\n")
	for _, a := range actions {
		fmt.Fprintf(&b, "\t%#v,\n", a)
	}
	b.WriteString("}")
	return b.String()
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}
