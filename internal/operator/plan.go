package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/explain"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube"
	"github.com/router-hosts-operator/router-hosts-operator/internal/manifests"
	"github.com/router-hosts-operator/router-hosts-operator/preview"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// PlanFlags are the plan command's own flags.
type PlanFlags struct {
	// Files are -f: files, folders, or - for stdin.
	Files []string
	// Prune and Selector are --prune -l: the live objects Selector selects that the manifests
	// lack are planned as deleted.
	Prune    bool
	Selector string
	// Offline: no cluster is read; the manifests are the whole cluster.
	Offline bool
	// RouterSnapshot is a file of `list -o json` to read the router's entries from.
	RouterSnapshot string
}

// PlanExitError is the plan's answer when it is not "no change": exit 1 for changes that all go
// through, 3 when one is refused or held. Nothing failed, so it is not logged as an error.
type PlanExitError struct{ Code int }

func (e *PlanExitError) Error() string {
	if e.Code == 3 {
		return "the plan has refusals or holds"
	}
	return "the plan has changes"
}

// planFlags checks plan's flags.
func (cfg *Config) planFlags() error {
	cfg.DryRun, cfg.Once, cfg.LeaderElect, cfg.MetricsAddress = true, true, false, ""
	p := cfg.Plan
	switch {
	case len(p.Files) == 0:
		return errors.New("plan: give the manifests with -f (a file, a folder, or - for stdin)")
	case p.Prune && p.Selector == "":
		return errors.New("plan: --prune needs -l SELECTOR, as kubectl apply --prune does: without one every live object the manifests lack would be planned as deleted")
	case !p.Prune && p.Selector != "":
		return errors.New("plan: -l selects what --prune deletes; give --prune too")
	case p.Prune && p.Offline:
		return errors.New("plan: --prune compares the manifests with the live objects; --offline reads none")
	}
	if p.Selector != "" {
		if _, err := labels.Parse(p.Selector); err != nil {
			return fmt.Errorf("-l: %w", err)
		}
	}
	return nil
}

// Plan runs the plan command: the registry's decision on the cluster as it is and as the
// manifests would make it, both from one read of the router, and what differs, printed to out.
// It writes nothing anywhere.
func Plan(ctx context.Context, cfg *Config, log *logrus.Logger, out io.Writer, stdin io.Reader) error {
	objs, err := manifests.Load(cfg.Plan.Files, stdin)
	if err != nil {
		return err
	}
	var prune labels.Selector
	if cfg.Plan.Prune {
		prune, _ = labels.Parse(cfg.Plan.Selector) // checked by planFlags
	}
	now := time.Now()
	var notes []string
	var records []endpoint.Record
	if cfg.Plan.RouterSnapshot != "" {
		if records, err = readSnapshot(cfg.Plan.RouterSnapshot); err != nil {
			return err
		}
		notes = append(notes, "the router's entries are read from "+cfg.Plan.RouterSnapshot)
	}

	// The cluster: live objects under the manifests, or the manifests alone.
	var base *kubeClients
	var live manifests.Lister
	if !cfg.Plan.Offline {
		if cfg, base, err = readOnlyCluster(ctx, cfg, log); err != nil {
			return err
		}
		live = manifests.Lists(base.sources.Dynamic)
	} else if cfg.ClusterID == "" && records != nil {
		id, err := identityIn(records, cfg.ClusterName)
		if err != nil {
			return err
		}
		cfg.ClusterID = id
		notes = append(notes, "offline: the cluster's identity "+id+" is the one the snapshot's entries of cluster "+cfg.ClusterName+" carry")
	}

	// The cluster as it is: its decision, and the router's entries it read.
	var before *explain.Input
	if !cfg.Plan.Offline {
		bcfg := *cfg
		hooks := Hooks{kube: overlaid(base, manifests.NewOverlay(live, nil, nil, now), cfg, records != nil)}
		if records != nil {
			bcfg.Provider = "inmemory"
			if hooks.store, err = storeOf(records); err != nil {
				return err
			}
		}
		op, rep, err := inspect(ctx, &bcfg, log, hooks)
		if err != nil {
			return err
		}
		defer op.Close()
		if before, err = op.explainInput(rep); err != nil {
			return err
		}
		cfg.ClusterID = rep.ClusterID
		if records == nil {
			records = allRecords(rep.State)
		}
	}
	if records == nil {
		return errors.New("plan --offline: give --router-snapshot FILE (the output of `list -o json`), since no cluster says which router to read")
	}

	// The cluster as the manifests make it, decided on the same entries.
	ov := manifests.NewOverlay(live, withoutServer(objs), prune, now)
	if cfg.Plan.Offline {
		ov.Known(registry.ObjectUIDs(records))
	}
	acfg := *cfg
	acfg.Provider = "inmemory"
	store, err := storeOf(records)
	if err != nil {
		return err
	}
	op, rep, err := inspect(ctx, &acfg, log, Hooks{kube: overlaid(base, ov, cfg, true), store: store})
	if err != nil {
		return err
	}
	defer op.Close()
	after, err := op.explainInput(rep)
	if err != nil {
		return err
	}

	in := &preview.Input{Before: before, After: after, Notes: notes}
	touched := ov.Touched()
	for _, k := range slices.SortedFunc(maps.Keys(touched), func(a, b manifests.Key) int { return strings.Compare(a.String(), b.String()) }) {
		t := touched[k]
		in.Manifest = append(in.Manifest, preview.Touched{Object: explain.Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name, UID: t.UID},
			Change: string(t.Change), Origin: t.Origin, StatusUnknown: t.StatusUnknown})
	}
	for _, u := range ov.Unread() {
		k := manifests.KeyOf(u.Unstructured)
		in.Unread = append(in.Unread, preview.Touched{Object: explain.Object{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}, Origin: u.Origin})
	}
	if in.Config, err = configChanges(ctx, objs, base, cfg.ConfigName); err != nil {
		in.Notes = append(in.Notes, err.Error())
	}
	p := preview.Make(in)
	switch cfg.Output {
	case "json":
		err = preview.WriteJSON(out, p)
	case "markdown":
		err = preview.WriteMarkdown(out, p)
	default:
		err = preview.WriteText(out, p)
	}
	if err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	if code := p.Exit(); code != 0 {
		return &PlanExitError{Code: code}
	}
	return nil
}

