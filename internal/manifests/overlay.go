package manifests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
)

// Key names one object: its API group (not version: the apiserver serves every version of a
// group's resource as the same object), kind, namespace and name.
type Key struct {
	Group, Kind, Namespace, Name string
}

func (k Key) String() string {
	kind := k.Kind
	if k.Group != "" {
		kind += "." + k.Group
	}
	if k.Namespace == "" {
		return kind + " " + k.Name
	}
	return kind + " " + k.Namespace + "/" + k.Name
}

// clusterScoped are the kinds that live outside namespaces: the two the operator reads, and the
// ones a GitOps repository carries most, so that they are named without one. Every other kind
// the operator reads is namespaced, so a manifest of one without a namespace lands where kubectl
// puts it; a kind it does not read is only named.
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}: true, {Group: v1alpha1.GroupVersion.Group, Kind: "RouterHostsConfig"}: true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: true, {Kind: "PersistentVolume"}: true, {Kind: "Node"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}: true, {Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}: true, {Group: "networking.k8s.io", Kind: "IngressClass"}: true,
	{Group: "gateway.networking.k8s.io", Kind: "GatewayClass"}: true, {Group: "scheduling.k8s.io", Kind: "PriorityClass"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   true, {Group: "apiregistration.k8s.io", Kind: "APIService"}: true,
}

// KeyOf is u's key; a namespaced object without a namespace is in "default", as kubectl
// applies it from a kubeconfig without a namespace.
func KeyOf(u *unstructured.Unstructured) Key {
	gvk := u.GroupVersionKind()
	ns := u.GetNamespace()
	if ns == "" && !clusterScoped[gvk.GroupKind()] {
		ns = metav1.NamespaceDefault
	}
	return Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: ns, Name: u.GetName()}
}

// servedAs reports whether kind gk is served as resource gr: its lowercase plural, as every
// kind the operator reads is named (Gateway: gateways, Ingress: ingresses, IngressRoute:
// ingressroutes; client-go's guess would make Gateway "gatewaies").
func servedAs(gk schema.GroupKind, gr schema.GroupResource) bool {
	if gk.Group != gr.Group {
		return false
	}
	lower := strings.ToLower(gk.Kind)
	guess, _ := meta.UnsafeGuessKindToResource(gk.WithVersion(""))
	return gr.Resource == lower+"s" || gr.Resource == lower+"es" || gr.Resource == guess.Resource
}

// Change is what the manifests do to one object.
type Change string

// The changes: an object the manifests add, one they replace (Changed whether or not the
// manifest differs from it), and a live object --prune deletes.
const (
	Added    Change = "added"
	Replaced Change = "replaced"
	Pruned   Change = "pruned"
)

// Touched is one object the manifests touch, as the sources were shown it.
type Touched struct {
	Key    Key
	UID    string
	Change Change
	Origin string
	// StatusUnknown: the object's status is not known: the manifest has none and no live object
	// lends it one (a new Service of type LoadBalancer: its address is the load balancer's).
	StatusUnknown bool
}

// Lister reads the live objects of one resource, in every namespace; nil offline.
type Lister func(ctx context.Context, gvr schema.GroupVersionResource) ([]unstructured.Unstructured, error)

// Overlay is the cluster as the plan shows it to the sources: the live objects (Lister) with
// the manifests laid over them.
type Overlay struct {
	live   Lister
	byKind map[schema.GroupKind][]Object
	prune  labels.Selector
	now    time.Time
	mu     sync.Mutex
	read   map[schema.GroupResource][]unstructured.Unstructured
	errs   map[schema.GroupResource]error
	asked  map[schema.GroupKind]bool
	result map[Key]Touched
	// known are the UIDs of objects that are not live but that the router's entries name, by
	// "Kind namespace/name" (registry.ObjectUIDs).
	known map[string]string
}

// Known gives the objects the manifests add without a live object the UIDs the router's entries
// record for them (offline, where nothing is live): such an object is the one that wrote its
// entries, older than any the manifests add, and its change is Replaced.
func (o *Overlay) Known(uids map[string]string) { o.known = uids }

// refName is k as an entry's comment names its object.
func (k Key) refName() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// NewOverlay lays objs over what live lists (nil: objs are the whole cluster). prune, when not
// nil, deletes the live objects it selects that objs lack. now is the creation time of the
// objects the manifests add, so that every older claim keeps its name.
func NewOverlay(live Lister, objs []Object, prune labels.Selector, now time.Time) *Overlay {
	o := &Overlay{live: live, byKind: map[schema.GroupKind][]Object{}, prune: prune, now: now,
		read: map[schema.GroupResource][]unstructured.Unstructured{}, errs: map[schema.GroupResource]error{},
		asked: map[schema.GroupKind]bool{}, result: map[Key]Touched{}}
	for _, obj := range objs {
		gk := obj.GroupVersionKind().GroupKind()
		o.byKind[gk] = append(o.byKind[gk], obj)
	}
	return o
}

