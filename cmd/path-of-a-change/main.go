// Command path-of-a-change makes one change travel from the informer to the router, as the
// operator does it: 20 annotated Ingresses on a fake clientset, the ingress source, the loop,
// the planner, the registry and the provider on an in-memory router-hosts server. Then one
// Ingress gets a new address, and the command waits until the router has it. Built with
// coverage (hack/path-of-a-change.sh), it keeps the counters of that one change's journey
// alone, one directory of $GOCOVERDIR a phase: the event reaching the loop, the source's list,
// the decision (up to the provider's write), the write, and what follows it (the planner and
// the registry learning what was written). The script lists the files each phase crossed, by
// layer, so the walk shows each layer entered once, downward.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/coverage"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube/clientset"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

func main() {
	if _, err := run(context.Background(), os.Getenv("GOCOVERDIR") != ""); err != nil {
		fmt.Fprintln(os.Stderr, "path-of-a-change:", err)
		os.Exit(1)
	}
}

// run makes the change and returns its phases in the order they ended; measured: the binary is
// built with coverage, whose counters are cleared before the change and written as each phase
// ends.
func run(ctx context.Context, measured bool) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var objs []runtime.Object
	for i := range 20 {
		name := fmt.Sprintf("app-%02d", i)
		objs = append(objs, &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, UID: ktypes.UID("uid-" + name), Annotations: map[string]string{source.AnnotationEnabled: "true"}},
			Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: name + ".home.lan"}}},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
				Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: fmt.Sprintf("10.0.0.%d", i+1)}}}},
		})
	}
	cs := fake.NewClientset(objs...)
	clients := source.Clients{Ingresses: clientset.Ingresses(cs), Services: clientset.Services(cs), WatchListUnsupported: true}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	strategies, err := source.ParseIPResolution([]string{"ingress-status"})
	if err != nil {
		return nil, err
	}
	resolver, err := source.NewResolver(ctx, clients, strategies)
	if err != nil {
		return nil, fmt.Errorf("resolver: %w", err)
	}
	src, err := source.Build(ctx, "ingress", clients, source.Config{Resolver: resolver, Log: log})
	if err != nil {
		return nil, fmt.Errorf("ingress source: %w", err)
	}
	reg, err := registry.New(registry.Config{ClusterName: "home", GracePeriod: time.Minute, Log: log})
	if err != nil {
		return nil, err
	}
	store := inmemory.NewStore()
	conn, stop, err := inmemory.Dial(inmemory.NewService(store))
	if err != nil {
		return nil, fmt.Errorf("in-memory router: %w", err)
	}
	defer stop()
	prov := routerhosts.NewFromConn(conn, routerhosts.Options{Log: log, WriteConcurrency: 4})
	ph := &phases{dir: os.Getenv("GOCOVERDIR")}
	learnt := &reported{ph: ph, done: make(chan struct{})}
	c := controller.New(controller.Config{Sources: []controller.EndpointSource{&sourceCrossing{src, ph}}, Registry: reg,
		Provider: &providerCrossing{prov, ph}, Reporters: []controller.Reporter{learnt}, Interval: time.Hour, Log: log})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	if _, err := waitFor(ctx, store, "the first sync", func(m map[string]string) bool { return len(m) == 20 }); err != nil {
		return nil, err
	}
	if measured {
		if err := coverage.ClearCounters(); err != nil {
			return nil, fmt.Errorf("clearing the coverage counters: %w", err)
		}
	}
	ph.on.Store(true)
	ing, err := cs.NetworkingV1().Ingresses("apps").Get(ctx, "app-07", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	// The fake clientset moves no resourceVersion, which the source's memo keys on.
	ing.Status.LoadBalancer.Ingress[0].IP, ing.ResourceVersion = "10.0.9.9", "2"
	if _, err := cs.NetworkingV1().Ingresses("apps").UpdateStatus(ctx, ing, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	after, err := waitFor(ctx, store, "the change", func(m map[string]string) bool { return m["app-07.home.lan"] == "10.0.9.9" })
	if err != nil {
		return nil, err
	}
	select {
	case <-learnt.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if ph.err != nil {
		return nil, ph.err
	}
	for i := range 20 {
		if h, ip := fmt.Sprintf("app-%02d.home.lan", i), fmt.Sprintf("10.0.0.%d", i+1); i != 7 && after[h] != ip {
			return nil, fmt.Errorf("%s: %s became %s", h, ip, after[h])
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("the loop ended with %w", err)
	}
	return ph.seen, nil
}

// waitFor polls the in-memory router's entries, hostname to address, until ok holds of them:
// the router's own store, so that the polling crosses none of the operator's code.
func waitFor(ctx context.Context, store *inmemory.Store, what string, ok func(map[string]string) bool) (map[string]string, error) {
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		got := map[string]string{}
		for _, e := range store.Live() {
			got[e.GetHostname()] = e.GetIpAddress()
		}
		if ok(got) {
			return got, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: the router has %v", what, got)
		}
	}
}

// phases notes each phase as it ends once on is set, and with a dir (the binary is built with
// coverage) writes the counters run since the last phase ended into a directory of its own,
// named for what ran. Only the loop's goroutine ends a phase.
type phases struct {
	dir  string
	on   atomic.Bool
	seen []string
	err  error
}

func (p *phases) end(name string) {
	if !p.on.Load() || p.err != nil {
		return
	}
	p.seen = append(p.seen, name)
	if p.dir == "" {
		return
	}
	d := filepath.Join(p.dir, name)
	switch {
	case os.MkdirAll(d, 0o755) != nil:
		p.err = fmt.Errorf("making %s", d)
	case coverage.WriteMetaDir(d) != nil, coverage.WriteCountersDir(d) != nil:
		p.err = fmt.Errorf("writing the coverage of %s", name)
	case coverage.ClearCounters() != nil:
		p.err = fmt.Errorf("clearing the coverage counters after %s", name)
	}
}

// sourceCrossing ends a phase as the loop calls the source and as the source returns.
type sourceCrossing struct {
	controller.EndpointSource
	ph *phases
}

func (s *sourceCrossing) Endpoints(ctx context.Context) ([]*endpoint.Endpoint, error) {
	s.ph.end("1-the-event-reaches-the-loop")
	eps, err := s.EndpointSource.Endpoints(ctx)
	s.ph.end("2-the-source-lists")
	return eps, err
}

// reported ends the last phase when the loop reports the sync that wrote the change: what ran
// after the write, the planner and the registry learning what was written.
type reported struct {
	ph   *phases
	done chan struct{}
	once sync.Once
}

func (r *reported) Report(context.Context, *controller.Report) {
	if r.ph.on.Load() {
		r.once.Do(func() {
			r.ph.end("5-after-the-write")
			close(r.done)
		})
	}
}

// providerCrossing ends a phase as the loop hands the provider the writes and as it returns.
type providerCrossing struct {
	controller.Provider
	ph *phases
}

func (p *providerCrossing) ApplyChanges(ctx context.Context, changes []plan.Change) []plan.Result {
	p.ph.end("3-the-decision")
	out := p.Provider.ApplyChanges(ctx, changes)
	p.ph.end("4-the-write")
	return out
}
