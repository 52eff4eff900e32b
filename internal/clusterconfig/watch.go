package clusterconfig

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube"
)

// Options wire a Watcher.
type Options struct {
	// Name is the RouterHostsConfig to read (--config-name).
	Name string
	// Base is what the flags say.
	Base      Settings
	Dynamic   dynamic.Interface
	Discovery kube.Discovery
	// Secrets reads the mTLS Secret; the operator may read that one Secret only.
	Secrets kube.Secrets
	// Status writes the object's status, with its own rate limit.
	Status dynamic.Interface
	// Reconfigure puts settings that passed Check in use; on its error the settings in use stay.
	Reconfigure func(Settings) error
	// Version asks the server for its version, for the status; nil leaves it out.
	Version func(context.Context) (string, error)
	// MaterialFailed, when set, is told once of each new reason the named Secret's mTLS
	// material cannot be loaded (a MaterialError); the last good material stays in use.
	MaterialFailed func(error)
	// DiscoveryInterval is how often a CRD missing at the start is looked for again (30 s
	// when not positive).
	DiscoveryInterval time.Duration
	Log               logrus.FieldLogger
}

// Watcher follows one RouterHostsConfig and the Secret it names.
type Watcher struct {
	opts Options
	log  logrus.FieldLogger
	kick chan struct{}

	mu sync.Mutex
	// served: the RouterHostsConfig CRD is installed.
	served bool
	// obj is the object as last read, nil when there is none.
	obj *v1alpha1.RouterHostsConfig
	// applied are the settings in use; problem is why the object's are not, nil when they are.
	applied Settings
	problem error
	// waiting: nothing is in use yet, because the object could not be used or read at the
	// start; the operator syncs nothing until an evaluation applies settings. The flags are no
	// fallback then, since they may name another router or cluster, or fewer rules.
	waiting bool
	// secret follows the named Secret; nil when none is named.
	secret *secretWatch
	status *statusWriter
}

// ObjectRef is the RouterHostsConfig as last read, for events about the whole cluster; nil
// when there is none.
func (w *Watcher) ObjectRef() *corev1.ObjectReference {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.obj == nil {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RouterHostsConfig", Name: w.obj.Name, UID: w.obj.UID}
}

// New returns a Watcher; nothing is read until Load.
func New(opts Options) *Watcher {
	if opts.Log == nil {
		opts.Log = logrus.StandardLogger()
	}
	w := &Watcher{opts: opts, log: opts.Log, kick: make(chan struct{}, 1), applied: opts.Base}
	w.status = newStatusWriter(w)
	return w
}

// Load reads the object and its Secret once, for the start. It returns the settings to start
// with: the object's over the flags, or the flags alone when there is no object (or no
// RouterHostsConfig CRD), which the caller checks. When the object cannot be used, or cannot be
// read, it returns the flags' settings and why, and the watcher waits: nothing is in use until
// Run applies the object (or, should it turn out not to exist, the flags).
func (w *Watcher) Load(ctx context.Context) (Settings, error) {
	s, err := w.load(ctx)
	w.started(s, err)
	if err != nil {
		return w.opts.Base, err
	}
	return s, nil
}

// started records what Load found: the settings in use, or why there are none yet.
func (w *Watcher) started(s Settings, err error) {
	w.noteProblem(nil, err)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.problem, w.waiting = err, true
		return
	}
	w.applied = s
}

func (w *Watcher) load(ctx context.Context) (Settings, error) {
	served, err := kube.IsResourceEnabled(w.opts.Discovery, v1alpha1.RouterHostsConfigResource)
	if err != nil && !apierrors.IsNotFound(err) {
		return w.opts.Base, fmt.Errorf("looking for the RouterHostsConfig CRD: %w", err)
	}
	w.mu.Lock()
	w.served = served
	w.mu.Unlock()
	if !served {
		w.log.Info("the RouterHostsConfig CRD is not installed; the flags alone configure the operator")
		return w.opts.Base, nil
	}
	u, err := w.opts.Dynamic.Resource(v1alpha1.RouterHostsConfigResource).Get(ctx, w.opts.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		w.log.WithField("config", w.opts.Name).Info("no RouterHostsConfig of that name; the flags alone configure the operator")
		return w.opts.Base, nil
	case err != nil:
		return w.opts.Base, fmt.Errorf("reading RouterHostsConfig %s: %w", w.opts.Name, err)
	}
	obj, err := decode(u)
	if err != nil {
		return w.opts.Base, err
	}
	w.mu.Lock()
	w.obj = obj
	w.mu.Unlock()
	read := func(namespace, name string) (map[string][]byte, error) {
		s, err := w.opts.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// Worded as the Secret's watch words it, so that the first evaluation finds the
			// same problem and does not log it again.
			return nil, errors.New("not found")
		}
		if err != nil {
			return nil, err
		}
		return s.Data, nil
	}
	s, err := Overlay(w.opts.Base, &obj.Spec, read)
	if err != nil {
		return w.opts.Base, err
	}
	w.log.WithField("config", w.opts.Name).Info("configured by RouterHostsConfig")
	return s, nil
}

