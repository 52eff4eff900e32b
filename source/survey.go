package source

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// The reasons an object that names a hostname is never read, the near misses explain reports.
// None of them leaves an Event, since the operator as configured never sees the object.
const (
	// ReasonSourceNotEnabled: no --source reads the object's kind.
	ReasonSourceNotEnabled = "SourceNotEnabled"
	// ReasonOutsideNamespace: --namespace restricts the operator to another namespace.
	ReasonOutsideNamespace = "OutsideNamespace"
	// ReasonExcludedByLabelFilter: the object's labels do not match --label-filter.
	ReasonExcludedByLabelFilter = "ExcludedByLabelFilter"
	// ReasonNotOptedIn: the object lacks the opt-in annotation and no class-wide or
	// Gateway-wide setting takes it in (or it opts out).
	ReasonNotOptedIn = "NotOptedIn"
)

// UnreadReasons are the near misses' reason codes, in the order Survey tries them.
func UnreadReasons() []string {
	return []string{ReasonSourceNotEnabled, ReasonOutsideNamespace, ReasonNotOptedIn, ReasonExcludedByLabelFilter}
}

// Unread is an object that names a hostname the operator never writes for it, since the
// operator as configured never reads the object: why, and the line that would fix it.
type Unread struct {
	Ref endpoint.SourceRef
	// Source is the --source value of the object's kind; Names the hostnames and aliases the
	// object names, lowercase.
	Source string
	Names  []string
	Reason string
	Fix    string
}

// Survey is what Unreads judges objects against: the operator's configuration and what its
// sources read.
type Survey struct {
	// Enabled are the --source values in use; Namespace, LabelSelector and OptIn the
	// operator's filters.
	Enabled       []string
	Namespace     string
	LabelSelector string
	OptIn         OptIn
	// Read reports whether the operator's sources read an opted-in object, by UID.
	Read func(uid string) bool
	// Wants picks the objects to report: those naming a hostname asked about, or the one
	// object asked about.
	Wants func(ref endpoint.SourceRef, names []string) bool
	// Timeout bounds the wait for each kind's list; a kind that cannot be read in time (its
	// list forbidden, say) is left out and named in the error.
	Timeout time.Duration
	Log     logrus.FieldLogger
}

// Unreads reads every kind the operator has, in every namespace and whatever the labels,
// once, and returns the objects s.Wants picks that the operator never reads, each with the
// first reason in UnreadReasons' order. Kinds whose CRDs are not installed have no objects.
// The error names the kinds that could not be read; the objects of the others are returned
// beside it.
func Unreads(ctx context.Context, c Clients, s Survey) ([]Unread, error) {
	if s.Log == nil {
		s.Log = logrus.StandardLogger()
	}
	enabled := map[string]bool{}
	for _, n := range Expand(s.Enabled) {
		enabled[n] = true
	}
	var (
		mu     sync.Mutex
		out    []Unread
		failed []string
		wg     sync.WaitGroup
	)
	for _, k := range kinds() {
		if k.build == nil {
			continue
		}
		wg.Add(1)
		go func(info kindInfo) {
			defer wg.Done()
			start := time.Now()
			got, err := surveyKind(ctx, c, info, enabled[info.name], s)
			s.Log.WithFields(logrus.Fields{"source": info.name, "objects": len(got), "duration": time.Since(start).Round(time.Millisecond)}).Debug("surveyed a kind")
			mu.Lock()
			defer mu.Unlock()
			out = append(out, got...)
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", info.name, err))
			}
		}(k)
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Ref, out[j].Ref
		return a.Kind+"/"+a.Namespace+"/"+a.Name < b.Kind+"/"+b.Namespace+"/"+b.Name
	})
	if len(failed) > 0 {
		sort.Strings(failed)
		return out, fmt.Errorf("could not read every kind for objects that are never read: %s", strings.Join(failed, "; "))
	}
	return out, nil
}

