// Package events turns what a sync did into Kubernetes events on the objects concerned, so
// `kubectl describe ingress web` explains what happened to its hostnames. Events are emitted
// on transitions only: a steady cluster emits nothing, however many syncs run. A sync that
// touches many objects at once (the first sync on a large cluster) emits at most
// MaxNormalPerSync informational events and logs the rest, so an install never floods etcd;
// warnings are never capped.
package events

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/internal/kube"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// Component is the source every event of the operator's names (its reportingController).
const Component = "router-hosts-operator"

// Instance is the reportingInstance (source.host) of the events an installation's replica
// posts: the installation's identity, then the replica's hostname. Anyone may post an event
// naming Component, another installation of the operator among them; the identity is what
// tells this installation's apart (FromInstallation).
func Instance(identity, host string) string { return identity + "/" + host }

// FromInstallation reports whether the event was posted by the installation whose identity
// is identity, whichever of its replicas: Component is its controller and its instance
// carries the identity.
func FromInstallation(e *corev1.Event, identity string) bool {
	controller, instance := e.ReportingController, e.ReportingInstance
	if controller == "" {
		controller, instance = e.Source.Component, e.Source.Host
	}
	return identity != "" && controller == Component && strings.HasPrefix(instance, identity+"/")
}

// The event reasons.
const (
	SyncSucceeded             = "SyncSucceeded"
	SyncFailed                = "SyncFailed"
	EntryAdopted              = "EntryAdopted"
	EntryScheduledForDeletion = "EntryScheduledForDeletion"
	EntryDeleted              = "EntryDeleted"
	HostnameConflict          = registry.ReasonHostnameConflict
	// InvalidAnnotation is the reason of the source's own warnings too (source.Warner).
	InvalidAnnotation = registry.ReasonInvalidAnnotation
	// AuthenticationFailed prefixes the message of a SyncFailed event when router-hosts refused
	// the TLS authentication.
	AuthenticationFailed = "AuthenticationFailed"
	// NameNotPermitted: the tenancy rules do not let the object's namespace claim a name.
	NameNotPermitted = registry.ReasonNameNotPermitted
	// OverBudget: the object, or its namespace, is over its budget; its new names are not
	// written.
	OverBudget = registry.ReasonOverBudget
	// NamesakeCluster: another installation writes this cluster's name on the router; ended
	// by NamesakeClusterGone.
	NamesakeCluster     = "NamesakeCluster"
	NamesakeClusterGone = "NamesakeClusterGone"
	// MassDeletionHeld: the brake holds a deletion of most of the cluster's entries; ended by
	// MassDeletionReleased (confirmed, or the cause went away).
	MassDeletionHeld     = registry.ReasonMassDeletionHeld
	MassDeletionReleased = "MassDeletionReleased"
	// TwinInstallation: another writer with this installation's identity undoes its writes;
	// ended by TwinInstallationGone.
	TwinInstallation     = registry.ReasonTwinInstallation
	TwinInstallationGone = "TwinInstallationGone"
	// IdentityChanged: entries of an identity this installation had before are taken up in
	// place; ended by IdentityTakenUp.
	IdentityChanged = "IdentityChanged"
	IdentityTakenUp = "IdentityTakenUp"
	// SilentCluster: another installation's newest heartbeat on the router is older than
	// the threshold; ended by SilentClusterGone (it wrote again, or was released).
	SilentCluster     = "SilentCluster"
	SilentClusterGone = "SilentClusterGone"
)

// MaxNormalPerSync caps the Normal events of one sync, or of the run of syncs that carry one
// plan beyond the budget of writes per sync. Each is an etcd write: a first sync of 10,000
// Ingresses would otherwise post 10,000 SyncSucceeded events, for minutes after the entries
// exist, to say what the router already shows.
const MaxNormalPerSync = 100