// readOnlyCluster is the configuration explain would use (ReadOnlyConfig: from a laptop, the
// running operator's) and the clients to the cluster.
func readOnlyCluster(ctx context.Context, cfg *Config, log *logrus.Logger) (*Config, *kubeClients, error) {
	cfg, restCfg, err := ReadOnlyConfig(ctx, cfg, log.Out)
	if err != nil {
		return nil, nil, err
	}
	restCfg.UserAgent = "router-hosts-operator/" + cfg.Version + " (plan)"
	kc, err := newKubeClients(restCfg, cfg.KubeAPIQPS, cfg.KubeAPIBurst, 0)
	if err != nil {
		return nil, nil, err
	}
	return cfg, kc, nil
}

// inspect wires an operator as hooks say and runs the registry's decision once.
func inspect(ctx context.Context, cfg *Config, log *logrus.Logger, hooks Hooks) (*Operator, *controller.Report, error) {
	op, err := New(ctx, cfg, log, io.Discard, hooks)
	if err != nil {
		return nil, nil, err
	}
	if op.noRouter != nil {
		op.Close()
		return nil, nil, op.noRouter
	}
	rep, err := op.Controller.Inspect(ctx)
	if err != nil {
		op.Close()
		return nil, nil, fmt.Errorf("reading the cluster and the router: %w", err)
	}
	return op, rep, nil
}

// overlaid are the clients the sources and the RouterHostsConfig read through: the overlay
// over base's (nil offline). Events, the status and the Secrets are never written or needed:
// a plan writes nothing, and with the router's entries in memory (snapshot) no Secret of the
// RouterHostsConfig is read.
func overlaid(base *kubeClients, ov *manifests.Overlay, cfg *Config, inMemory bool) *kubeClients {
	kc := &kubeClients{eventSink: noEvents{}, secrets: noSecrets}
	if base != nil {
		kc.events, kc.namespaces = base.events, base.namespaces
		if !inMemory {
			kc.secrets = base.secrets
		}
		kc.sources = source.Clients{Ingresses: ov.Ingresses(), Services: ov.Services(),
			Dynamic: ov.Dynamic(base.sources.Dynamic), Discovery: base.sources.Discovery, WatchListUnsupported: true}
	} else {
		kc.sources = source.Clients{Ingresses: ov.Ingresses(), Services: ov.Services(), Dynamic: ov.Dynamic(nil),
			Discovery: manifests.Discovery(nil, servedOffline(cfg)), WatchListUnsupported: true}
	}
	kc.status = kc.sources.Dynamic
	return kc
}

// servedOffline is what an offline plan's cluster serves: every resource a source reads, and
// the RouterHostsConfig.
func servedOffline(cfg *Config) map[string][]string {
	served := map[string][]string{v1alpha1.GroupVersion.Group: {v1alpha1.RouterHostsConfigResource.Resource}, "": {"services", "namespaces"}}
	for _, name := range source.Names() {
		for _, r := range source.Rules(name) {
			for _, g := range r.Groups {
				for _, res := range r.Resources {
					if !strings.Contains(res, "/") && !slices.Contains(served[g], res) {
						served[g] = append(served[g], res)
					}
				}
			}
		}
	}
	return served
}

// withoutServer are objs with the RouterHostsConfig's spec.server left out: the plan reads
// the router once, as it is now, and a connection the manifests name is the running
// operator's business after they are applied.
func withoutServer(objs []manifests.Object) []manifests.Object {
	out := make([]manifests.Object, len(objs))
	for i, o := range objs {
		out[i] = o
		if o.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "RouterHostsConfig"}) {
			c := o.DeepCopy()
			unstructured.RemoveNestedField(c.Object, "spec", "server")
			out[i] = manifests.Object{Unstructured: c, Origin: o.Origin}
		}
	}
	return out
}