// surveyKind lists one kind without the operator's filters and judges each object s.Wants.
func surveyKind(ctx context.Context, c Clients, info kindInfo, enabled bool, s Survey) ([]Unread, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	k := info.build()
	live := &liveOptIn{}
	live.p.Store(compileOptIn(s.OptIn))
	cfg := Config{Log: s.Log.WithField("survey", info.name), OptIn: s.OptIn, optIn: live}
	if err := k.start(ctx, c, cfg, func(_, _ metav1.Object) {}); err != nil {
		return nil, err
	}
	objs, err := k.objects()
	if err != nil {
		return nil, err
	}
	var out []Unread
	for _, o := range objs {
		cl := k.claim(o)
		names := claimedNames(&cl)
		if !s.Wants(cl.ref, names) {
			continue
		}
		u := Unread{Ref: cl.ref, Source: info.name, Names: names}
		u.Reason, u.Fix = whyUnread(o, &cl, info.name, enabled, k.optedIn(o) || (s.OptIn.ExternalDNSAnnotations && externalDNSOptedIn(o)), s)
		if u.Reason != "" {
			out = append(out, u)
		}
	}
	return out, nil
}

// whyUnread is the first reason the operator never reads o, and its fix; "" when it reads it.
func whyUnread(o metav1.Object, cl *claim, source string, enabled, optedIn bool, s Survey) (reason, fix string) {
	// kubectl names built-in kinds alone and custom ones with their group, which tells apart
	// two kinds of one name (Traefik's IngressRoute and another's).
	kindRes := strings.ToLower(cl.ref.Kind)
	if cl.ref.Group != "" && !strings.HasSuffix(cl.ref.Group, ".k8s.io") {
		kindRes += "." + cl.ref.Group
	}
	switch {
	case !enabled:
		return ReasonSourceNotEnabled, fmt.Sprintf("add --source=%s to the operator's flags (the chart's sources list)", source)
	case s.Namespace != "" && o.GetNamespace() != s.Namespace:
		return ReasonOutsideNamespace, fmt.Sprintf("the operator watches namespace %s only (--namespace): move the object there, or run the operator for all namespaces", s.Namespace)
	case !optedIn:
		fix = fmt.Sprintf("kubectl annotate %s -n %s %s %s=true", kindRes, o.GetNamespace(), o.GetName(), AnnotationEnabled)
		if v, ok := o.GetAnnotations()[AnnotationEnabled]; ok && v != "false" {
			fix = fmt.Sprintf("the annotation %s is %q, and only \"true\" opts in: %s --overwrite", AnnotationEnabled, v, fix)
		}
		if v := o.GetAnnotations()[AnnotationEnabled]; v == "false" {
			fix = fmt.Sprintf("the object opts out (%s: \"false\"): %s --overwrite", AnnotationEnabled, fix)
		}
		if class := classOf(o); class != "" && len(s.OptIn.IngressClasses) > 0 {
			fix += fmt.Sprintf(" (its class %s is not among --ingress-class=%s)", class, strings.Join(s.OptIn.IngressClasses, ","))
		}
		return ReasonNotOptedIn, fix
	case s.Read != nil && !s.Read(cl.ref.UID):
		if s.LabelSelector != "" {
			return ReasonExcludedByLabelFilter, fmt.Sprintf("its labels do not match --label-filter=%s: label the object to match, or widen the filter", s.LabelSelector)
		}
	}
	return "", ""
}

// classOf is an Ingress's class, "" for any other object.
func classOf(o metav1.Object) string {
	if ing, ok := o.(*networkingv1.Ingress); ok {
		return ingressClass(ing)
	}
	return ""
}

// claimedNames are the hostnames and aliases a claim names, lowercase, sorted and unique,
// as written (a bad one is still a name a person may ask about).
func claimedNames(cl *claim) []string {
	var names []string
	for _, h := range cl.hosts {
		names = append(names, strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), "."))
	}
	for _, a := range cl.overrides.aliases {
		names = append(names, strings.TrimSuffix(strings.ToLower(strings.TrimSpace(a)), "."))
	}
	slices.Sort(names)
	return slices.Compact(names)
}