// Run follows the object and its Secret until ctx ends, applying every valid change. Load
// must have run.
func (w *Watcher) Run(ctx context.Context) {
	w.mu.Lock()
	served := w.served
	w.mu.Unlock()
	if !served && !w.awaitCRD(ctx) {
		return
	}
	res := w.opts.Dynamic.Resource(v1alpha1.RouterHostsConfigResource)
	inf, err := byName(w.opts.Name, res.List, res.Watch, &unstructured.Unstructured{}, w.poke)
	if err != nil {
		w.log.WithError(err).Error("watching the RouterHostsConfig")
		return
	}
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	if w.Waiting() {
		// The informer tells of an object it lists, not of one it does not find: a start that
		// could not read the object evaluates what there is now, object or none.
		w.poke()
	}
	for {
		select {
		case <-ctx.Done():
			w.mu.Lock()
			if w.secret != nil {
				w.secret.stop()
			}
			w.mu.Unlock()
			return
		case <-w.kick:
		}
		obj, err := cached(inf.GetStore(), w.opts.Name)
		w.evaluate(ctx, obj, err)
	}
}

// awaitCRD looks for the RouterHostsConfig CRD every DiscoveryInterval until it is served
// (true) or ctx ends (false): installed after the operator, it configures it as if it had
// been there first.
func (w *Watcher) awaitCRD(ctx context.Context) bool {
	every := w.opts.DiscoveryInterval
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		served, err := kube.IsResourceEnabled(w.opts.Discovery, v1alpha1.RouterHostsConfigResource)
		switch {
		case err == nil && served:
			w.mu.Lock()
			w.served = true
			w.mu.Unlock()
			w.log.Info("the RouterHostsConfig CRD is installed now; following the RouterHostsConfig")
			w.poke()
			return true
		case (err == nil || apierrors.IsNotFound(err)) && w.Waiting():
			// Without the CRD there is no object: a start that could not tell runs on the
			// flags, as one that could would have.
			w.evaluate(ctx, nil, nil)
		}
	}
}

func (w *Watcher) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// errGone is why the object's settings stay in use though the object is gone.
var errGone = errors.New("the RouterHostsConfig is gone; the last good configuration stays in use until the operator restarts")

// cached is the object called name in store, nil when there is none.
func cached(store cache.Store, name string) (*v1alpha1.RouterHostsConfig, error) {
	item, exists, err := store.GetByKey(name)
	if err != nil || !exists {
		return nil, err
	}
	u, ok := item.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("reading RouterHostsConfig %s: a %T in the cache", name, item)
	}
	return decode(u)
}

// evaluate applies what obj says (nil: there is no object), when it changes what the operator
// runs with; err is why the object could not be read. Settings once in use are given up only
// for settings that pass Check: an object that cannot be used, or is gone, keeps them.
func (w *Watcher) evaluate(ctx context.Context, obj *v1alpha1.RouterHostsConfig, err error) {
	w.mu.Lock()
	applied, waiting := w.applied, w.waiting
	w.mu.Unlock()
	s, problem := applied, err
	switch {
	case problem != nil:
	case obj != nil:
		s, problem = Overlay(w.opts.Base, &obj.Spec, w.followSecret(ctx, obj.Spec.Server))
	case waiting || applied.Equal(w.opts.Base):
		// No object, and nothing of one in use: the flags, as at a start without one.
		w.followSecret(ctx, nil)
		s = w.opts.Base
		if problem = s.Check(); problem != nil {
			problem = fmt.Errorf("no RouterHostsConfig %s, and the flags alone are not enough: %w", w.opts.Name, problem)
		}
	default:
		// Gone while its settings are in use: they stay. The flags may name another router or
		// cluster, or fewer rules, and a deletion is no way to ask for those (a restart
		// without the object is).
		w.followSecret(ctx, nil)
		problem = errGone
	}
	w.mu.Lock()
	w.obj = obj
	w.mu.Unlock()
	if problem == nil && (waiting || !s.Equal(applied)) {
		if problem = w.opts.Reconfigure(s); problem == nil {
			applied, waiting = s, false
			w.log.WithFields(logrus.Fields{"config": w.opts.Name, "endpoint": s.Endpoint, "cluster": s.ClusterName}).Info("configuration applied")
		} else {
			problem = fmt.Errorf("applying the configuration: %w", problem)
		}
	}
	w.mu.Lock()
	prev := w.problem
	w.applied, w.problem, w.waiting = applied, problem, waiting
	w.mu.Unlock()
	log := w.log.WithField("config", w.opts.Name)
	switch {
	case !w.noteProblem(prev, problem):
	case errors.Is(problem, errGone):
		log.WithFields(logrus.Fields{"endpoint": applied.Endpoint, "cluster": applied.ClusterName}).Warn(errGone.Error())
	case waiting && !IsNoRouter(problem):
		log.WithError(problem).Warn("RouterHostsConfig not usable; still waiting for it, syncing nothing until then")
	case waiting || applied.Endpoint == "" && !applied.NoServer:
		log.WithError(problem).Warn("RouterHostsConfig names no usable router yet; still waiting for one")
	default:
		log.WithError(problem).Warn("RouterHostsConfig not applied; the last good configuration stays in use")
	}
	w.status.poke()
}

