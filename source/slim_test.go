package source

import (
	"reflect"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// fullIngress is an Ingress as clusters hold them: other controllers' annotations, labels,
// paths, TLS, managed fields.
func fullIngress() *networkingv1.Ingress {
	class := "traefik"
	prefix := networkingv1.PathTypePrefix
	i := ing("web", on(AnnotationIPAddress, "10.0.0.1", AnnotationAliases, "www.lan", AnnotationTags, "a,b", AnnotationGracePeriod, "60"), []string{"192.168.1.5"}, "web.lan", "api.lan")
	i.Labels = map[string]string{"app": "web"}
	i.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = `{"big":"json"}`
	i.Annotations["traefik.ingress.kubernetes.io/router.middlewares"] = "auth@kubernetescrd"
	i.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	i.Finalizers = []string{"x"}
	i.ResourceVersion, i.Generation = "42", 3
	i.CreationTimestamp = metav1.Unix(1_700_000_000, 0)
	i.Spec.IngressClassName = &class
	i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"web.lan"}, SecretName: "tls"}}
	i.Spec.Rules[0].HTTP = &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix,
		Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}
	return i
}

// TestSlimIngressKeepsWhatTheSourceReads: endpoints and the claim's identity are the same from
// the cut object as from the whole one, and what the source never reads is gone.
func TestSlimIngressKeepsWhatTheSourceReads(t *testing.T) {
	full := fullIngress()
	got, err := slimIngress(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	slim := got.(*networkingv1.Ingress)
	s := ingressSource(t, []string{"ingress-status"})
	wantEps, wantRef, wantProblems := endpointsOf(s, full)
	gotEps, gotRef, gotProblems := endpointsOf(s, slim)
	if !reflect.DeepEqual(gotEps, wantEps) || gotRef != wantRef || !reflect.DeepEqual(gotProblems, wantProblems) {
		t.Fatalf("cut object gives %v %v %v, whole one %v %v %v", hostTargets(gotEps), gotRef, gotProblems, hostTargets(wantEps), wantRef, wantProblems)
	}
	if slim.ResourceVersion != "42" || slim.Generation != 3 {
		t.Errorf("version lost: %+v", slim.ObjectMeta)
	}
	// The class decides opt-in under --ingress-class.
	if ingressClass(slim) != "traefik" {
		t.Errorf("class lost: %+v", slim.Spec)
	}
	if slim.Labels != nil || slim.ManagedFields != nil || slim.Finalizers != nil || slim.Spec.TLS != nil ||
		slim.Spec.Rules[0].HTTP != nil || len(slim.Annotations) != 5 {
		t.Errorf("cut object still holds what the operator never reads: %+v", slim)
	}
	again, _ := slimIngress(slim)
	if !reflect.DeepEqual(again, slim) {
		t.Error("slimIngress is not idempotent")
	}
}

// endpointsOf is what s makes of one object: its endpoints, reference and problems.
func endpointsOf(s *Source, o metav1.Object) ([]*endpoint.Endpoint, endpoint.SourceRef, []Problem) {
	c := s.kind.claim(o)
	eps, problems := buildEndpoints(&c, s.cfg.Resolver)
	return eps, c.ref, problems
}

// hostsOf is the hostnames of endpointsOf's result.
func hostsOf(eps []*endpoint.Endpoint, _ endpoint.SourceRef, _ []Problem) []string {
	var out []string
	for _, e := range eps {
		out = append(out, e.Hostname)
	}
	return out
}

// TestSlimRouteKeepsMatches: a Traefik route keeps its match rules and nothing else of its spec.
func TestSlimRouteKeepsMatches(t *testing.T) {
	route := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "traefik.io/v1alpha1", "kind": "IngressRoute",
		"metadata": map[string]any{"name": "r", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
			"labels": map[string]any{"a": "b"}, "annotations": map[string]any{AnnotationEnabled: "true", "other": "x"}},
		"spec": map[string]any{"entryPoints": []any{"websecure"}, "tls": map[string]any{"certResolver": "le"},
			"routes": []any{map[string]any{"match": "Host(`a.lan`)", "services": []any{map[string]any{"name": "svc"}}}}},
	}}
	got, err := slimUnstructured(routeMatches)(route.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	slim := got.(*unstructured.Unstructured)
	want := map[string]any{"routes": []any{map[string]any{"match": "Host(`a.lan`)"}}}
	if !reflect.DeepEqual(slim.Object["spec"], want) {
		t.Errorf("spec = %v, want %v", slim.Object["spec"], want)
	}
	if slim.GetLabels() != nil || len(slim.GetAnnotations()) != 1 || slim.GetResourceVersion() != "7" || slim.GetUID() != ktypes.UID("u1") {
		t.Errorf("metadata = %v", slim.Object["metadata"])
	}
	ts := &Source{kind: newTraefikKind(), cfg: Config{Resolver: &Resolver{}}}
	if a, b := hostsOf(endpointsOf(ts, route)), hostsOf(endpointsOf(ts, slim)); !reflect.DeepEqual(a, b) || len(a) != 1 {
		t.Errorf("hosts from the cut route %v, from the whole one %v", b, a)
	}
	for _, spec := range []map[string]any{{}, {"routes": "not a list"}} {
		if out := routeMatches(spec); !reflect.DeepEqual(out, spec) {
			t.Errorf("routeMatches(%v) = %v", spec, out)
		}
	}
}

// TestSlimHostMappingIsTyped: a HostMapping is cached typed, with only the operator's
// annotations, and the transform applied twice gives the same object.
func TestSlimHostMappingIsTyped(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "router-hosts.fzymgc.house/v1alpha1", "kind": "HostMapping",
		"metadata": map[string]any{"name": "nas", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "generation": int64(2),
			"labels": map[string]any{"a": "b"}, "annotations": map[string]any{AnnotationGracePeriod: "30", "other": "x"},
			"managedFields": []any{map[string]any{"manager": "kubectl"}}},
		"spec":   map[string]any{"hostname": "nas.lan", "ipAddress": "10.0.0.5", "tags": []any{"t"}},
		"status": map[string]any{"synced": true, "routerHostsId": "01J"},
	}}
	got, err := slimHostMapping(u)
	if err != nil {
		t.Fatal(err)
	}
	hm, ok := got.(*v1alpha1.HostMapping)
	if !ok {
		t.Fatalf("cached as %T", got)
	}
	if hm.Name != "nas" || hm.ResourceVersion != "7" || hm.Generation != 2 || len(hm.Annotations) != 1 || hm.Labels != nil || hm.ManagedFields != nil ||
		hm.Spec.Hostname != "nas.lan" || !hm.Status.Synced || hm.Kind != HostMappingKind {
		t.Fatalf("cached %+v", hm)
	}
	again, _ := slimHostMapping(hm.DeepCopyObject())
	if !reflect.DeepEqual(again, hm) {
		t.Error("slimHostMapping is not idempotent")
	}
	s := &Source{kind: newHostMappingKind(), cfg: Config{Resolver: &Resolver{}}}
	eps, ref, problems := endpointsOf(s, hm)
	if len(eps) != 1 || eps[0].Hostname != "nas.lan" || eps[0].GracePeriod == nil || ref.Kind != HostMappingKind || ref.Group != HostMappingGVR.Group || len(problems) != 0 {
		t.Fatalf("endpoints %v ref %+v problems %v", hostTargets(eps), ref, problems)
	}
}