// Recorder emits the events. Only the leader emits: standbys read the same objects and would
// otherwise repeat every warning.
type Recorder struct {
	rec     record.EventRecorder
	log     logrus.FieldLogger
	leading atomic.Bool
	// normal counts the Normal events of the sync being reported (and of those it continues);
	// Report runs once per sync, never concurrently, so it needs no lock.
	normal, suppressed int
	// continuing: the last sync left changes to this one, whose events count with its own.
	continuing bool

	mu sync.Mutex
	// last is the last standing warning per object and reason, so a condition that persists
	// across syncs is reported once and again only when it changes.
	last map[string]warning
	// cluster is the last standing warning about the whole cluster per reason; clusterObject
	// names the object they are posted on (the RouterHostsConfig), nil for the log alone.
	cluster       map[string]string
	clusterObject func() *corev1.ObjectReference
}

// SetClusterObject names the object that warnings about the whole cluster (a namesake, a held
// mass deletion) are posted on; it returns nil while there is none.
func (r *Recorder) SetClusterObject(ref func() *corev1.ObjectReference) { r.clusterObject = ref }

// warning is a standing warning: its message and the object it is about.
type warning struct {
	msg string
	ref endpoint.SourceRef
	// host is the hostname of a conflict, for the log.
	host string
}

// New starts an event broadcaster writing to sink, its events reported by instance
// (Instance); stop flushes and ends it. sink's client should have a rate limiter of its own,
// so that a burst of events never delays the informers or the leader Lease. Every event is on
// an object reference, so the recorder's scheme needs none of the objects' kinds.
func New(sink record.EventSink, instance string, log logrus.FieldLogger) (r *Recorder, stop func()) {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(sink)
	return NewWithRecorder(b.NewRecorder(kube.Scheme, corev1.EventSource{Component: Component, Host: instance}), log), b.Shutdown
}

// NewWithRecorder uses an existing recorder (tests pass record.FakeRecorder).
func NewWithRecorder(rec record.EventRecorder, log logrus.FieldLogger) *Recorder {
	return &Recorder{rec: rec, log: log, last: map[string]warning{}, cluster: map[string]string{}}
}

// SetLeading turns emission on or off.
func (r *Recorder) SetLeading(leading bool) { r.leading.Store(leading) }

// Warn emits a Warning about an object's input (a source.Warner). Sources call it once per
// version of the object already.
func (r *Recorder) Warn(ref endpoint.SourceRef, reason, message string) {
	if r.leading.Load() {
		r.rec.Event(objectRef(ref), corev1.EventTypeWarning, reason, message)
	}
}

// Report emits the events one sync calls for.
func (r *Recorder) Report(_ context.Context, rep *controller.Report) {
	if !r.leading.Load() || rep.Step == controller.StepSource {
		return
	}
	if rep.Step == controller.StepList {
		r.standing(rep, nil)
		return
	}
	r.clusterWide(rep)
	// Only the hostnames this sync changed or failed need their claims, and only an entry
	// leaving needs to know which objects still exist; a sync touching neither reads nothing.
	need := make(map[string]bool, len(rep.Changes)+len(rep.Failed))
	retiring := false
	for i := range rep.Changes {
		need[rep.Changes[i].Hostname()] = true
		switch rep.Changes[i].Action {
		case plan.Mark, plan.Delete, plan.Release:
			retiring = true
		}
	}
	for host := range rep.Failed {
		need[host] = true
	}
	claims := map[string][]endpoint.SourceRef{}
	alive := map[string]endpoint.SourceRef{}
	for _, ep := range rep.Desired {
		if len(need) == 0 {
			break
		}
		if need[ep.Hostname] {
			claims[ep.Hostname] = ep.Sources
		}
		if retiring {
			for _, s := range ep.Sources {
				alive[s.UID] = s
			}
		}
	}
	if !r.continuing {
		r.normal, r.suppressed = 0, 0
	}
	r.continuing = rep.Deferred > 0
	defer func() {
		if !r.continuing && r.suppressed > 0 {
			r.log.WithFields(logrus.Fields{"emitted": r.normal, "suppressed": r.suppressed}).
				Info("many objects changed in one sync; further Normal events of this sync were only counted")
		}
	}()
	for i := range rep.Results {
		c := &rep.Changes[i]
		if rep.Results[i].Err != nil {
			continue
		}
		host := c.Hostname()
		switch c.Action {
		case plan.Create, plan.Update, plan.Unmark:
			for _, s := range claims[host] {
				r.normalEvent(s, SyncSucceeded, fmt.Sprintf("router-hosts entry %s %s: %s", host, c.New.IP, c.Action))
			}
		case plan.Adopt:
			for _, s := range claims[host] {
				r.normalEvent(s, EntryAdopted, fmt.Sprintf("adopted the existing router-hosts entry %s %s (id %s); it is released, not deleted, when no longer wanted", host, c.New.IP, c.Old.ID))
			}
		case plan.Mark, plan.Delete, plan.Release:
			r.retired(c, alive)
		}
	}
	r.standing(rep, claims)
}

