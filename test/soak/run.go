// Package soak runs the whole operator at random, the way a real cluster lives, and holds it
// to the promises of the README. Two clusters share one router-hosts server: cluster a with
// two replicas under leader election, cluster b behind a faulty network, and the entries of a
// cluster c that never runs. Every source kind a user runs is created, re-pointed, renamed,
// deleted and recreated; a person edits the router by hand; operators are killed, the router
// and the kube-apiserver restarted, the network slowed, killed and reset. A model of what the
// soak did says what must hold: during the churn (availability, nothing touched that is not
// the operator's, no namespace taking a name from its holder) and once it stops (every wanted
// entry exactly right, nothing unwanted left, adoptions and releases exact). Everything the
// soak chooses comes from its seed, so a seed replays the same run.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The mutations break the operators' configuration on purpose, to show that the checker
// catches what they break.
const (
	// MutationUpsertOnly runs every operator with --policy=upsert-only: nothing is deleted or
	// given back.
	MutationUpsertOnly = "upsert-only"
	// MutationCreateOnly runs every operator with --policy=create-only: nothing is updated
	// or adopted.
	MutationCreateOnly = "create-only"
	// MutationWrongCluster runs cluster a's first replica, the first to lead, as cluster a-typo.
	MutationWrongCluster = "wrong-cluster"
	// MutationForeignCluster runs cluster b as cluster c, whose entries it then takes for its own.
	MutationForeignCluster = "foreign-cluster"
)

// Mutations lists the mutations.
var Mutations = []string{MutationUpsertOnly, MutationCreateOnly, MutationWrongCluster, MutationForeignCluster}

// Config is one run.
type Config struct {
	Seed int64
	// Duration is how long the churn lasts.
	Duration time.Duration
	// Settle is how long the operators get, once the churn has stopped and every fault is
	// healed, to bring the router to what the model wants.
	Settle time.Duration
	// OperatorBin is the operator binary every replica runs.
	OperatorBin string
	// RouterBin, when set, is the real router-hosts server's binary; the test server runs
	// otherwise.
	RouterBin string
	// Mutation is one of Mutations, or "".
	Mutation string
	// Dir keeps the run's logs.
	Dir string
	// Out is told how the run goes.
	Out io.Writer
}

// longRun is the length from which a run follows the leader's resources for growth.
const longRun = 10 * time.Minute

// Result is what a run found.
type Result struct {
	Seed     int64
	Duration time.Duration
	Router   string
	// Actions counts what the driver did, by kind.
	Actions map[string]int
	// Settled is how long after the churn every final invariant held; -1 if it never did.
	Settled  time.Duration
	Failures []Failure
	// Vanishes are the stretches a claimed hostname did not resolve.
	Vanishes []Vanish
	// Polls counts the hosts-file polls and the server listings the checks ran on.
	Polls, Listings int
	// Final says what the last final check looked at.
	Final string
	// Samples are the resources of cluster a's leader, every five seconds.
	Samples []sample
	// Growth is the fit over the longest-lived leader, for long runs.
	Growth *growth
	// history renders the actions behind a failure.
	history *history
	Dir     string
}

// OK reports whether every invariant held.
func (r *Result) OK() bool { return len(r.Failures) == 0 }