// objects is the overlaid cluster's objects of gvr, computed once per resource.
func (o *Overlay) objects(ctx context.Context, gvr schema.GroupVersionResource) ([]unstructured.Unstructured, error) {
	gr := gvr.GroupResource()
	o.mu.Lock()
	defer o.mu.Unlock()
	var given []Object
	for gk, objs := range o.byKind {
		if servedAs(gk, gr) {
			o.asked[gk] = true
			given = append(given, objs...)
		}
	}
	if got, ok := o.read[gr]; ok || o.errs[gr] != nil {
		return setVersion(got, gvr), o.errs[gr]
	}
	var live []unstructured.Unstructured
	if o.live != nil {
		var err error
		if live, err = o.live(ctx, gvr); err != nil && !apierrors.IsNotFound(err) {
			err = fmt.Errorf("listing the live %s: %w", gr, err)
			o.errs[gr] = err
			return nil, err
		}
	}
	byKey := map[Key]int{}
	for i := range live {
		byKey[KeyOf(&live[i])] = i
	}
	keys := map[Key]bool{}
	var out []unstructured.Unstructured
	for _, m := range given {
		k := KeyOf(m.Unstructured)
		keys[k] = true
		u := m.DeepCopy()
		u.SetNamespace(k.Namespace)
		t := Touched{Key: k, Change: Added, Origin: m.Origin}
		if i, ok := byKey[k]; ok {
			// The live object's identity and what the apiserver and controllers keep of it: an
			// apply changes the spec, metadata and labels, not the UID, and not the status.
			l := &live[i]
			u.SetUID(l.GetUID())
			u.SetCreationTimestamp(l.GetCreationTimestamp())
			u.SetResourceVersion(l.GetResourceVersion())
			if _, has := u.Object["status"]; !has {
				if st, ok := l.Object["status"]; ok {
					u.Object["status"] = st
				}
			}
			t.Change = Replaced
		} else {
			u.SetUID(syntheticUID(k))
			u.SetCreationTimestamp(metav1.NewTime(o.now))
			if uid, ok := o.known[k.refName()]; ok {
				u.SetUID(types.UID(uid))
				u.SetCreationTimestamp(metav1.NewTime(time.Unix(0, 0)))
				t.Change = Replaced
			}
			u.SetResourceVersion("1")
			_, has := u.Object["status"]
			t.StatusUnknown = !has
		}
		t.UID = string(u.GetUID())
		o.result[k] = t
		out = append(out, *u)
	}
	for i := range live {
		l := &live[i]
		k := KeyOf(l)
		if keys[k] {
			continue
		}
		if o.prune != nil && o.prune.Matches(labels.Set(l.GetLabels())) {
			o.result[k] = Touched{Key: k, UID: string(l.GetUID()), Change: Pruned}
			continue
		}
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b unstructured.Unstructured) int {
		if c := compareStrings(a.GetNamespace(), b.GetNamespace()); c != 0 {
			return c
		}
		return compareStrings(a.GetName(), b.GetName())
	})
	o.read[gr] = out
	return setVersion(out, gvr), nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// setVersion gives copies of objs the version the reader asked for: the fields the operator
// reads are the same in every served version of its kinds.
func setVersion(objs []unstructured.Unstructured, gvr schema.GroupVersionResource) []unstructured.Unstructured {
	out := make([]unstructured.Unstructured, len(objs))
	for i := range objs {
		out[i] = *objs[i].DeepCopy()
		gvk := out[i].GroupVersionKind()
		gvk.Version = gvr.Version
		out[i].SetGroupVersionKind(gvk)
	}
	return out
}

// syntheticUID is the UID of an object the manifests add: stable for the object, so that two
// plans of the same manifests agree, and marked as the plan's own.
func syntheticUID(k Key) types.UID {
	sum := sha256.Sum256([]byte(k.String()))
	h := hex.EncodeToString(sum[:16])
	return types.UID("plan0000-" + h[:4] + "-" + h[4:8] + "-" + h[8:12] + "-" + h[12:24])
}

// list is objects of gvr in namespace ns ("" for all) that opts select.
func (o *Overlay) list(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) ([]unstructured.Unstructured, error) {
	all, err := o.objects(ctx, gvr)
	if err != nil {
		return nil, err
	}
	sel := labels.Everything()
	if opts.LabelSelector != "" {
		if sel, err = labels.Parse(opts.LabelSelector); err != nil {
			return nil, fmt.Errorf("label selector %q: %w", opts.LabelSelector, err)
		}
	}
	fsel := fields.Everything()
	if opts.FieldSelector != "" {
		if fsel, err = fields.ParseSelector(opts.FieldSelector); err != nil {
			return nil, fmt.Errorf("field selector %q: %w", opts.FieldSelector, err)
		}
	}
	var out []unstructured.Unstructured
	for _, u := range all {
		if ns != "" && u.GetNamespace() != ns {
			continue
		}
		if !sel.Matches(labels.Set(u.GetLabels())) || !fsel.Matches(fields.Set{"metadata.name": u.GetName(), "metadata.namespace": u.GetNamespace()}) {
			continue
		}
		out = append(out, u)
	}
	return out, nil
}

// Touched is every object the manifests touch among the resources the sources read, by key;
// Unread the manifests' objects of resources nothing read. Call it after the plan's decision.
func (o *Overlay) Touched() map[Key]Touched {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.result)
}

// Unread are the manifests' objects of kinds nothing read: the operator's sources do not read
// them as configured.
func (o *Overlay) Unread() []Object {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Object
	for gk, objs := range o.byKind {
		if !o.asked[gk] {
			out = append(out, objs...)
		}
	}
	slices.SortFunc(out, func(a, b Object) int {
		return compareStrings(KeyOf(a.Unstructured).String(), KeyOf(b.Unstructured).String())
	})
	return out
}

// Find is the manifest object of gr, namespace and name, if the manifests hold one.
func (o *Overlay) Find(k Key) (Object, bool) {
	for _, m := range o.byKind[schema.GroupKind{Group: k.Group, Kind: k.Kind}] {
		if KeyOf(m.Unstructured) == k {
			return m, true
		}
	}
	return Object{}, false
}