// noteProblem reports whether problem is new since prev, and tells MaterialFailed of a new
// Secret whose material cannot be loaded.
func (w *Watcher) noteProblem(prev, problem error) bool {
	if problem == nil || (prev != nil && prev.Error() == problem.Error()) {
		return false
	}
	var bad *MaterialError
	if errors.As(problem, &bad) && w.opts.MaterialFailed != nil {
		w.opts.MaterialFailed(problem)
	}
	return true
}

// followSecret watches the Secret server names (and stops watching one it no longer names),
// and returns the reader Overlay uses, from the watch's cache.
func (w *Watcher) followSecret(ctx context.Context, server *v1alpha1.ServerSpec) ReadSecret {
	var ref *v1alpha1.SecretReference
	if server != nil {
		ref = server.TLSSecretRef
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.secret != nil && (ref == nil || w.secret.namespace != ref.Namespace || w.secret.name != ref.Name) {
		w.secret.stop()
		w.secret = nil
	}
	if ref == nil {
		return nil
	}
	if w.secret == nil {
		w.secret = watchSecret(ctx, w.opts.Secrets, ref.Namespace, ref.Name, w.poke)
	}
	return w.secret.read
}

// Settings returns the settings in use and why the object's are not, nil when they are.
func (w *Watcher) Settings() (Settings, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.applied, w.problem
}

// DomainFilterSetBy names the RouterHostsConfig when its settings are in use and it sets the
// domain filter (spec.domainFilter or spec.excludeDomains), "" when the flags do: explain tells
// a person which of the two to widen.
func (w *Watcher) DomainFilterSetBy() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.obj == nil || w.problem != nil || w.waiting || (w.obj.Spec.DomainFilter == nil && w.obj.Spec.ExcludeDomains == nil) {
		return ""
	}
	return w.obj.Name
}

// Waiting reports whether nothing is in use yet: the object could not be used or read at the
// start, and no evaluation has applied settings since.
func (w *Watcher) Waiting() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiting
}

func decode(u *unstructured.Unstructured) (*v1alpha1.RouterHostsConfig, error) {
	var obj v1alpha1.RouterHostsConfig
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &obj); err != nil {
		return nil, fmt.Errorf("reading RouterHostsConfig %s: %w", u.GetName(), err)
	}
	return &obj, nil
}

// secretWatch caches one Secret, by a watch on its name alone: the operator's RBAC lets it
// read that Secret and no other.
type secretWatch struct {
	namespace, name string
	stop            context.CancelFunc
	inf             cache.SharedIndexInformer
	// failed is the last error of the watch's list, such as Forbidden.
	mu     sync.Mutex
	failed error
}

func watchSecret(ctx context.Context, secrets kube.Secrets, namespace, name string, changed func()) *secretWatch {
	ctx, cancel := context.WithCancel(ctx)
	sw := &secretWatch{namespace: namespace, name: name, stop: cancel}
	api := secrets(namespace)
	list := func(ctx context.Context, o metav1.ListOptions) (*corev1.SecretList, error) {
		l, err := api.List(ctx, o)
		sw.mu.Lock()
		sw.failed = err
		sw.mu.Unlock()
		if err != nil {
			changed() // so that the reader reports why
		}
		return l, err
	}
	sw.inf, _ = byName(name, list, api.Watch, &corev1.Secret{}, changed)
	go sw.inf.RunWithContext(ctx)
	return sw
}

// read returns the Secret's data from the cache, or why it has none.
func (sw *secretWatch) read(namespace, name string) (map[string][]byte, error) {
	sw.mu.Lock()
	failed := sw.failed
	sw.mu.Unlock()
	if failed != nil {
		return nil, failed
	}
	if !sw.inf.HasSynced() {
		// The first list is under way; its end pokes the watcher again.
		deadline := time.Now().Add(10 * time.Second)
		for !sw.inf.HasSynced() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !sw.inf.HasSynced() {
			return nil, errors.New("not read yet")
		}
	}
	item, exists, err := sw.inf.GetStore().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	s, ok := item.(*corev1.Secret)
	if !exists || !ok {
		return nil, errors.New("not found")
	}
	return s.Data, nil
}

// byName is an informer on the one object called name, by a field selector on list and watch
// (so that RBAC by resourceNames allows it), calling changed on every change.
func byName[L runtime.Object](name string, list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), example runtime.Object, changed func()) (cache.SharedIndexInformer, error) {
	only := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			only(&o)
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			only(&o)
			return watchFn(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { changed() },
		UpdateFunc: func(any, any) { changed() },
		DeleteFunc: func(any) { changed() },
	}); err != nil {
		return nil, err
	}
	return inf, nil
}