// configChanges are the fields of the RouterHostsConfig's spec the manifests change, against
// the live object (none offline: every field is new).
func configChanges(ctx context.Context, objs []manifests.Object, base *kubeClients, name string) ([]preview.ConfigChange, error) {
	var given *unstructured.Unstructured
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() == (schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "RouterHostsConfig"}) && o.GetName() == name {
			given = o.Unstructured
		}
	}
	if given == nil {
		return nil, nil
	}
	var old map[string]any
	if base != nil {
		live, err := base.sources.Dynamic.Resource(v1alpha1.RouterHostsConfigResource).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading the live RouterHostsConfig %s: %w", name, err)
		default:
			old, _, _ = unstructured.NestedMap(live.Object, "spec")
		}
	}
	cur, _, _ := unstructured.NestedMap(given.Object, "spec")
	return specDiff("spec", old, cur), nil
}

// specDiff lists the leaves of two specs that differ, by path.
func specDiff(path string, old, cur map[string]any) []preview.ConfigChange {
	var out []preview.ConfigChange
	keys := map[string]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range cur {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		o, c := old[k], cur[k]
		om, oIsMap := o.(map[string]any)
		cm, cIsMap := c.(map[string]any)
		if (oIsMap || o == nil) && (cIsMap || c == nil) && (oIsMap || cIsMap) {
			out = append(out, specDiff(path+"."+k, om, cm)...)
			continue
		}
		if !equality.Semantic.DeepEqual(o, c) {
			out = append(out, preview.ConfigChange{Field: path + "." + k, Old: words(o), New: words(c)})
		}
	}
	return out
}

func words(v any) string {
	switch x := v.(type) {
	case nil:
		return "(unset)"
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, fmt.Sprint(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// readSnapshot reads a router snapshot file.
func readSnapshot(path string) ([]endpoint.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--router-snapshot: %w", err)
	}
	defer f.Close()
	records, err := explain.ReadSnapshot(f)
	if err != nil {
		return nil, fmt.Errorf("--router-snapshot %s: %w", path, err)
	}
	return records, nil
}

// storeOf is an in-memory router holding records exactly, versions included.
func storeOf(records []endpoint.Record) (*inmemory.Store, error) {
	st, err := inmemory.NewStoreWith(records)
	if err != nil {
		return nil, fmt.Errorf("the router's entries: %w", err)
	}
	return st, nil
}

// allRecords are every entry of one read, whoever owns it.
func allRecords(st *registry.State) []endpoint.Record {
	if st == nil {
		return []endpoint.Record{}
	}
	out := append([]endpoint.Record{}, st.Owned...)
	for _, k := range slices.Sorted(maps.Keys(st.Foreign)) {
		out = append(out, st.Foreign[k]...)
	}
	for _, k := range slices.Sorted(maps.Keys(st.Unowned)) {
		out = append(out, st.Unowned[k]...)
	}
	return out
}

// identityIn is the one identity the entries of cluster carry, for an offline plan given no
// --cluster-id: the cluster's own entries say who it is.
func identityIn(records []endpoint.Record, cluster string) (string, error) {
	ids := map[string]bool{}
	for _, r := range records {
		if !r.HasTag(registry.ClusterTag(cluster)) {
			continue
		}
		for _, t := range r.Tags {
			if id, ok := strings.CutPrefix(t, registry.PrefixClusterID); ok {
				ids[id] = true
			}
		}
	}
	switch len(ids) {
	case 1:
		for id := range ids {
			return id, nil
		}
	case 0:
		return "", fmt.Errorf("plan --offline: the snapshot has no entry of cluster %s with its identity; give --cluster-id (the running operator's, in its RouterHostsConfig's status or log)", cluster)
	}
	return "", fmt.Errorf("plan --offline: the snapshot's entries of cluster %s carry %d identities (%s); give --cluster-id", cluster, len(ids), strings.Join(slices.Sorted(maps.Keys(ids)), ", "))
}

// noEvents and noSecrets stand where a plan needs no client: it posts no event and reads no
// Secret.
type noEvents struct{}

func (noEvents) Create(e *corev1.Event) (*corev1.Event, error)          { return e, nil }
func (noEvents) Update(e *corev1.Event) (*corev1.Event, error)          { return e, nil }
func (noEvents) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return e, nil }

func noSecrets(string) kube.Reader[*corev1.Secret, *corev1.SecretList] { return secretsNotFound{} }

type secretsNotFound struct{}

func (secretsNotFound) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Secret, error) {
	return nil, notFound(name)
}

func (secretsNotFound) List(context.Context, metav1.ListOptions) (*corev1.SecretList, error) {
	return nil, notFound("")
}

func (secretsNotFound) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, notFound("")
}

func notFound(name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}
