package soak

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestSoak runs the soak. By default (make test) it runs a fixed seed and a random one for
// SOAK_DURATION each (30 s), with the operator built with the race detector; make soak sets:
//
//	SOAK_SEED          one run with this seed (the seed a failure prints replays it), or
//	                   "random" for one run with a random seed
//	SOAK_DURATION      the churn of each run (a Go duration: 60s, 30m)
//	SOAK_SETTLE        how long the operators get to settle afterwards (default 90s)
//	SOAK_ROUTER_BIN    the real router-hosts server's binary, to run against it
//	SOAK_MUTATION      one of Mutations: an operator broken on purpose, which must fail
//	SOAK_OPERATOR_BIN  an operator binary to run instead of building this tree
//	SOAK_RACE          0 to build the operator without the race detector (make soak's default)
//	SOAK_DIR           where to keep the runs' logs (kept on failure)
func TestSoak(t *testing.T) {
	seeds := []int64{1, time.Now().UnixNano() % 1_000_000}
	if s := os.Getenv("SOAK_SEED"); s == "random" {
		seeds = seeds[1:]
	} else if s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("SOAK_SEED=%q: %v", s, err)
		}
		seeds = []int64{seed}
	}
	duration := envDuration(t, "SOAK_DURATION", 30*time.Second)
	settle := envDuration(t, "SOAK_SETTLE", 90*time.Second)
	mutation := os.Getenv("SOAK_MUTATION")
	if mutation != "" && !contains(Mutations, mutation) {
		t.Fatalf("SOAK_MUTATION=%q: want one of %v", mutation, Mutations)
	}
	fmt.Printf("soak seeds %v, %v of churn each\n", seeds, duration)
	base := os.Getenv("SOAK_DIR")
	if base == "" {
		var err error
		if base, err = os.MkdirTemp("", "soak-"); err != nil {
			t.Fatal(err)
		}
	}
	bin := os.Getenv("SOAK_OPERATOR_BIN")
	if bin == "" {
		bin = buildOperator(t, base, os.Getenv("SOAK_RACE") != "0")
	}
	kept := false
	for _, seed := range seeds {
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			dir := filepath.Join(base, fmt.Sprintf("seed-%d", seed))
			res, err := Run(context.Background(), Config{Seed: seed, Duration: duration, Settle: settle, OperatorBin: bin,
				RouterBin: os.Getenv("SOAK_ROUTER_BIN"), Mutation: mutation, Dir: dir, Out: os.Stdout})
			if res != nil {
				res.Report(os.Stdout)
			}
			if err != nil {
				t.Fatalf("seed %d: %v (logs in %s)", seed, err, dir)
			}
			if err := res.Err(); err != nil {
				t.Fatalf("seed %d broke the invariants (logs in %s; replay with make soak SOAK_SEED=%d):\n%v", seed, dir, seed, err)
			}
		})
		kept = kept || !ok
	}
	if !kept && os.Getenv("SOAK_DIR") == "" {
		_ = os.RemoveAll(base)
	}
}

// buildOperator builds the operator from this tree into dir.
func buildOperator(t *testing.T, dir string, race bool) string {
	t.Helper()
	bin := filepath.Join(dir, "router-hosts-operator")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = repoRoot(), os.Stderr, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("building the operator: %v", err)
	}
	fmt.Printf("built the operator (race detector: %v) in %v\n", race, time.Since(start).Round(time.Second))
	return bin
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return d
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
