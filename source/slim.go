package source

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
)

// The informer transforms below decide what the caches hold: each object is cut down, before
// it is stored, to what a source reads. The caches are the operator's largest memory: a
// cluster's Ingresses carry paths, backends, TLS sections, labels and the annotations of every
// other controller, none of which the operator uses. The cut objects are never written back
// (HostMapping status goes to the status subresource, which takes only the status stanza).
// Each transform is idempotent, as client-go may apply it to an object twice.

// slimMeta keeps identity, version and age (claims are ordered by creation time), and only the
// annotations the operator reads.
func slimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, Annotations: ownAnnotations(m.Annotations),
	}
}

// ownAnnotations returns the router-hosts.fzymgc.house/ annotations and the two of
// external-dns's the operator can read, nil when there are none.
func ownAnnotations(all map[string]string) map[string]string {
	var out map[string]string
	for k, v := range all {
		if strings.HasPrefix(k, annotationPrefix) || k == AnnotationExternalDNSHostname || k == AnnotationExternalDNSTarget {
			if out == nil {
				out = make(map[string]string, 4)
			}
			out[k] = v
		}
	}
	return out
}

// slimIngress keeps the rules' hosts and the load-balancer status.
func slimIngress(obj any) (any, error) {
	ing, ok := obj.(*networkingv1.Ingress)
	if !ok {
		return obj, nil // a tombstone (cache.DeletedFinalStateUnknown) holds an object cut already
	}
	out := &networkingv1.Ingress{ObjectMeta: slimMeta(ing.ObjectMeta)}
	out.Spec.IngressClassName = ing.Spec.IngressClassName
	if cl, ok := ing.Annotations[legacyIngressClass]; ok {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[legacyIngressClass] = cl
	}
	if len(ing.Spec.Rules) > 0 {
		out.Spec.Rules = make([]networkingv1.IngressRule, len(ing.Spec.Rules))
		for i, r := range ing.Spec.Rules {
			out.Spec.Rules[i].Host = r.Host
		}
	}
	for _, lb := range ing.Status.LoadBalancer.Ingress {
		out.Status.LoadBalancer.Ingress = append(out.Status.LoadBalancer.Ingress, networkingv1.IngressLoadBalancerIngress{IP: lb.IP, Hostname: lb.Hostname})
	}
	return out, nil
}

// slimService keeps the addresses the ip-resolution chain reads.
func slimService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil
	}
	out := &corev1.Service{ObjectMeta: slimMeta(svc.ObjectMeta)}
	out.Spec.ExternalIPs = svc.Spec.ExternalIPs
	for _, lb := range svc.Status.LoadBalancer.Ingress {
		out.Status.LoadBalancer.Ingress = append(out.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: lb.IP})
	}
	return out, nil
}

// slimUnstructured returns the transform of a custom resource: metadata as slimMeta, status
// as it is, and spec through keepSpec.
func slimUnstructured(keepSpec func(spec map[string]any) map[string]any) cache.TransformFunc {
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind()}}
		out.SetName(u.GetName())
		out.SetNamespace(u.GetNamespace())
		out.SetUID(u.GetUID())
		out.SetResourceVersion(u.GetResourceVersion())
		out.SetGeneration(u.GetGeneration())
		out.SetCreationTimestamp(u.GetCreationTimestamp())
		if a := ownAnnotations(u.GetAnnotations()); a != nil {
			out.SetAnnotations(a)
		}
		if spec, ok := u.Object["spec"].(map[string]any); ok {
			out.Object["spec"] = keepSpec(spec)
		}
		if st, ok := u.Object["status"]; ok {
			out.Object["status"] = st
		}
		return out, nil
	}
}

// slimHostMapping turns a HostMapping into the typed form the operator reads (v1alpha1), with
// the metadata of slimMeta.
func slimHostMapping(obj any) (any, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		meta := metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID(), ResourceVersion: o.GetResourceVersion(),
			Generation: o.GetGeneration(), CreationTimestamp: o.GetCreationTimestamp(), Annotations: ownAnnotations(o.GetAnnotations())}
		return v1alpha1.FromUnstructured(o, meta), nil
	case *v1alpha1.HostMapping:
		o.ObjectMeta = slimMeta(o.ObjectMeta)
		return o, nil
	}
	return obj, nil
}

// routeMatches keeps only spec.routes[].match of a Traefik route: services, middlewares and TLS
// options are Traefik's business.
func routeMatches(spec map[string]any) map[string]any {
	raw, present := spec["routes"]
	if !present {
		return map[string]any{}
	}
	routes, ok := raw.([]any)
	if !ok {
		// Not a list: kept, so the source can report the malformed spec.
		return map[string]any{"routes": raw}
	}
	out := make([]any, len(routes))
	for i, r := range routes {
		m, _ := r.(map[string]any)
		out[i] = map[string]any{"match": m["match"]}
	}
	return map[string]any{"routes": out}
}
