package source

import (
	"context"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ingressKind reads networking.k8s.io/v1 Ingresses: the hosts of their rules, addressed by
// their load-balancer status (ingress-status) or the rest of the chain.
type ingressKind struct {
	typedKind
	// optIn names the ingress classes managed whole (--ingress-class).
	optIn *liveOptIn
}

func (k *ingressKind) start(ctx context.Context, c Clients, cfg Config, changed func(old, cur metav1.Object)) error {
	k.optIn = cfg.optIn
	ings := c.Ingresses(cfg.Namespace)
	return startTyped(ctx, &k.typedKind, c, cfg, "Ingress", ings.List, ings.Watch, &networkingv1.Ingress{}, slimIngress, changed)
}

func (k *ingressKind) rules() []Rule { return []Rule{read("networking.k8s.io", "ingresses")} }

// optedIn: annotated, or of a class managed whole and not opted out.
func (k *ingressKind) optedIn(o metav1.Object) bool {
	if enabled(o) {
		return true
	}
	classes := k.optIn.load().classes
	return len(classes) > 0 && !optedOut(o) && classes[ingressClass(o.(*networkingv1.Ingress))]
}

// ingressClass is spec.ingressClassName, else the legacy kubernetes.io/ingress.class annotation.
func ingressClass(ing *networkingv1.Ingress) string {
	if ing.Spec.IngressClassName != nil {
		return *ing.Spec.IngressClassName
	}
	return ing.Annotations[legacyIngressClass]
}

// legacyIngressClass is the annotation that named an Ingress's class before spec.ingressClassName.
const legacyIngressClass = "kubernetes.io/ingress.class"

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
	own := Reported{From: StrategyIngressStatus}
	for _, in := range ing.Status.LoadBalancer.Ingress {
		own.addPoint(in.IP, in.Hostname)
	}
	own.ipsFirst()
	return annotatedClaim(refOf("networking.k8s.io", "v1", "Ingress", ing), ing, hosts, own, problems)
}
