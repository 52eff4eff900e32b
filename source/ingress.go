package source

import (
	"context"
	"fmt"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	netlisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
)

// ingressKind reads networking.k8s.io/v1 Ingresses: the hosts of their rules, addressed by
// their load-balancer status (ingress-status) or the rest of the chain.
type ingressKind struct {
	lister   netlisters.IngressLister
	isSynced cache.InformerSynced
}

func (k *ingressKind) start(ctx context.Context, c Clients, cfg Config, changed func(old, cur metav1.Object)) error {
	ings := c.Ingresses.Ingresses(cfg.Namespace)
	inf, err := newInformer(c, ings.List, ings.Watch, &networkingv1.Ingress{},
		func(o *metav1.ListOptions) { o.LabelSelector = cfg.LabelSelector }, slimIngress)
	if err != nil {
		return fmt.Errorf("the Ingress informer: %w", err)
	}
	k.lister = netlisters.NewIngressLister(inf.GetIndexer())
	if err := notify(inf, changed); err != nil {
		return fmt.Errorf("watching Ingresses: %w", err)
	}
	k.isSynced = inf.HasSynced
	go inf.RunWithContext(ctx)
	// The first sync must see the whole cluster rather than an empty one.
	if !waitSynced(ctx, k.isSynced) {
		return fmt.Errorf("waiting for the Ingress cache: %w", context.Cause(ctx))
	}
	return nil
}

func (k *ingressKind) synced() bool { return k.isSynced() }

func (k *ingressKind) objects() ([]metav1.Object, error) {
	list, err := k.lister.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing Ingresses from the cache: %w", err)
	}
	out := make([]metav1.Object, len(list))
	for i, o := range list {
		out[i] = o
	}
	return out, nil
}

func (k *ingressKind) optedIn(o metav1.Object) bool { return enabled(o) }

func (k *ingressKind) claim(o metav1.Object) claim {
	ing := o.(*networkingv1.Ingress)
	var (
		hosts    []string
		problems []Problem
	)
	for _, rule := range ing.Spec.Rules {
		if rule.Host == "" {
			continue
		}
		if strings.Contains(rule.Host, "*") {
			problems = append(problems, invalidHostname("wildcard host %q skipped: router-hosts has no wildcard entries", rule.Host))
			continue
		}
		hosts = append(hosts, rule.Host)
	}
	own := Own{From: StrategyIngressStatus}
	for _, in := range ing.Status.LoadBalancer.Ingress {
		own.IPs = append(own.IPs, in.IP)
	}
	return annotatedClaim(refOf("networking.k8s.io", "v1", "Ingress", ing), ing, hosts, own, problems)
}
