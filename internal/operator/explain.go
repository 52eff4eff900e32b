package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/dnscheck"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/explain"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// The read-only commands.
const (
	CommandExplain = "explain"
	CommandList    = "list"
	CommandPlan    = "plan"
)

// surveyTimeout bounds the wait for one kind's list in explain's look for objects that are
// never read: a kind the caller may not list must not hold the answer.
const surveyTimeout = 10 * time.Second

// NotAsWantedError is explain's answer when a name is not on the router as its claims want:
// the command exits 1, not 2, since nothing failed.
type NotAsWantedError struct{ Names []string }

func (e *NotAsWantedError) Error() string {
	return "not on the router as wanted: " + strings.Join(e.Names, ", ")
}

// ExitCode is the process's exit status for the command cfg ran and the error it returned:
// explain and list exit 1 for a name not as wanted and 2 on any error; the others exit 1 on
// any error.
func ExitCode(cfg *Config, err error) int {
	var na *NotAsWantedError
	var pe *PlanExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &pe):
		return pe.Code
	case errors.As(err, &na):
		return 1
	case cfg != nil && (cfg.Command == CommandExplain || cfg.Command == CommandList || cfg.Command == CommandPlan):
		return 2
	}
	return 1
}

// readOnlyFlags completes the read-only commands' flags: they decide as a sync would, write
// nothing, lead nothing and serve nothing. list's --namespace picks the entries it prints; it
// does not narrow what is read, since a name's fate depends on every namespace's claims.
func (cfg *Config) readOnlyFlags() error {
	cfg.DryRun, cfg.Once, cfg.LeaderElect, cfg.MetricsAddress = true, true, false, ""
	if cfg.Command == CommandList {
		cfg.Filter.Namespace, cfg.Namespace = cfg.Namespace, ""
		return cfg.Filter.Check()
	}
	for _, t := range cfg.Targets {
		if _, err := parseTarget(t); err != nil {
			return err
		}
	}
	return nil
}

// target is one thing explain is asked about: a name, or an object.
type target struct {
	name                 string
	kind, namespace, obj string
	isObject             bool
}

func parseTarget(t string) (target, error) {
	if !strings.Contains(t, "/") {
		return target{name: strings.TrimSuffix(strings.ToLower(t), ".")}, nil
	}
	parts := strings.Split(t, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return target{}, fmt.Errorf("explain %q: want a hostname or KIND/NAMESPACE/NAME (ingress/default/web)", t)
	}
	return target{kind: strings.ToLower(parts[0]), namespace: parts[1], obj: parts[2], isObject: true}, nil
}

// matches reports whether ref is the object t names: the kind as written, in any case, in the
// plural, or with its API group (ingressroutes.traefik.io).
func (t target) matches(ref endpoint.SourceRef) bool {
	if !t.isObject || ref.Namespace != t.namespace || ref.Name != t.obj {
		return false
	}
	kind, group, _ := strings.Cut(t.kind, ".")
	if group != "" && !strings.EqualFold(group, ref.Group) {
		return false
	}
	k := strings.ToLower(ref.Kind)
	return kind == k || kind == k+"s" || kind == k+"es"
}

