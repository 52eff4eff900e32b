package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/client-go/kubernetes"
	testingclock "k8s.io/utils/clock/testing"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
)

// The hours of a simulated day: the day's changes in the morning, the redeployed object back
// two minutes later, the deletions once the grace period has passed, and the interval's
// whole read in the evening, which reads those deletions back (and compacts them).
const (
	morning   = 9 * time.Hour
	redeploy  = 2 * time.Minute
	grace     = 5 * time.Minute
	afterward = grace + time.Minute
	evening   = 21 * time.Hour
)

// clusterNames are the cluster's name before and after the year's rename.
var clusterNames = [2]string{"homelab", "homelab-k3s"}

// run is one year of one operator on one fresh router.
type run struct {
	compact    bool
	mix        mix
	days       int
	every      int // days between the measurements
	seed       uint64
	kubeconfig string
	kube       kubernetes.Interface
	router     router
	log        *logrus.Logger
	// progress, when set, is told of each measurement as it is made.
	progress io.Writer
}

// period is the measurement at the end of a period of the year, and what the operator's own
// calls and syncs cost during it.
type period struct {
	day                           int
	live, own, aggregates, events int
	largestOwn                    int
	bytes                         int64
	probe                         probe
	calls                         map[string]callCost
	busy, quiet                   time.Duration // mean sync duration: the morning's, the evening's
	syncs                         int
}

// deleted is the number of aggregates the log keeps of entries that are gone.
func (p period) deleted() int { return p.aggregates - p.live }

// callCost is the operator's calls of one RPC in a period: how many and their mean time.
type callCost struct {
	n    uint64
	mean time.Duration
}