// retired reports an entry leaving, on the objects that still exist (a mark: they no longer
// want it; a delete or release: it is gone), or in the log when its objects are gone.
func (r *Recorder) retired(c *plan.Change, alive map[string]endpoint.SourceRef) {
	told := false
	for _, uid := range registry.SourceUIDs(c.Old) {
		s, exists := alive[uid]
		if !exists {
			continue
		}
		switch c.Action {
		case plan.Mark:
			r.normalEvent(s, EntryScheduledForDeletion,
				fmt.Sprintf("router-hosts entry %s %s is no longer wanted; it goes after the grace period", c.Old.Hostname, c.Old.IP))
		case plan.Delete:
			r.normalEvent(s, EntryDeleted, fmt.Sprintf("router-hosts entry %s %s (id %s) deleted", c.Old.Hostname, c.Old.IP, c.Old.ID))
		case plan.Release:
			r.normalEvent(s, EntryDeleted, fmt.Sprintf("router-hosts entry %s (id %s) released: given back to its user, no longer managed", c.Old.Hostname, c.Old.ID))
		}
		told = true
	}
	if !told {
		r.log.WithFields(logrus.Fields{"action": c.Action, "hostname": c.Old.Hostname, "ip": c.Old.IP, "id": c.Old.ID}).
			Info("entry of a deleted object")
	}
}