// Explain runs explain or list, configured as ReadOnlyConfig says (from a laptop, as the
// running operator is): one read of the cluster and the router, the registry's
// decision from it (controller.Inspect), the objects that name the names asked about but are
// never read (source.Unreads), and what the router's DNS answers; then prints them to out.
// It writes nothing anywhere.
func Explain(ctx context.Context, cfg *Config, log *logrus.Logger, out io.Writer) error {
	cfg, _, err := ReadOnlyConfig(ctx, cfg, log.Out)
	if err != nil {
		return err
	}
	start := time.Now()
	op, err := New(ctx, cfg, log, io.Discard, Hooks{})
	if err != nil {
		return err
	}
	defer op.Close()
	if op.noRouter != nil {
		return op.noRouter
	}
	started := time.Now()
	rep, err := op.Controller.Inspect(ctx)
	if err != nil {
		return fmt.Errorf("reading the cluster and the router: %w", err)
	}
	// What each step took, for a person who finds explain slow: the informers' lists, the
	// decision (one read of the router), then the survey, the events and the DNS below.
	timing := log.WithFields(logrus.Fields{"start": started.Sub(start).Round(time.Millisecond), "decide": time.Since(started).Round(time.Millisecond)})
	defer func() { timing.Debug("explain's steps") }()
	in, err := op.explainInput(rep)
	if err != nil {
		return err
	}
	server := op.settings.VerifyDNS
	if cfg.Command == CommandList {
		entries := explain.List(in, cfg.Filter)
		if server != "" {
			names := make([]string, len(entries))
			for i := range entries {
				names[i] = strings.ToLower(entries[i].Hostname)
			}
			said, silences := answers(ctx, server, names, explain.Written(in))
			if len(silences) > 0 {
				log.WithField("dns", server).Warnf("the router's DNS gave no answer for %d of %d names (first: %s)", len(silences), len(names), silences[0])
			}
			for i := range entries {
				if a, ok := said[names[i]]; ok {
					entries[i].Answer = &a
				}
			}
		}
		if cfg.Output == "json" {
			return explain.WriteJSON(out, explain.NewListJSON(entries, cfg.Filter))
		}
		return explain.WriteList(out, entries)
	}

	targets := make([]target, 0, len(cfg.Targets))
	for _, t := range cfg.Targets {
		tg, _ := parseTarget(t) // checked by readOnlyFlags
		targets = append(targets, tg)
	}
	doc := explain.NamesJSON{Version: explain.Version}
	var names []string
	// An object asked about is found among the objects read, else by the survey below.
	asked := map[int]endpoint.SourceRef{}
	for i, t := range targets {
		if !t.isObject {
			names = append(names, t.name)
			continue
		}
		for uid, o := range rep.Objects {
			for _, ep := range o.Endpoints {
				if ref, ok := ep.Ref(uid); ok && t.matches(ref) {
					asked[i] = ref
				}
			}
		}
		if ref, ok := asked[i]; ok {
			ns, _ := explain.Names(in, ref.UID)
			names = append(names, ns...)
		}
	}
	wanted := map[string]bool{}
	for _, n := range names {
		wanted[n] = true
	}
	survey := source.Survey{Enabled: cfg.Sources, Namespace: cfg.Namespace, LabelSelector: cfg.LabelFilter, OptIn: op.settings.OptIn,
		Timeout: surveyTimeout, Log: log.WithField("component", "survey"),
		Read: func(uid string) bool { _, ok := rep.Objects[uid]; return ok },
		Wants: func(ref endpoint.SourceRef, ns []string) bool {
			for i, t := range targets {
				if t.matches(ref) {
					if _, ok := asked[i]; !ok {
						asked[i] = ref
					}
					return true
				}
			}
			return slices.ContainsFunc(ns, func(n string) bool { return wanted[n] })
		}}
	surveyed := time.Now()
	unread, serr := source.Unreads(ctx, op.clients, survey)
	timing = timing.WithField("survey", time.Since(surveyed).Round(time.Millisecond))
	if serr != nil {
		doc.Notes = append(doc.Notes, serr.Error())
	}
	in.Unread = unread
	for i, t := range targets {
		if !t.isObject {
			continue
		}
		ref, ok := asked[i]
		if !ok {
			return fmt.Errorf("no %s %s/%s in the cluster", t.kind, t.namespace, t.obj)
		}
		o := explain.Object{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}
		doc.Object = &o
		doc.Problems = explain.Problems(in, ref.UID)
		for _, u := range unread {
			if u.Ref.UID == ref.UID {
				doc.Unread = append(doc.Unread, explain.Unread{Object: o, Source: u.Source, Names: u.Names, Code: u.Reason, Fix: u.Fix})
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if server != "" {
		var silences []string
		in.Answers, silences = answers(ctx, server, names, explain.Written(in))
		for _, s := range silences {
			doc.Notes = append(doc.Notes, "the router's DNS at "+server+" gave no answer: "+s)
		}
	}
	doc.Names = explain.ExplainNames(in, names)
	heard := time.Now()
	if err := op.said(ctx, &doc, rep.ClusterID, rep.Started); err != nil {
		doc.Notes = append(doc.Notes, err.Error())
	}
	timing = timing.WithField("events", time.Since(heard).Round(time.Millisecond))
	if cfg.Output == "json" {
		err = explain.WriteJSON(out, doc)
	} else {
		explain.WriteText(out, &doc)
	}
	if err != nil {
		return err
	}
	var missing []string
	for _, n := range doc.Names {
		if !n.AsWanted {
			missing = append(missing, n.Name)
		}
	}
	if len(missing) > 0 || len(doc.Unread) > 0 || len(doc.Problems) > 0 || (doc.Object != nil && len(doc.Names) == 0) {
		if len(missing) == 0 {
			missing = []string{doc.Object.String()}
		}
		return &NotAsWantedError{Names: missing}
	}
	return nil
}

// explainInput is one decision as explain and plan word it: the report, whose each entry is,
// and the domain filter the registry decided with (the settings in use, the
// RouterHostsConfig's over the flags).
func (op *Operator) explainInput(rep *controller.Report) (*explain.Input, error) {
	domains, err := op.settings.Domains()
	if err != nil {
		return nil, fmt.Errorf("the domain filter: %w", err)
	}
	in := &explain.Input{Report: rep, Owners: op.Registry.Ownerships(rep.State, rep.Silent), Now: rep.Started, DomainFilter: domains}
	if op.Config != nil {
		in.DomainFilterSetBy = op.Config.DomainFilterSetBy()
	}
	return in, nil
}

// saidWithin is how far back explain reads the running operator's Warning events; older ones
// say what no longer holds, and the apiserver keeps them an hour by default anyway.
const saidWithin = time.Hour

// maxSaidObjects bounds the objects whose events explain reads: one list each.
const maxSaidObjects = 20

// said adds the Warning events the running operator posted within saidWithin of now: on the
// objects that claim each name, and the cluster-wide ones on the RouterHostsConfig. Those are
// what only its loop sees (a twin, a write-rate budget spent). Only the events of the
// installation clusterID are shown (events.FromInstallation): another's, or one anybody posted
// naming the operator's component, would speak for it.
func (op *Operator) said(ctx context.Context, doc *explain.NamesJSON, clusterID string, now time.Time) error {
	seen := map[string][]explain.Said{}
	var failed []string
	read := func(obj explain.Object, uid string) []explain.Said {
		if got, ok := seen[uid]; ok {
			return got
		}
		if len(seen) >= maxSaidObjects {
			return nil
		}
		got, err := warningsOn(ctx, op.events, clusterID, obj, uid, now.Add(-saidWithin))
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", obj, err))
		}
		seen[uid] = got
		return got
	}
	for i := range doc.Names {
		n := &doc.Names[i]
		for _, c := range n.Claims {
			n.Said = append(n.Said, read(c.Object, c.Object.UID)...)
		}
	}
	if op.Config != nil {
		if ref := op.Config.ObjectRef(); ref != nil && ref.UID != "" {
			doc.Said = read(explain.Object{Kind: ref.Kind, Name: ref.Name, Namespace: ref.Namespace}, string(ref.UID))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("could not read the running operator's events: %s", strings.Join(failed, "; "))
	}
	return nil
}

// warningsOn lists the Warning events the installation identity posted on the object uid since
// then, oldest first.
func warningsOn(ctx context.Context, c kube.Events, identity string, obj explain.Object, uid string, since time.Time) ([]explain.Said, error) {
	ns := obj.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault // a cluster-scoped object's events live there
	}
	list, err := c(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + uid + ",type=" + corev1.EventTypeWarning})
	if err != nil {
		return nil, err
	}
	var out []explain.Said
	for _, e := range list.Items {
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = e.EventTime.Time
		}
		if last.IsZero() {
			last = e.CreationTimestamp.Time
		}
		if !events.FromInstallation(&e, identity) || last.Before(since) {
			continue
		}
		count := e.Count
		if count == 0 {
			count = 1
		}
		out = append(out, explain.Said{Object: obj, Code: e.Reason, Message: e.Message, Count: count, Last: last})
	}
	slices.SortFunc(out, func(a, b explain.Said) int { return a.Last.Compare(b.Last) })
	return out, nil
}

