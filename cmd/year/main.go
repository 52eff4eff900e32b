// Command year is `make year`: a year of a homelab's churn, compressed, driven through the
// operator onto a router-hosts server, once without compaction (--no-compact-own-entries) and
// once with it. It prints, for every period of the year, the server's log (aggregates, events,
// bytes) and what its calls cost (timed with probes that write nothing, and the operator's own calls), and at
// the end, the same live entries on a fresh server: what remains of the year's cost is the
// server's share.
//
// The operator is built as main builds it (operator.New), on a fake clock: the days pass in
// the time the syncs take. Each day has four syncs: the morning's changes, a redeployed object
// back within the grace period, the deletions once the grace period has passed, and the
// evening's whole read. The syncs of an idle day's other intervals are left out; each is one
// ListHosts, which writes nothing and leaves the log as it was.
//
// By default it runs on the real router-hosts server (RH_BIN, built as
// ../shared/real-router/README.md says), with a fresh SQLite database each run, and reads the
// log's size from that database with the sqlite3 shell.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/test/kubetest"
)

func main() {
	o := options{mix: homelabMix}
	flag.StringVar(&o.server, "server", "real", "real: the router-hosts server at -router-hosts; test: the test server in this process")
	flag.StringVar(&o.bin, "router-hosts", envOr("RH_BIN", ".cache/real-router/router-hosts"), "the real router-hosts binary (env RH_BIN)")
	flag.IntVar(&o.days, "days", 365, "days of the year to play")
	flag.IntVar(&o.every, "every", 30, "days between measurements")
	flag.Uint64Var(&o.seed, "seed", 1, "the seed of the year's churn")
	flag.IntVar(&o.mix.Live, "live", homelabMix.Live, "long-lived names")
	flag.StringVar(&o.compaction, "compaction", "both", "off, on or both: runs without compaction (--no-compact-own-entries) and with it")
	flag.StringVar(&o.dir, "dir", "", "where the runs keep their files (default: a new temporary directory)")
	flag.StringVar(&o.crds, "crds", "kustomize/crds", "the operator's CRDs")
	tombstones := flag.String("tombstones", "", "instead of the year: the server alone, -live entries and these numbers of entries added, deleted and compacted, comma-separated (e.g. 0,500,1000,1500), each probed")
	verbose := flag.Bool("v", false, "the operator's log on standard error")
	flag.Parse()
	o.log = logrus.New()
	o.log.SetLevel(logrus.WarnLevel)
	if *verbose {
		o.log.SetLevel(logrus.InfoLevel)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	run := o.run
	if *tombstones != "" {
		run = func(ctx context.Context, out io.Writer) error { return o.runTombstones(ctx, *tombstones, out) }
	}
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "year:", err)
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// options are the command's flags.
type options struct {
	server, bin, compaction, dir, crds string
	mix                                mix
	days, every                        int
	seed                               uint64
	log                                *logrus.Logger
}

// modes are the runs -compaction asks for, in order.
func (o options) modes() ([]bool, error) {
	switch o.compaction {
	case "off":
		return []bool{false}, nil
	case "on":
		return []bool{true}, nil
	case "both":
		return []bool{false, true}, nil
	}
	return nil, fmt.Errorf("-compaction=%q: want off, on or both", o.compaction)
}

// startRouter starts a fresh router of the kind -server names in dir.
func (o options) startRouter(ctx context.Context, dir string) (router, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the router's directory: %w", err)
	}
	switch o.server {
	case "real":
		return startReal(o.bin, dir)
	case "test":
		return startTest(dir)
	}
	return nil, fmt.Errorf("-server=%q: want real or test", o.server)
}

// result is one year's measurements and the fresh server's beside its end.
type result struct {
	compact bool
	periods []period
	fresh   probe
}

func (o options) run(ctx context.Context, out io.Writer) error {
	modes, err := o.modes()
	if err != nil {
		return err
	}
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "year-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.dir)
	}
	fmt.Fprintf(out, "A year of a homelab on %s: %d long-lived names; each day %d replaced, %d previews for a day, %d moves; a redeploy every %d days, a hand edit every %d, a rename on day %d; seed %d\n\n",
		o.describe(), o.mix.Live, o.mix.Replaced, o.mix.Previews, o.mix.Moves, o.mix.RedeployEvery, o.mix.HandEvery, o.mix.RenameOn, o.seed)
	var results []result
	for _, compact := range modes {
		res, err := o.year(ctx, compact, os.Stderr)
		if err != nil {
			return fmt.Errorf("the year with compaction %s: %w", onOff(compact), err)
		}
		results = append(results, res)
		writeTable(out, res)
	}
	writeSummary(out, results)
	return nil
}

func (o options) runTombstones(ctx context.Context, list string, out io.Writer) error {
	var steps []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || len(steps) > 0 && n < steps[len(steps)-1] {
			return fmt.Errorf("-tombstones=%q: want rising counts, comma-separated", list)
		}
		steps = append(steps, n)
	}
	if o.dir == "" {
		dir, err := os.MkdirTemp("", "tombstones-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.dir = dir
	}
	return o.tombstones(ctx, steps, out)
}

func (o options) describe() string {
	if o.server == "real" {
		return "the real router-hosts server (" + o.bin + ")"
	}
	return "the router-hosts test server"
}

// year plays one year on a fresh control plane and router, then copies the router's live
// entries to a fresh router and probes it.
func (o options) year(ctx context.Context, compact bool, progress io.Writer) (result, error) {
	cp, err := kubetest.Start(o.crds)
	if err != nil {
		return result{}, err
	}
	defer cp.Stop()
	dir := dirOf(o.dir, compact)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return result{}, err
	}
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return result{}, err
	}
	rt, err := o.startRouter(ctx, filepath.Join(dir, "router"))
	if err != nil {
		return result{}, err
	}
	defer rt.stop()
	r := &run{compact: compact, mix: o.mix, days: o.days, every: o.every, seed: o.seed, kubeconfig: kubeconfig, kube: cp.Client,
		router: rt, log: o.log, progress: progress}
	periods, err := r.year(ctx)
	if err != nil {
		return result{}, err
	}
	fresh, err := o.freshCopy(ctx, rt, filepath.Join(dir, "fresh"))
	if err != nil {
		return result{}, fmt.Errorf("the fresh router: %w", err)
	}
	return result{compact: compact, periods: periods, fresh: fresh}, nil
}
