package soak

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// clusterLabel tells the installations' objects apart: each operator reads only its own
// (--label-filter), as if it ran in a cluster of its own (n does: it has its own apiserver).
const clusterLabel = "soak.router-hosts.fzymgc.house/cluster"

var (
	ingressGVR      = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	serviceGVR      = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	hostMappingGVR  = source.HostMappingGVR
	httpRouteGVR    = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	gatewayGVR      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	ingressRouteGVR = schema.GroupVersionResource{Group: "traefik.io", Version: "v1alpha1", Resource: "ingressroutes"}
)

func gvrOf(k Kind) schema.GroupVersionResource {
	switch k {
	case KindIngress:
		return ingressGVR
	case KindService:
		return serviceGVR
	case KindHostMapping:
		return hostMappingGVR
	case KindHTTPRoute:
		return httpRouteGVR
	}
	return ingressRouteGVR
}

// kube writes the soak's objects through a dynamic client, as kubectl would.
type kube struct {
	// dyn is each installation's client, to its own apiserver.
	dyn map[string]dynamic.Interface
	// gatewayNS is each cluster's Gateways' namespace.
	gatewayNS map[string]string
}

// manifest is o as the apiserver is sent it (without a status).
func (k *kube) manifest(o *Object) *unstructured.Unstructured {
	gvr := gvrOf(o.Kind)
	ann := map[string]string{source.AnnotationEnabled: "true"}
	if len(o.Aliases) > 0 && o.Kind != KindHostMapping {
		ann[source.AnnotationAliases] = strings.Join(o.Aliases, ",")
	}
	if len(o.Tags) > 0 && o.Kind != KindHostMapping {
		ann[source.AnnotationTags] = strings.Join(o.Tags, ",")
	}
	if o.Shared && o.Kind != KindHostMapping {
		ann[source.AnnotationShared] = "true"
	}
	if o.Grace > 0 {
		ann[source.AnnotationGracePeriod] = strconv.Itoa(o.Grace)
	}
	if o.addressing == byAnnotation {
		ann[source.AnnotationIPAddress] = strings.Join(o.IPs, ",")
	}
	var spec map[string]any
	switch o.Kind {
	case KindIngress:
		var rules []any
		for _, h := range o.Hosts {
			rules = append(rules, map[string]any{"host": h})
		}
		spec = map[string]any{"rules": rules}
	case KindService:
		ann[source.AnnotationHostname] = strings.Join(o.Hosts, ",")
		spec = map[string]any{"type": "LoadBalancer", "ports": []any{map[string]any{"port": int64(80), "protocol": "TCP"}}}
	case KindHostMapping:
		spec = map[string]any{"hostname": o.Hosts[0], "ipAddress": o.IPs[0]}
		if len(o.Aliases) > 0 {
			spec["aliases"] = strs(o.Aliases)
		}
		if len(o.Tags) > 0 {
			spec["tags"] = strs(o.Tags)
		}
		if o.Shared {
			spec["shared"] = true
		}
	case KindHTTPRoute:
		spec = map[string]any{"hostnames": strs(o.Hosts), "parentRefs": []any{k.parentRef(o)}}
	case KindIngressRoute:
		var match []string
		for _, h := range o.Hosts {
			match = append(match, "Host(`"+h+"`)")
		}
		spec = map[string]any{"entryPoints": []any{"web"}, "routes": []any{map[string]any{"match": strings.Join(match, " || "), "kind": "Rule",
			"services": []any{map[string]any{"name": "web", "port": int64(80)}}}}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": string(o.Kind), "spec": spec}}
	u.SetNamespace(o.Namespace)
	u.SetName(o.Name)
	u.SetLabels(map[string]string{clusterLabel: o.Cluster})
	u.SetAnnotations(ann)
	return u
}

func (k *kube) parentRef(o *Object) map[string]any {
	return map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": o.Gateway, "namespace": k.gatewayNS[o.Cluster]}
}

// status is the status a controller writes for o: its load-balancer addresses, or a route's
// acceptance by its Gateway; nil when o has none to write.
func (k *kube) status(o *Object) map[string]any {
	switch {
	case o.Kind == KindHTTPRoute:
		return map[string]any{"parents": []any{map[string]any{"parentRef": k.parentRef(o), "controllerName": "soak.example/gateway",
			"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}}}
	case o.addressing == byStatus:
		lb := []any{}
		for _, ip := range o.IPs {
			lb = append(lb, map[string]any{"ip": ip})
		}
		return map[string]any{"loadBalancer": map[string]any{"ingress": lb}}
	}
	return nil
}

func strs(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

// create creates o and writes its status; it returns the object's UID and creation time.
func (k *kube) create(ctx context.Context, o *Object) (string, time.Time, error) {
	res := k.dyn[o.Cluster].Resource(gvrOf(o.Kind)).Namespace(o.Namespace)
	got, err := res.Create(ctx, k.manifest(o), metav1.CreateOptions{})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("creating %s: %w", o, err)
	}
	return string(got.GetUID()), got.GetCreationTimestamp().Time, nil
}

// writeStatus writes o's status as its controller would.
func (k *kube) writeStatus(ctx context.Context, o *Object) error {
	st := k.status(o)
	if st == nil {
		return nil
	}
	return k.modify(ctx, o.Cluster, gvrOf(o.Kind), o.Namespace, o.Name, true, func(u *unstructured.Unstructured) { u.Object["status"] = st })
}

// apply writes o's spec, labels and annotations over the stored object.
func (k *kube) apply(ctx context.Context, o *Object) error {
	want := k.manifest(o)
	return k.modify(ctx, o.Cluster, gvrOf(o.Kind), o.Namespace, o.Name, false, func(u *unstructured.Unstructured) {
		u.Object["spec"] = want.Object["spec"]
		u.SetAnnotations(want.GetAnnotations())
		u.SetLabels(want.GetLabels())
	})
}

// modify reads, changes and writes back one object (its status when status is set), again
// on a conflict.
func (k *kube) modify(ctx context.Context, inst string, gvr schema.GroupVersionResource, ns, name string, status bool, change func(*unstructured.Unstructured)) error {
	res := k.dyn[inst].Resource(gvr).Namespace(ns)
	for attempt := 0; ; attempt++ {
		cur, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading %s %s/%s: %w", gvr.Resource, ns, name, err)
		}
		change(cur)
		if status {
			_, err = res.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		} else {
			_, err = res.Update(ctx, cur, metav1.UpdateOptions{})
		}
		if apierrors.IsConflict(err) && attempt < 5 {
			continue
		}
		if err != nil {
			return fmt.Errorf("writing %s %s/%s: %w", gvr.Resource, ns, name, err)
		}
		return nil
	}
}

// delete deletes o and waits until the apiserver no longer has it, so that a recreation
// under the same name is a new object.
func (k *kube) delete(ctx context.Context, o *Object) error {
	res := k.dyn[o.Cluster].Resource(gvrOf(o.Kind)).Namespace(o.Namespace)
	if err := res.Delete(ctx, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", o, err)
	}
	for {
		if _, err := res.Get(ctx, o.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to go: %w", o, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// createGateway creates a Gateway that takes HTTPRoutes from every namespace, with addresses.
func (k *kube) createGateway(ctx context.Context, gw *Gateway) error {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"spec": map[string]any{"gatewayClassName": "soak", "listeners": []any{map[string]any{"name": "web", "protocol": "HTTP", "port": int64(80),
			"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}}}}}
	u.SetNamespace(gw.Namespace)
	u.SetName(gw.Name)
	u.SetLabels(map[string]string{clusterLabel: gw.Cluster})
	if _, err := k.dyn[gw.Cluster].Resource(gatewayGVR).Namespace(gw.Namespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Gateway %s/%s: %w", gw.Namespace, gw.Name, err)
	}
	return k.writeGatewayStatus(ctx, gw)
}

// writeGatewayStatus writes a Gateway's addresses as its controller would.
func (k *kube) writeGatewayStatus(ctx context.Context, gw *Gateway) error {
	addrs := []any{}
	for _, ip := range gw.IPs {
		addrs = append(addrs, map[string]any{"type": "IPAddress", "value": ip})
	}
	return k.modify(ctx, gw.Cluster, gatewayGVR, gw.Namespace, gw.Name, true, func(u *unstructured.Unstructured) {
		u.Object["status"] = map[string]any{"addresses": addrs}
	})
}
