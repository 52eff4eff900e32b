// Package soak runs the whole operator at random, the way a real cluster lives, and holds it
// to the promises of the README. Five installations share one router-hosts server: cluster a
// with two replicas under leader election, cluster b behind a faulty network, n, a namesake of
// a (a cluster of its own installed as a is, under a's name), the twins t1 and t2 (two
// installations with one identity, which disagree on a name's address), and the entries of a
// cluster c that never runs. Every source kind a user runs is created, re-pointed, renamed,
// deleted and recreated; a person edits the router by hand; operators are killed, a twin taken
// away for several grace periods, the router and the kube-apiservers restarted, the network
// slowed, killed and reset; at a seeded moment b is renamed, and most of one namespace of a
// gets new hostnames at once, which the mass-deletion brake must hold until the soak reverts
// them or confirms with the brake's token. A model of what the soak did says what must hold:
// during the churn (availability, nothing touched that is not the operator's, no namespace
// taking a name from its holder, no installation writing another's entries, a rename keeping
// its entries' IDs, no twin deleting a name a twin wants, a burst held) and once it stops
// (every wanted entry exactly right, nothing unwanted left, adoptions and releases exact, the
// twins saying they have a twin, and then silence: no write at all). Everything the soak
// chooses comes from its seed, so a seed replays the same run.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
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
	// MutationNoBrake runs cluster a with the mass-deletion brake off: a burst of replaced
	// hostnames deletes the old names after their grace period.
	MutationNoBrake = "no-brake"
)

// Mutations lists the mutations.
var Mutations = []string{MutationUpsertOnly, MutationCreateOnly, MutationWrongCluster, MutationForeignCluster, MutationNoBrake}

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