// Run plays one soak and checks it. An error means the world could not be set up or driven;
// broken invariants are the Result's Failures.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Settle == 0 {
		cfg.Settle = 90 * time.Second
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	unlock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := &Result{Seed: cfg.Seed, Duration: cfg.Duration, Router: "test server", Actions: map[string]int{}, Settled: -1, history: &history{}, Dir: cfg.Dir}
	if cfg.RouterBin != "" {
		res.Router = "real server " + cfg.RouterBin
	}
	m := newModel()
	set := settings{clusters: map[string]time.Duration{}, slack: time.Second, writeLag: requestTimeout}
	for _, c := range clusterSpecs {
		set.clusters[c.name] = defaultGrace
	}
	ck := newChecker(m, set, time.Now())
	exited := func(p *proc) {
		ck.fail(time.Now(), InvProcess, nil, "operator %s exited on its own (%v); its log ends:\n%s", p.name, p.exit, p.tail(25))
	}
	fmt.Fprintf(cfg.Out, "soak: seed %d, %v of churn, %s, mutation %q; logs in %s\n", cfg.Seed, cfg.Duration, res.Router, cfg.Mutation, cfg.Dir)
	w, err := newWorld(ctx, cfg, cfg.Dir, exited)
	if err != nil {
		return nil, err
	}
	defer w.close()
	for _, e := range w.foreignEntries {
		m.foreign[e.GetId()] = e
	}
	d := &driver{w: w, m: m, hist: res.history, counts: res.Actions}
	d.rng = newRand(cfg.Seed)
	for _, c := range clusterSpecs {
		w.kube.gatewayNS[c.name] = c.namespaces[0]
		for _, name := range c.gateways {
			gw := &Gateway{Cluster: c.name, Namespace: c.namespaces[0], Name: name, IPs: d.ips(c.name, 1)}
			if err := w.kube.createGateway(ctx, gw); err != nil {
				return nil, err
			}
			m.gateways[c.name+"/"+name] = gw
		}
	}
	if err := w.startOperators(); err != nil {
		return nil, err
	}

	start := time.Now()
	ck.start, d.start, d.end = start, start, start.Add(cfg.Duration)
	if cfg.Duration >= longRun {
		d.quietLeaderFrom = start.Add(cfg.Duration * 6 / 10)
	}
	loops, stopLoops := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var samplesMu sync.Mutex
	every := func(period time.Duration, fn func(now time.Time)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(period)
			defer t.Stop()
			for {
				select {
				case <-loops.Done():
					return
				case now := <-t.C:
					fn(now)
				}
			}
		}()
	}
	// Availability: the hosts file every 50 ms.
	every(50*time.Millisecond, func(now time.Time) {
		b, err := os.ReadFile(w.router.HostsFile())
		if err != nil {
			return
		}
		ck.pollHosts(parseHostsFile(b), now)
		res.Polls++
	})
	// Everything else that must hold at every moment: one listing a second.
	every(time.Second, func(now time.Time) {
		if m.routerRestarting(now, 0) {
			return
		}
		m.personMu.Lock()
		defer m.personMu.Unlock()
		entries, err := w.list(loops)
		if err != nil {
			return // the router is restarting; the next listing checks
		}
		ck.continuous(newView(entries), time.Now())
		res.Listings++
	})
	// The leader's resources, every five seconds.
	every(5*time.Second, func(time.Time) {
		r := w.leader("a")
		if r == nil {
			return
		}
		if p := r.current(); p != nil {
			if s, ok := p.sample(start); ok {
				samplesMu.Lock()
				res.Samples = append(res.Samples, s)
				samplesMu.Unlock()
			}
		}
	})

	driveErr := d.run(ctx)
	if driveErr == nil {
		driveErr = d.heal(ctx)
	}
	if driveErr != nil {
		stopLoops()
		wg.Wait()
		return res, fmt.Errorf("seed %d: driving the world: %w", cfg.Seed, driveErr)
	}
	fmt.Fprintf(cfg.Out, "soak: seed %d: %d actions; churn over, faults healed, settling (at most %v)\n", cfg.Seed, res.history.len(), cfg.Settle)
	churnEnd := time.Now()
	var last []Failure
	for deadline := churnEnd.Add(cfg.Settle); ; {
		last, err = settleCheck(ctx, w, m, ck, res)
		if err == nil && len(last) == 0 {
			// Once more a little later: a state that holds only for a moment has not settled.
			time.Sleep(3 * time.Second)
			if last, err = settleCheck(ctx, w, m, ck, res); err == nil && len(last) == 0 {
				res.Settled = time.Since(churnEnd) - 3*time.Second
				break
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				last = append(last, Failure{Invariant: InvWanted, Detail: "the router could not be read at the end: " + err.Error()})
			}
			break
		}
		time.Sleep(time.Second)
	}
	stopLoops()
	wg.Wait()
	ck.closeVanishes(time.Now())
	end := time.Since(start)
	for i := range last {
		last[i].At = end
		last[i].Detail = "not settled within " + cfg.Settle.String() + ": " + last[i].Detail
	}
	if err := writeSamples(filepath.Join(cfg.Dir, "samples.csv"), res.Samples); err != nil {
		return res, err
	}
	if cfg.Duration >= longRun {
		res.Growth = fitGrowth(res.Samples)
		if f := res.Growth.failure(end); f != nil {
			f.Detail += dumpFollowed(w, res.Growth)
			res.Failures = append(res.Failures, *f)
		}
	}
	w.stopOperators()
	if tr, ok := w.router.(*testRouter); ok {
		if err := tr.hostsErr(); err != nil {
			return res, fmt.Errorf("the test server's hosts file: %w", err)
		}
	}
	res.Failures = append(append(ck.Failures(), last...), res.Failures...)
	res.Failures = append(res.Failures, scanLogs(cfg.Dir, end)...)
	res.Vanishes = ck.Vanishes
	if err := res.history.write(filepath.Join(cfg.Dir, "actions.log")); err != nil {
		return res, err
	}
	sort.SliceStable(res.Failures, func(i, j int) bool { return res.Failures[i].At < res.Failures[j].At })
	return res, nil
}

