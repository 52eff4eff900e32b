package source

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serviceKind reads Services annotated enabled with their names in the hostname annotation
// (one or more, comma-separated: the upstream operator's annotation, so its manifests work).
// A Service is addressed by its own addresses only: the ip-address annotation, else for a
// LoadBalancer every IP of its load-balancer status, else its externalIPs. The cache holds an
// unannotated Service as its identity alone, since most Services of a cluster are not ours.
type serviceKind struct{ typedKind }

func (k *serviceKind) start(ctx context.Context, c Clients, cfg Config, changed func(old, cur metav1.Object)) error {
	svcs := c.Services(cfg.Namespace)
	return startTyped(ctx, &k.typedKind, c, cfg, "Service", svcs.List, svcs.Watch, &corev1.Service{}, slimAnnotatedService, changed)
}

func (k *serviceKind) rules() []Rule { return []Rule{read("", "services")} }

func (k *serviceKind) optedIn(o metav1.Object) bool { return enabled(o) }

func (k *serviceKind) claim(o metav1.Object) claim {
	svc := o.(*corev1.Service)
	hosts := splitList(svc.Annotations[AnnotationHostname])
	own := Reported{Final: true} // no chain step: a Service's own addresses or none
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, in := range svc.Status.LoadBalancer.Ingress {
			own.addPoint(in.IP, in.Hostname)
		}
	}
	var problems []Problem
	for _, n := range own.ipsFirst() {
		problems = append(problems, invalidAnnotation("load-balancer address %q skipped: the load balancer reports IP addresses, which are used", n))
	}
	if len(own.IPs) == 0 && len(own.Names) == 0 {
		own.IPs = svc.Spec.ExternalIPs
	}
	own.Missing = "no address: the Service has no load-balancer IP and no externalIPs; set the " + AnnotationIPAddress + " annotation"
	c := annotatedClaim(refOf("", "v1", "Service", svc), svc, hosts, own, problems)
	c.noHosts = "annotation " + AnnotationHostname + " is missing or empty: a Service has no hostname of its own"
	return c
}

// slimAnnotatedService keeps what the service source reads of an opted-in Service (its type,
// external IPs and load-balancer status, hostname-only points included so they can be
// reported) and of any other Service its identity and version alone.
func slimAnnotatedService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	out := &corev1.Service{ObjectMeta: slimMeta(svc.ObjectMeta)}
	if !enabled(svc) && svc.Annotations[AnnotationExternalDNSHostname] == "" {
		out.Annotations = nil
		return out, nil
	}
	out.Spec.Type = svc.Spec.Type
	out.Spec.ExternalIPs = svc.Spec.ExternalIPs
	for _, lb := range svc.Status.LoadBalancer.Ingress {
		out.Status.LoadBalancer.Ingress = append(out.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: lb.IP, Hostname: lb.Hostname})
	}
	return out, nil
}