// year plays the year and returns the measurements: the first right after day 0, then one
// every r.every days and one at the end.
func (r *run) year(ctx context.Context) ([]period, error) {
	clk := testingclock.NewFakeClock(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clk.Now()
	cl, err := newCluster(ctx, r.kube)
	if err != nil {
		return nil, err
	}
	cli, closeCli, err := r.router.conn().dial()
	if err != nil {
		return nil, err
	}
	defer closeCli()
	pers := &person{cli: cli, lines: map[string]*pb.HostEntry{}}
	if err := pers.add(ctx, "printer.home.lab"); err != nil {
		return nil, err
	}
	op := &running{run: r, clock: clk}
	if err := op.start(ctx, clusterNames[0]); err != nil {
		return nil, err
	}
	defer op.stop()
	lab := newHomelab(r.mix, r.seed)
	var out []period
	acc := &accumulator{}
	for n := 0; n <= r.days; n++ {
		var d day
		if n == 0 {
			d = lab.first()
		} else {
			d = lab.day(n)
		}
		clk.SetTime(start.Add(time.Duration(n)*24*time.Hour + morning))
		if d.Rename {
			acc.fold(op)
			op.stop()
			if err := op.start(ctx, clusterNames[1]); err != nil {
				return nil, err
			}
		}
		if d.Hand != nil {
			if err := pers.edit(ctx, *d.Hand); err != nil {
				return nil, fmt.Errorf("day %d: %w", n, err)
			}
		}
		if err := cl.apply(ctx, d); err != nil {
			return nil, fmt.Errorf("day %d: %w", n, err)
		}
		var again object
		if d.Redeploy != "" {
			again = cl.objects[d.Redeploy]
			if err := cl.remove(ctx, d.Redeploy); err != nil {
				return nil, err
			}
		}
		if err := op.sync(ctx, cl, acc.busy()); err != nil {
			return nil, fmt.Errorf("day %d, morning: %w", n, err)
		}
		if d.Redeploy != "" {
			clk.Step(redeploy)
			if err := cl.create(ctx, again); err != nil {
				return nil, err
			}
			if err := op.sync(ctx, cl, acc.busy()); err != nil {
				return nil, fmt.Errorf("day %d, the redeploy: %w", n, err)
			}
		}
		clk.SetTime(start.Add(time.Duration(n)*24*time.Hour + morning + afterward))
		if err := op.sync(ctx, cl, acc.busy()); err != nil {
			return nil, fmt.Errorf("day %d, after the grace period: %w", n, err)
		}
		clk.SetTime(start.Add(time.Duration(n)*24*time.Hour + evening))
		if err := op.sync(ctx, cl, acc.quiet()); err != nil {
			return nil, fmt.Errorf("day %d, evening: %w", n, err)
		}
		if n <= 1 || n%r.every == 0 || n == r.days {
			entries, err := rhclient.List(ctx, cli)
			if err != nil {
				return nil, err
			}
			if err := pers.check(entries, cl.names()); err != nil {
				return nil, fmt.Errorf("day %d: %w", n, err)
			}
			p, err := r.measure(ctx, cli, pers, entries, op, acc)
			if err != nil {
				return nil, fmt.Errorf("day %d: %w", n, err)
			}
			p.day = n
			out = append(out, p)
			if r.progress != nil {
				fmt.Fprintf(r.progress, "compaction %s, day %d: %d events in %d aggregates, ListHosts %s\n", onOff(r.compact), n, p.events, p.aggregates, ms(p.probe.list))
			}
		}
	}
	return out, nil
}

// measure reads the log and times the probes, and takes the period's own calls and syncs.
func (r *run) measure(ctx context.Context, cli pb.HostsServiceClient, pers *person, entries []*pb.HostEntry, op *running, acc *accumulator) (period, error) {
	l, err := r.router.log(ctx)
	if err != nil {
		return period{}, err
	}
	p := period{live: len(entries), aggregates: len(l.eventsOf), events: l.events(), bytes: l.bytes}
	var longest *pb.HostEntry
	for _, e := range entries {
		if !slices.Contains(e.GetTags(), ownTag) {
			continue
		}
		p.own++
		if n := l.eventsOf[strings.ToUpper(e.GetId())]; n > p.largestOwn {
			p.largestOwn, longest = n, e
		}
	}
	if p.probe, err = measure(ctx, cli, pers.lines[pers.order[0]], longest); err != nil {
		return period{}, err
	}
	p.calls, p.busy, p.quiet, p.syncs, err = acc.take(op)
	return p, err
}

// running is the operator of a run, built as main builds it, on the run's clock.
type running struct {
	*run
	clock  *testingclock.FakeClock
	op     *operator.Operator
	cancel context.CancelFunc
}

func (o *running) start(ctx context.Context, cluster string) error {
	c := o.router.conn()
	args := []string{"--kubeconfig=" + o.kubeconfig, "--cluster-name=" + cluster, "--config-name=", "--source=ingress",
		"--namespace=" + namespace, "--grace-period=" + grace.String(), "--router-hosts-endpoint=" + c.endpoint,
		"--tls-ca=" + c.ca, "--tls-cert=" + c.cert, "--tls-key=" + c.key, "--request-timeout=60s",
		"--metrics-address=", "--kube-api-qps=1000", "--kube-api-burst=1000"}
	if !o.compact {
		args = append(args, "--no-compact-own-entries")
	}
	cfg, err := operator.ParseFlags(args, operator.Build{Version: "year"})
	if err != nil {
		return fmt.Errorf("the operator's flags: %w", err)
	}
	ctx, o.cancel = context.WithCancel(ctx)
	o.op, err = operator.New(ctx, cfg, o.log, io.Discard, operator.Hooks{Clock: o.clock})
	if err != nil {
		o.cancel()
		return fmt.Errorf("starting the operator: %w", err)
	}
	return nil
}

func (o *running) stop() {
	if o.op != nil {
		o.op.Close()
		o.cancel()
		o.op = nil
	}
}

// names is what the operator's sources read: hostname → address.
func (o *running) names(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range o.op.Sources {
		eps, err := s.Endpoints(ctx)
		if err != nil {
			return nil, err
		}
		for _, e := range eps {
			out[e.Hostname] = strings.Join(e.Targets, ",")
		}
	}
	return out, nil
}

// sync waits for the operator's caches to hold the cluster's objects and runs one sync, timed
// into d.
func (o *running) sync(ctx context.Context, cl *cluster, d *durations) error {
	if err := settle(ctx, o, cl.names()); err != nil {
		return err
	}
	began := time.Now()
	rep, err := o.op.Controller.SyncOnce(ctx)
	if err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if rep == nil || rep.Err != nil {
		return fmt.Errorf("sync failed: %v", rep.Err)
	}
	d.add(time.Since(began))
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// dirOf names the run's directory for its router.
func dirOf(base string, compact bool) string {
	return filepath.Join(base, "compaction-"+onOff(compact))
}