// The read-only commands' DNS questions: a few at a time, each with the check's own timeout,
// and all of them within dnsWithin, so that a DNS server that does not answer costs a list
// seconds, not a timeout per name.
const (
	dnsAtOnce = 4
	dnsWithin = 10 * time.Second
)

// answers asks the router's DNS (server) for each of names what it answers, against what the
// router holds for it (written, explain.Written). A name the server gave no answer for has
// none: it says nothing of the name.
func answers(ctx context.Context, server string, names []string, written map[string][]string) (map[string]explain.Answer, []string) {
	slices.Sort(names)
	names = slices.Compact(names)
	ctx, cancel := context.WithTimeout(ctx, dnsWithin)
	defer cancel()
	out := make(map[string]explain.Answer, len(names))
	var (
		mu       sync.Mutex
		silences []string
	)
	todo := make(chan string)
	var wg sync.WaitGroup
	for range min(dnsAtOnce, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range todo {
				var want []netip.Addr
				for _, ip := range written[n] {
					if a, err := netip.ParseAddr(ip); err == nil {
						want = append(want, a)
					}
				}
				qctx, qcancel := context.WithTimeout(ctx, dnscheck.DefaultTimeout)
				r := dnscheck.Check(qctx, server, n, want)
				qcancel()
				if r.Finding == dnscheck.NoAnswer {
					mu.Lock()
					silences = append(silences, r.String())
					mu.Unlock()
					continue
				}
				a := explain.Answer{Server: server, Got: addrTexts(r.Got), Want: addrTexts(r.Want), Detail: r.String(),
					Answering: r.Finding == dnscheck.Answering || (len(want) == 0 && r.Finding == dnscheck.Gone)}
				mu.Lock()
				out[n] = a
				mu.Unlock()
			}
		}()
	}
	for _, n := range names {
		select {
		case todo <- n:
		case <-ctx.Done():
		}
	}
	close(todo)
	wg.Wait()
	slices.Sort(silences)
	return out, silences
}

func addrTexts(addrs []netip.Addr) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}