// standing reports conditions that last across syncs (write failures, an authentication
// failure, conflicts, reserved tags) once each, and forgets them when they clear so a
// recurrence is reported again. A conflict is also logged when it starts and when it ends:
// the log tells the story of a hostname two namespaces (or clusters) want without repeating
// it at every sync.
func (r *Recorder) standing(rep *controller.Report, claims map[string][]endpoint.SourceRef) {
	now := map[string]warning{}
	for host, f := range rep.Failed {
		msg := f.Err.Error()
		if f.Kind == controller.FailureAuthentication {
			msg = AuthenticationFailed + ": " + msg
		}
		for _, s := range claims[host] {
			now[s.UID+"/"+SyncFailed] = warning{msg: msg, ref: s}
		}
	}
	if rep.AuthFailed {
		for _, ep := range rep.Endpoints {
			for _, s := range ep.Sources {
				now[s.UID+"/"+SyncFailed] = warning{msg: AuthenticationFailed + ": " + rep.Err.Error(), ref: s}
			}
		}
	}
	// An object may lose several names, and have several problems: one warning of each
	// reason says them all.
	add := func(k string, w warning) {
		if prev, ok := now[k]; ok {
			prev.msg += "; " + w.msg
			now[k] = prev
			return
		}
		now[k] = w
	}
	for _, c := range rep.Conflicts {
		msg := fmt.Sprintf("hostname %s is held by %s; this claim is not written", c.Hostname, c.Winner)
		if c.Alias {
			msg = fmt.Sprintf("alias %s is held by %s; the alias is not written, the rest is", c.Hostname, c.Winner)
		}
		add(c.Loser.UID+"/"+HostnameConflict, warning{msg: msg, ref: c.Loser, host: c.Hostname})
	}
	for _, p := range rep.Problems {
		add(p.Source.UID+"/"+p.Reason, warning{msg: p.Message, ref: p.Source})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, w := range now {
		if r.last[k].msg == w.msg {
			continue
		}
		r.last[k] = w
		reason := k[strings.LastIndex(k, "/")+1:]
		r.rec.Event(objectRef(w.ref), corev1.EventTypeWarning, reason, w.msg)
		if reason == HostnameConflict {
			r.objectLog(w).Warn(w.msg)
		}
	}
	for k, w := range r.last {
		if _, ok := now[k]; !ok {
			delete(r.last, k)
			if strings.HasSuffix(k, "/"+HostnameConflict) {
				r.objectLog(w).Info("hostname conflict over: this claim is written, or no longer made")
			}
		}
	}
}

// clusterWide reports the conditions of the whole cluster (a namesake on the router, a mass
// deletion held) at warning level in the log and as a Warning on the RouterHostsConfig when
// one starts or changes, and once more when it ends.
func (r *Recorder) clusterWide(rep *controller.Report) {
	now := map[string]string{}
	if len(rep.Namesakes) > 0 {
		now[NamesakeCluster] = namesakeMessage(rep)
	}
	if rep.Braked != nil {
		now[MassDeletionHeld] = rep.Braked.Message()
	}
	if rep.Twin != nil {
		now[TwinInstallation] = rep.Twin.Message()
	}
	if len(rep.Former) > 0 {
		now[IdentityChanged] = identityMessage(rep)
	}
	if len(rep.Silent) > 0 {
		now[SilentCluster] = silentMessage(rep.Silent)
	}
	var ref *corev1.ObjectReference
	if r.clusterObject != nil {
		ref = r.clusterObject()
	}
	for _, reason := range []string{NamesakeCluster, MassDeletionHeld, TwinInstallation, IdentityChanged, SilentCluster} {
		msg, was := now[reason], r.cluster[reason]
		switch {
		case msg != "" && msg != was && reason == SilentCluster:
			for _, sc := range rep.Silent {
				r.log.WithFields(logrus.Fields{"reason": reason, "cluster": sc.Cluster, "cluster_id": sc.ClusterID, "entries": sc.Entries,
					"last_seen": sc.LastSeen.UTC().Format(time.RFC3339), "release": sc.ReleaseCommand()}).
					Warn("another cluster on the router has gone silent: if it is gone for good, run the release command; nothing is deleted until then")
			}
			if ref != nil {
				r.rec.Event(ref, corev1.EventTypeWarning, reason, msg)
			}
		case msg != "" && msg != was:
			r.log.WithField("reason", reason).Warn(msg)
			if ref != nil {
				r.rec.Event(ref, corev1.EventTypeWarning, reason, msg)
			}
		case msg == "" && was != "":
			end := map[string][2]string{
				NamesakeCluster:  {NamesakeClusterGone, "no other installation's entries carry this cluster's name any more"},
				MassDeletionHeld: {MassDeletionReleased, "the mass-deletion brake no longer holds: the deletion was confirmed, or its cause went away"},
				TwinInstallation: {TwinInstallationGone, "no other writer undoes this installation's writes any more"},
				IdentityChanged:  {IdentityTakenUp, "the entries of the identities this installation had before carry its identity now"},
				SilentCluster:    {SilentClusterGone, "no other installation on the router is silent any more: it wrote its heartbeat again, or it was released"},
			}[reason]
			r.log.WithField("reason", end[0]).Warn(end[1])
			if ref != nil {
				r.rec.Event(ref, corev1.EventTypeNormal, end[0], end[1])
			}
		}
	}
	r.cluster = now
}

// namesakeMessage names the other installations writing this cluster's name, and what to do.
// A namesake whose entries name objects of this cluster is a copy of it, or it under an
// identity it had before whose writer still runs: a name of each cluster's own would not tell
// them apart, so that advice is given only for the others.
func namesakeMessage(rep *controller.Report) string {
	// The identities alone, not their counts: the warning is repeated when it changes.
	var strangers, kin []string
	for _, n := range rep.Namesakes {
		if n.Kin > 0 {
			kin = append(kin, "cluster-id "+n.ID)
		} else {
			strangers = append(strangers, "cluster-id "+n.ID)
		}
	}
	msg := fmt.Sprintf("another installation writes this cluster's name %q on the router: %s; "+
		"its entries are never written by this one, and a name it holds is a conflict here", rep.Cluster, strings.Join(append(strangers, kin...), ", "))
	if len(strangers) > 0 {
		msg += fmt.Sprintf(". Give each cluster a name of its own (--cluster-name or spec.clusterName): %s", strings.Join(strangers, ", "))
	}
	if len(kin) > 0 {
		msg += fmt.Sprintf(". The entries of %s name objects of this cluster: a copy of this cluster (restored from an etcd backup, "+
			"a cloned VM), or an installation of it on another Lease, still writes them; pin --cluster-id on one of them "+
			"(to keep an identity, give it that one)", strings.Join(kin, ", "))
	}
	if rep.Unclaimed > 0 {
		msg += "; entries an earlier version wrote under this name that no object here wants are left alone, as they may be the namesake's (unclaimed_entries counts them; `release` removes them)"
	}
	return msg
}

// silentMessage names the silent installations, each with when it was last seen and the
// command that lets it go. Entry counts are left out, so that it is said again only when the
// set changes (the log line gives them).
func silentMessage(silent []registry.SilentCluster) string {
	parts := make([]string, 0, len(silent))
	for _, sc := range silent {
		parts = append(parts, fmt.Sprintf("cluster %s (cluster-id %s), last seen %s: `%s`", sc.Cluster, sc.ClusterID,
			sc.LastSeen.UTC().Format(time.RFC3339), sc.ReleaseCommand()))
	}
	return fmt.Sprintf("%d other cluster(s) on the router wrote no heartbeat for longer than the silent-cluster threshold; "+
		"if one is gone for good, let its entries go with its release command (nothing is deleted until then): %s", len(silent), strings.Join(parts, "; "))
}

// identityMessage says which identity this installation had and has, and how to keep the old.
func identityMessage(rep *controller.Report) string {
	parts := make([]string, 0, len(rep.Former))
	for _, n := range rep.Former {
		parts = append(parts, "cluster-id "+n.ID)
	}
	return fmt.Sprintf("this installation's identity changed to cluster-id %s (its leader Lease's name or namespace changed, "+
		"or leader election was turned off, or it was installed again under another release name or namespace): the entries of "+
		"cluster %q under %s name only objects of this cluster, so they are taken up in place, a few at each sync, with no gap. "+
		"To keep the identity it had, pin it: --cluster-id=%s (chart: clusterId)", rep.ClusterID, rep.Cluster, strings.Join(parts, ", "), rep.Former[0].ID)
}

func (r *Recorder) objectLog(w warning) logrus.FieldLogger {
	return r.log.WithFields(logrus.Fields{"hostname": w.host, "kind": w.ref.Kind, "namespace": w.ref.Namespace, "name": w.ref.Name})
}

// normalEvent sends a Normal event about a transition, within the per-sync cap.
func (r *Recorder) normalEvent(s endpoint.SourceRef, reason, msg string) {
	if r.normal >= MaxNormalPerSync {
		r.suppressed++
		return
	}
	r.normal++
	r.rec.Event(objectRef(s), corev1.EventTypeNormal, reason, msg)
}

func objectRef(s endpoint.SourceRef) *corev1.ObjectReference {
	apiVersion := s.Version
	if s.Group != "" {
		apiVersion = s.Group + "/" + s.Version
	}
	return &corev1.ObjectReference{APIVersion: apiVersion, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, UID: types.UID(s.UID)}
}