// initialObjects is how many objects each cluster holds before its operator starts.
const initialObjects = 3

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
	// Identities are the installations' identities; Writes the writes each sent, Unseen those
	// sent for a version of an entry the run never saw; Rename what the rename did; Quiet the
	// writes in the quiet window after settling (-1 when it did not run); Namesakes what each
	// installation's leader reported there.
	Identities  map[string]string
	Writes      map[string]int
	Unseen      []string
	Rename      string
	Quiet       int
	QuietWindow time.Duration
	Namesakes   string
	// LastToSettle is the first failure of the last final check that did not pass.
	LastToSettle string
	// Bursts say what each hostname-replacement burst was and how it ended.
	Bursts []string
	// Shared says what the shared name went through, and its lines at the end.
	Shared string
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
	res := &Result{Seed: cfg.Seed, Duration: cfg.Duration, Router: "test server", Actions: map[string]int{}, Settled: -1, history: &history{}, Dir: cfg.Dir, Quiet: -1}
	if cfg.RouterBin != "" {
		res.Router = "real server " + cfg.RouterBin
	}
	m := newModel()
	set := operatorFacts{clusters: map[string]time.Duration{}, slack: time.Second, writeLag: requestTimeout}
	for _, c := range clusterSpecs {
		set.clusters[ownerGroup(c.name)] = defaultGrace
		if c.twin != "" {
			set.clusters[c.twin] = twinGrace
		}
	}
	ck := newChecker(m, set, time.Now())
	exited := func(p *proc) {
		ck.fail(time.Now(), InvProcess, nil, "operator %s exited on its own (%v); its log ends:\n%s", p.name, p.Err(), p.Tail(25))
	}
	fmt.Fprintf(cfg.Out, "soak: seed %d, %v of churn, %s, mutation %q; logs in %s\n", cfg.Seed, cfg.Duration, res.Router, cfg.Mutation, cfg.Dir)
	w, err := newWorld(ctx, cfg, cfg.Dir, exited)
	if err != nil {
		return nil, err
	}
	defer w.close()
	ck.set.ids, res.Identities = w.ids, w.ids
	for _, e := range w.foreignEntries {
		m.foreign[e.GetId()] = e
	}
	d := &driver{w: w, m: m, ck: ck, hist: res.history, counts: res.Actions, frozen: map[string]bool{}, twinUp: map[string]time.Time{},
		twinReserved: map[string]bool{}}
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
	// Each cluster holds a few objects before its operator starts: a cold start into a
	// cluster in use (and b has entries to rename however early the rename comes); a's burst
	// namespace is full before the first burst however early it comes. The twins' come with
	// them (startTwins).
	for _, c := range clusterSpecs {
		for i := 0; c.twin == "" && i < initialObjects; i++ {
			if err := d.put(ctx, d.newObject(c), "created before the operators started"); err != nil {
				return nil, err
			}
		}
	}
	if err := d.burstSeed(ctx); err != nil {
		return nil, err
	}
	if err := d.shareSeed(ctx); err != nil {
		return nil, err
	}
	if err := startInstallations(ctx, w, m, ck, res.history); err != nil {
		return nil, err
	}
	if err := startTwins(ctx, w, d); err != nil {
		return nil, err
	}

	start := time.Now()
	ck.start, d.start, d.end = start, start, start.Add(cfg.Duration)
	for _, c := range twinsOf(twinPair) {
		d.twinUp[c.name] = start
	}
	d.scheduleRename()
	d.scheduleBursts()
	d.scheduleTwinAway()
	d.scheduleSharing(cfg.Seed)
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
	var settledAt time.Time
	for deadline := churnEnd.Add(cfg.Settle); ; {
		last, err = settleCheck(ctx, w, m, ck, res)
		if err == nil && len(last) == 0 {
			// Once more a little later: a state that holds only for a moment has not settled.
			settledAt = time.Now()
			time.Sleep(3 * time.Second)
			if last, err = settleCheck(ctx, w, m, ck, res); err == nil && len(last) == 0 {
				res.Settled = settledAt.Sub(churnEnd)
				break
			}
		}
		if len(last) > 0 {
			res.LastToSettle = fmt.Sprintf("[%s] %s", last[0].Invariant, last[0].Detail)
		}
		if time.Now().After(deadline) {
			if err != nil {
				last = append(last, Failure{Invariant: InvWanted, Detail: "the router could not be read at the end: " + err.Error()})
			}
			break
		}
		time.Sleep(time.Second)
	}
	for i := range last {
		last[i].Detail = "not settled within " + cfg.Settle.String() + ": " + last[i].Detail
	}
	if res.Settled >= 0 {
		// Settled: from then on nobody writes anything, over a sync of every installation and
		// more (several, in a run of a minute or longer); then each leader reports the
		// namesakes the router shows, and the world is still as it settled.
		res.QuietWindow = quietWindow(cfg.Duration)
		fmt.Fprintf(cfg.Out, "soak: seed %d: settled %v after the churn; a quiet window of %v\n", cfg.Seed, res.Settled.Round(100*time.Millisecond), res.QuietWindow)
		time.Sleep(time.Until(settledAt.Add(res.QuietWindow)))
		ws := w.ledger.since(settledAt)
		res.Quiet = len(ws)
		last = ck.checkQuiet(ws, w.ledger, res.QuietWindow)
		namesakes := checkNamesakes(ctx, w, ck)
		res.Namesakes = namesakes.report
		last = append(last, namesakes.failures...)
		again, err := settleCheck(ctx, w, m, ck, res)
		if err != nil {
			again = append(again, Failure{Invariant: InvWanted, Detail: "the router could not be read after the quiet window: " + err.Error()})
		}
		for _, f := range again {
			f.Detail = "after the quiet window: " + f.Detail
			last = append(last, f)
		}
	}
	stopLoops()
	wg.Wait()
	ck.closeVanishes(time.Now())
	ck.closeShareGap(time.Now())
	end := time.Since(start)
	for i := range last {
		last[i].At = end
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
	if entries, err := w.list(ctx); err == nil {
		res.Shared = d.shareReport(entries)
	}
	w.stopOperators()
	if tr, ok := w.router.(*testRouter); ok {
		if err := tr.hostsErr(); err != nil {
			return res, fmt.Errorf("the test server's hosts file: %w", err)
		}
	}
	res.Writes, res.Unseen = ck.checkWrites(w.ledger)
	last = append(last, ck.checkTwinDeletes(w.ledger)...)
	last = append(last, ck.checkBursts(w.ledger, time.Now())...)
	res.Bursts = burstReport(m, start)
	if r := m.rename; r != nil {
		updates, unanswered, deletes := renameWrites(w.ledger, r)
		res.Rename = fmt.Sprintf("%s renamed from %s to %s at %v: %d entries its objects wanted then; until checked, %d UpdateHosts answered (and %d failed or unanswered), %d DeleteHosts sent for them",
			r.inst, r.from, r.to, r.at.Sub(start).Round(100*time.Millisecond), len(r.snapshot), updates, unanswered, deletes)
	}
	if err := w.ledger.save(filepath.Join(cfg.Dir, "writes.log"), start); err != nil {
		return res, err
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
				census := goroutineCensus(p.Log())
				if len(census) > 15 {
					census = census[:15]
				}
				return fmt.Sprintf("; its goroutines when it ended (SIGQUIT, the stacks in %s):\n%s", p.LogPath, strings.Join(census, "\n"))
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
	out := ck.final(v)
	// Twins settle into holding: each says it has a twin, and neither writes any more.
	out = append(out, checkTwinsHold(w, time.Now())...)
	m.mu.Lock()
	r := m.rename
	checked := r == nil || r.checked
	m.mu.Unlock()
	if !checked {
		// The churn ended before the rename's check: the renamed installation's objects have
		// been left alone since, so its entries are held to it now.
		out = append(out, ck.checkRename(v, r)...)
	}
	return out, nil
}

// quietWindow is how long the settled world is watched for writes: a sync of every
// installation and more after a short churn (make test's), three and more after a minute or
// longer (make soak's). Two installations that rewrite each other's entries do so at every
// sync, so one sync of each shows it.
func quietWindow(churn time.Duration) time.Duration {
	if churn < time.Minute {
		return syncInterval + 2*time.Second
	}
	return 3*syncInterval + 2*time.Second
}

// namesakeReport is what the leaders reported of their namesakes.
type namesakeReport struct {
	report   string
	failures []Failure
}

// checkNamesakes reads each installation's leader's namesake_clusters and holds it to the
// other identities the router shows under the installation's name.
func checkNamesakes(ctx context.Context, w *world, ck *checker) namesakeReport {
	var out namesakeReport
	entries, err := w.list(ctx)
	if err != nil {
		out.failures = append(out.failures, Failure{Invariant: InvNamesakes, Detail: "the router could not be read: " + err.Error()})
		return out
	}
	v := newView(entries)
	var parts []string
	for _, c := range clusterSpecs {
		want := ck.namesakesOnRouter(v, c.name)
		r := w.leader(c.name)
		if r == nil {
			out.failures = append(out.failures, Failure{Invariant: InvNamesakes, Detail: fmt.Sprintf("installation %s has no leader to ask", c.name)})
			continue
		}
		p := r.current()
		got, ok := 0.0, false
		if p != nil {
			got, ok = p.metric("router_hosts_operator_namesake_clusters")
		}
		parts = append(parts, fmt.Sprintf("%s %v (the router shows %d)", c.name, got, want))
		if !ok || int(got) != want {
			out.failures = append(out.failures, Failure{Invariant: InvNamesakes, Detail: fmt.Sprintf(
				"installation %s's leader reports %v namesakes (read: %v); the router shows %d other identities under its name", c.name, got, ok, want)})
		}
	}
	out.report = strings.Join(parts, ", ")
	return out
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
		if r.LastToSettle != "" {
			fmt.Fprintf(w, "  the last to settle: %s\n", r.LastToSettle)
		}
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
	var ids, writes []string
	for _, c := range clusterSpecs {
		ids = append(ids, fmt.Sprintf("%s %s (started as %s)", c.name, r.Identities[c.name], c.clusterName))
		writes = append(writes, fmt.Sprintf("%s %d", c.name, r.Writes[c.name]))
	}
	fmt.Fprintf(w, "  identities: %s\n", strings.Join(ids, ", "))
	fmt.Fprintf(w, "  writes sent: %s (%d for a version the run never saw", strings.Join(writes, ", "), len(r.Unseen))
	if len(r.Unseen) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(r.Unseen[:min(3, len(r.Unseen))], "; "))
	}
	fmt.Fprintln(w, ")")
	if r.Rename != "" {
		fmt.Fprintf(w, "  rename: %s\n", r.Rename)
	}
	for _, b := range r.Bursts {
		fmt.Fprintf(w, "  %s\n", b)
	}
	if r.Shared != "" {
		fmt.Fprintf(w, "  shared name %s\n", r.Shared)
	}
	if r.Quiet >= 0 {
		fmt.Fprintf(w, "  quiet window: %d writes in %v; namesakes reported: %s\n", r.Quiet, r.QuietWindow, r.Namesakes)
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

// The names a and its namesake n both claim from the start: a writes shared-1 first and n
// shared-2, each before the other claims it, so that who holds each is known; the other's
// claim is a conflict for good. Each claim is a pinned HostMapping in the first namespace (a1
// in both clusters), which the churn never touches.
const (
	sharedByA = "shared-1.soak.lan"
	sharedByN = "shared-2.soak.lan"
)

// startInstallations starts a and b, then n, pinning the shared names on the way: a's claim on
// shared-1 and n's on shared-2 before their operators start; n's claim on shared-1 once a's
// entry for it is on the router, a's on shared-2 once n's is.
func startInstallations(ctx context.Context, w *world, m *Model, ck *checker, hist *history) error {
	pin := func(inst, name, host, ip string) error {
		c := specOf(inst)
		o := &Object{Cluster: inst, Namespace: c.namespaces[0], Name: name, Kind: KindHostMapping, addressing: bySpec, Hosts: []string{host}, IPs: []string{ip},
			pinned: true}
		uid, created, err := w.kube.create(ctx, o)
		if err != nil {
			return err
		}
		o.UID, o.Created = uid, created
		m.add(o, time.Now())
		hist.add(0, fmt.Sprintf("pinned %s: hosts %v at %v", o, o.Hosts, o.IPs), o.Hosts)
		return nil
	}
	// written waits until the router has inst's entry for host.
	written := func(host, inst string) error {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			entries, err := w.list(ctx)
			if err == nil && slices.ContainsFunc(newView(entries).byHost[host], func(e *pb.HostEntry) bool { return ck.owner(e) == inst }) {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("installation %s has not written %s after a minute (last read: %v)", inst, host, err)
			}
		}
	}
	if err := pin("a", "pin-1", sharedByA, "10.77.1.201"); err != nil {
		return err
	}
	if err := pin("n", "pin-2", sharedByN, "10.77.14.202"); err != nil {
		return err
	}
	for _, inst := range []string{"a", "b"} {
		if err := w.startInstallation(specOf(inst)); err != nil {
			return err
		}
	}
	if err := written(sharedByA, "a"); err != nil {
		return err
	}
	m.update(func() { m.heldBy[sharedByA] = "a" })
	if err := pin("n", "pin-1", sharedByA, "10.77.14.201"); err != nil {
		return err
	}
	if err := w.startInstallation(specOf("n")); err != nil {
		return err
	}
	if err := written(sharedByN, "n"); err != nil {
		return err
	}
	m.update(func() { m.heldBy[sharedByN] = "n" })
	return pin("a", "pin-2", sharedByN, "10.77.1.202")
}
