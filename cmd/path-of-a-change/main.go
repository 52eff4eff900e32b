// Command path-of-a-change makes one change travel from the informer to the router, as the
// operator does it: 20 annotated Ingresses on a fake clientset, the ingress source, the loop,
// the planner, the registry and the provider on an in-memory router-hosts server. Then one
// Ingress gets a new address, and the command waits until the router has it. Built with
// coverage (hack/path-of-a-change.sh), it keeps the counters of that one change's journey
// alone in $GOCOVERDIR, from which the script lists the files the change crossed.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/coverage"
	"time"

	"github.com/sirupsen/logrus"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

func main() {
	if err := run(context.Background(), os.Getenv("GOCOVERDIR") != ""); err != nil {
		fmt.Fprintln(os.Stderr, "path-of-a-change:", err)
		os.Exit(1)
	}
}

// run makes the change; measured: the binary is built with coverage, whose counters are
// cleared before the change and written once the router has it.
func run(ctx context.Context, measured bool) error {
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
	clients := source.Clients{Ingresses: cs.NetworkingV1(), Services: cs.CoreV1(), WatchListUnsupported: true}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	strategies, err := source.ParseIPResolution([]string{"ingress-status"})
	if err != nil {
		return err
	}
	resolver, err := source.NewResolver(ctx, clients, strategies)
	if err != nil {
		return fmt.Errorf("resolver: %w", err)
	}
	src, err := source.Build(ctx, "ingress", clients, source.Config{Resolver: resolver, Log: log})
	if err != nil {
		return fmt.Errorf("ingress source: %w", err)
	}
	reg, err := registry.New(registry.Config{ClusterName: "home", GracePeriod: time.Minute, Log: log})
	if err != nil {
		return err
	}
	conn, stop, err := inmemory.Dial(inmemory.NewService(inmemory.NewStore()))
	if err != nil {
		return fmt.Errorf("in-memory router: %w", err)
	}
	defer stop()
	prov := routerhosts.NewFromConn(conn, routerhosts.Options{Log: log, WriteConcurrency: 4})
	c := controller.New(controller.Config{Sources: []controller.EndpointSource{src}, Registry: reg, Provider: prov, Interval: time.Hour, Log: log})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	if _, err := waitFor(ctx, prov, "the first sync", func(m map[string]string) bool { return len(m) == 20 }); err != nil {
		return err
	}
	if measured {
		if err := coverage.ClearCounters(); err != nil {
			return fmt.Errorf("clearing the coverage counters: %w", err)
		}
	}
	ing, err := cs.NetworkingV1().Ingresses("apps").Get(ctx, "app-07", metav1.GetOptions{})
	if err != nil {
		return err
	}
	// The fake clientset moves no resourceVersion, which the source's memo keys on.
	ing.Status.LoadBalancer.Ingress[0].IP, ing.ResourceVersion = "10.0.9.9", "2"
	if _, err := cs.NetworkingV1().Ingresses("apps").UpdateStatus(ctx, ing, metav1.UpdateOptions{}); err != nil {
		return err
	}
	after, err := waitFor(ctx, prov, "the change", func(m map[string]string) bool { return m["app-07.home.lan"] == "10.0.9.9" })
	if err != nil {
		return err
	}
	if measured {
		if err := coverage.WriteCountersDir(os.Getenv("GOCOVERDIR")); err != nil {
			return fmt.Errorf("writing the coverage counters: %w", err)
		}
	}
	for i := range 20 {
		if h, ip := fmt.Sprintf("app-%02d.home.lan", i), fmt.Sprintf("10.0.0.%d", i+1); i != 7 && after[h] != ip {
			return fmt.Errorf("%s: %s became %s", h, ip, after[h])
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the loop ended with %w", err)
	}
	return nil
}

// waitFor polls the router's entries, hostname to address, until ok holds of them.
func waitFor(ctx context.Context, prov *routerhosts.Provider, what string, ok func(map[string]string) bool) (map[string]string, error) {
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		recs, err := prov.Records(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		got := map[string]string{}
		for _, r := range recs {
			got[r.Hostname] = r.IP
		}
		if ok(got) {
			return got, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: the router has %v", what, got)
		}
	}
}