// dumpFollowed asks the process growth followed, if it still runs, for a stack dump, and
// renders the census of its goroutines for the failure.
func dumpFollowed(w *world, g *growth) string {
	if g == nil {
		return ""
	}
	for _, rs := range w.replicas {
		for _, r := range rs {
			if p := r.current(); p != nil && p.name == g.proc {
				r.dump()
				census := goroutineCensus(p.logText())
				if len(census) > 15 {
					census = census[:15]
				}
				return fmt.Sprintf("; its goroutines when it ended (SIGQUIT, the stacks in %s):\n%s", p.logPath, strings.Join(census, "\n"))
			}
		}
	}
	return ""
}

// writeSamples saves the leader's resources, one sample a line.
func writeSamples(path string, samples []sample) error {
	var b strings.Builder
	b.WriteString("at_s,process,age_s,rss_kib,goroutines,fds\n")
	for _, s := range samples {
		fmt.Fprintf(&b, "%.1f,%s,%.1f,%.0f,%.0f,%.0f\n", s.at.Seconds(), s.proc, s.age.Seconds(), s.rssKiB, s.goroutines, s.fds)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("writing the samples: %w", err)
	}
	return nil
}

// settleCheck lists the router and runs the final checks on it.
func settleCheck(ctx context.Context, w *world, m *Model, ck *checker, res *Result) ([]Failure, error) {
	m.personMu.Lock()
	defer m.personMu.Unlock()
	entries, err := w.list(ctx)
	if err != nil {
		return nil, err
	}
	v := newView(entries)
	ck.continuous(v, time.Now())
	res.Final = ck.summary(v)
	return ck.final(v), nil
}

// scanLogs looks through every operator log of the run for a panic, a fatal error or a data
// race.
func scanLogs(dir string, at time.Duration) []Failure {
	var out []Failure
	logs, _ := filepath.Glob(filepath.Join(dir, "operator-*.log"))
	sort.Strings(logs)
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			continue
		}
		for _, t := range scanLog(f) {
			out = append(out, Failure{At: at, Invariant: InvProcess, Detail: filepath.Base(l) + ":\n" + t})
		}
		f.Close()
	}
	return out
}

// Report writes what the run found: the seed first and with every failure, the invariant,
// the entries concerned and the last actions that touched them.
func (r *Result) Report(w io.Writer) {
	fmt.Fprintf(w, "soak seed %d (%v of churn, %s): ", r.Seed, r.Duration, r.Router)
	if r.OK() {
		fmt.Fprintf(w, "every invariant held; settled %v after the churn\n", r.Settled.Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(w, "%d failures; replay with SOAK_SEED=%d\n", len(r.Failures), r.Seed)
	}
	var acts []string
	for _, k := range sortedKeys(r.Actions) {
		acts = append(acts, fmt.Sprintf("%s %d", k, r.Actions[k]))
	}
	fmt.Fprintf(w, "  actions: %s\n", strings.Join(acts, ", "))
	fmt.Fprintf(w, "  checks: %d hosts-file polls, %d listings; %d vanishings\n", r.Polls, r.Listings, len(r.Vanishes))
	fmt.Fprintf(w, "  at the end: %s\n", r.Final)
	if len(r.Samples) > 0 {
		lo, hi := r.Samples[0], r.Samples[0]
		for _, s := range r.Samples {
			if s.rssKiB < lo.rssKiB {
				lo = s
			}
			if s.rssKiB > hi.rssKiB {
				hi = s
			}
		}
		fmt.Fprintf(w, "  cluster a's leader: RSS %.1f–%.1f MiB over %d samples\n", lo.rssKiB/1024, hi.rssKiB/1024, len(r.Samples))
	}
	if r.Growth != nil {
		fmt.Fprintf(w, "  %s\n", r.Growth)
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "FAIL seed %d: %s\n", r.Seed, f)
		if len(f.Hosts) > 0 {
			fmt.Fprintf(w, "  the last actions on %s before it (and the faults among them):\n%s", strings.Join(f.Hosts, ", "),
				r.history.touching(f.Hosts, f.At, 14))
		}
	}
}

// Err is nil when every invariant held, and otherwise names the seed and the failures.
func (r *Result) Err() error {
	if r.OK() {
		return nil
	}
	var b strings.Builder
	r.Report(&b)
	return errors.New(b.String())
}

// lockDir takes the run directory for this run alone. Two runs sharing one would share the
// router's hosts file, certificates and kubeconfig, and each would check the other's world;
// the lock is the kernel's, so it goes with the process that held it, however that ends.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("run directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("run directory %s is in use by another soak run (%w); give this one its own SOAK_DIR", dir, err)
	}
	return func() { f.Close() }, nil
}
