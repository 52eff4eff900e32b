// Package status writes the status of HostMappings. It runs beside the sync loop, never in
// it: a sync hands over the status each object should have and moves on, and a writer of its
// own, with its own client and rate limit, writes the latest wanted status of each object,
// and only what differs, so a steady cluster makes no status writes however many syncs run
// and thousands of pending writes never delay a change reaching the router.
package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// The reasons of the Synced condition.
const (
	ReasonSuccess           = "Success"
	ReasonValidationFailed  = "ValidationFailed"
	ReasonServerUnreachable = "ServerUnreachable"
	ReasonConflict          = "Conflict"
	ReasonNoAddress         = "NoAddress"
	ReasonWriteFailed       = "WriteFailed"
	// ReasonAuthenticationFailed: router-hosts refused the TLS authentication.
	ReasonAuthenticationFailed = "AuthenticationFailed"
	// ReasonNotPermitted: the tenancy rules do not let the namespace claim a name.
	ReasonNotPermitted = "NotPermitted"
	// ReasonOverBudget: the object or its namespace is over its budget; what it has stays.
	ReasonOverBudget = "OverBudget"
)

// statusReason is a refusal in the status's words: a part of an object's claim the registry
// did not write, a problem or an alias another holds.
type statusReason struct {
	reason, message string
}

// refusalsOf are the registry's refusals of each object, by UID, in the status's reasons.
func refusalsOf(r *controller.Report) map[string][]statusReason {
	out := map[string][]statusReason{}
	for _, p := range r.Problems {
		reason := ReasonValidationFailed
		switch p.Reason {
		case registry.ReasonNameNotPermitted:
			reason = ReasonNotPermitted
		case registry.ReasonOverBudget:
			reason = ReasonOverBudget
		}
		out[p.Source.UID] = append(out[p.Source.UID], statusReason{reason, p.Message})
	}
	for _, c := range r.Conflicts {
		if c.Alias {
			out[c.Loser.UID] = append(out[c.Loser.UID], statusReason{ReasonConflict, fmt.Sprintf("alias %s is held by %s", c.Hostname, c.Winner)})
		}
	}
	return out
}

func joinRefusals(rs []statusReason) string {
	msgs := make([]string, len(rs))
	for i, r := range rs {
		msgs[i] = r.message
	}
	return strings.Join(msgs, "; ")
}

// Objects reads HostMappings from a cache (the HostMapping source).
type Objects interface {
	Objects() ([]*v1alpha1.HostMapping, error)
	Object(namespace, name string) (*v1alpha1.HostMapping, error)
}

// HostMappings computes and writes HostMapping status.
type HostMappings struct {
	objects Objects
	client  dynamic.NamespaceableResourceInterface
	log     logrus.FieldLogger
	now     func() time.Time

	// digesting serialises digests, so that reports are digested in the order they came.
	digesting sync.Mutex

	mu sync.Mutex
	// report is the latest sync's report, not digested yet; a newer one replaces it.
	report *controller.Report
	// pending is the latest wanted status of each object not yet written; a newer sync's
	// replaces an older one. queue holds its keys in the order they became pending.
	pending map[types.NamespacedName]state
	queue   []types.NamespacedName
	// writing is the key being written, if any; changed wakes the writer.
	writing *types.NamespacedName
	changed chan struct{}
	// sent is the status last handed to the apiserver for each object, until the cache shows
	// it: a newer wanted status is compared with it, not with a cache that has not caught up
	// (or a write still in flight), so a newer status is never skipped.
	sent map[types.NamespacedName]state
	// answers is the check of the router's DNS, nil without one (UseAnswers); last is the
	// last report digested while it checks, for Refresh.
	answers Answers
	last    *controller.Report
}

// NewHostMappings returns a status writer for the HostMappings objects reads, written through
// resource (the HostMapping resource of a client with a rate limiter of its own). Run writes;
// Report only hands statuses over.
func NewHostMappings(objects Objects, resource dynamic.NamespaceableResourceInterface, log logrus.FieldLogger) *HostMappings {
	return &HostMappings{objects: objects, client: resource, log: log, now: time.Now,
		pending: map[types.NamespacedName]state{}, sent: map[types.NamespacedName]state{}, changed: make(chan struct{}, 1)}
}

// state is the part of a status that decides whether to write.
type state struct {
	synced  bool
	id      string
	gen     int64
	reason  string
	message string
	// addresses are the ones the object resolved to, sorted and comma-joined; ready says the
	// Ready condition is written.
	addresses string
	ready     bool
	// answering is the Answering condition's status, "" for none (the router's DNS is not
	// checked), with its reason and message.
	answering     metav1.ConditionStatus
	answerReason  string
	answerMessage string
}

// Report hands the sync's report over and returns at once: the writer works out the statuses
// beside the loop. A report not digested yet is replaced by a newer one.
func (h *HostMappings) Report(_ context.Context, r *controller.Report) {
	h.mu.Lock()
	h.report = r
	h.mu.Unlock()
	h.signal()
}

// digestLatest computes every HostMapping's status from the latest report, if one is waiting,
// and queues those that differ from what the object shows. It reads only the cache.
func (h *HostMappings) digestLatest() {
	h.digesting.Lock()
	defer h.digesting.Unlock()
	h.mu.Lock()
	r := h.report
	h.report = nil
	if r != nil {
		h.last = nil
		if h.answers != nil && h.answers.Server() != "" {
			h.last = r
		}
	}
	h.mu.Unlock()
	if r == nil {
		return
	}
	objs, err := h.objects.Objects()
	if err != nil {
		h.log.WithError(err).Warn("listing HostMappings for status")
		return
	}
	desired := map[string]*endpoint.Endpoint{}
	for _, ep := range r.Desired {
		desired[ep.Hostname] = ep
	}
	dropped := refusalsOf(r)
	wants := make([]state, len(objs))
	for i, hm := range objs {
		wants[i] = h.compute(hm, r, desired, dropped[string(hm.UID)])
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, hm := range objs {
		key := types.NamespacedName{Namespace: hm.Namespace, Name: hm.Name}
		shown := current(hm)
		if sent, ok := h.sent[key]; ok {
			if sent == shown && (h.writing == nil || *h.writing != key) {
				delete(h.sent, key) // the cache has caught up
			} else {
				shown = sent
			}
		}
		_, queued := h.pending[key]
		if wants[i] == shown && !queued {
			continue
		}
		h.pending[key] = wants[i]
		if !queued {
			h.queue = append(h.queue, key)
		}
	}
}

func (h *HostMappings) signal() {
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// Pending is the number of statuses waiting to be written, the latest report digested.
func (h *HostMappings) Pending() int {
	h.digestLatest()
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queue)
}

// Run writes pending statuses, oldest first, each as the latest sync wanted it, until ctx
// ends; then it forgets what is pending, so that a replica that loses the leadership stops
// writing and one that regains it starts from its next sync.
func (h *HostMappings) Run(ctx context.Context) {
	defer func() {
		h.mu.Lock()
		h.report, h.pending, h.queue, h.writing, h.sent = nil, map[types.NamespacedName]state{}, nil, nil, map[types.NamespacedName]state{}
		h.last = nil
		h.mu.Unlock()
	}()
	for {
		h.digestLatest()
		h.mu.Lock()
		if len(h.queue) == 0 {
			h.writing = nil
			h.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-h.changed:
				continue
			}
		}
		key := h.queue[0]
		h.queue = h.queue[1:]
		want := h.pending[key]
		delete(h.pending, key)
		h.writing = &key
		h.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		hm, err := h.objects.Object(key.Namespace, key.Name)
		h.mu.Lock()
		shown, sent := h.sent[key]
		h.mu.Unlock()
		if !sent && hm != nil {
			shown = current(hm)
		}
		if err == nil && hm != nil && shown != want {
			h.mu.Lock()
			h.sent[key] = want
			h.mu.Unlock()
			if err = h.write(ctx, hm, want); err != nil {
				// Not written: compare with what the object shows again.
				h.mu.Lock()
				delete(h.sent, key)
				h.mu.Unlock()
			}
		}
		if err != nil && !errors.Is(err, errNotWritten) && ctx.Err() == nil {
			h.log.WithError(err).WithFields(logrus.Fields{"namespace": key.Namespace, "name": key.Name}).Warn("writing HostMapping status")
		}
	}
}

// Flush waits until every pending status is written (or ctx ends); --once uses it so the
// process does not exit with statuses unwritten.
func (h *HostMappings) Flush(ctx context.Context) error {
	for {
		h.digestLatest()
		h.mu.Lock()
		idle := len(h.queue) == 0 && h.writing == nil && h.report == nil
		h.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for HostMapping statuses: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// compute is the status hm should have after r: Synced and Ready, and Answering while the
// router's DNS is checked.
func (h *HostMappings) compute(hm *v1alpha1.HostMapping, r *controller.Report, desired map[string]*endpoint.Endpoint, dropped []statusReason) state {
	st, known := h.computeSynced(hm, r, desired, dropped)
	if !known {
		return st // nothing new is known of the object: its whole status stays
	}
	st.answering, st.answerReason, st.answerMessage = h.answering(hm, r, st)
	if prev := current(hm); st.answerReason == ReasonChecking && prev.answering != "" && prev.answerReason != ReasonChecking {
		// A name not asked yet says nothing new: the last finding stands until the check gives
		// one, so that a restart does not write every status twice (Checking, then the same
		// finding again).
		st.answering, st.answerReason, st.answerMessage = prev.answering, prev.answerReason, prev.answerMessage
	}
	return st
}

// computeSynced is the Synced part of the status; known is false when the report says nothing
// new of hm, whose status then stays as it is.
func (h *HostMappings) computeSynced(hm *v1alpha1.HostMapping, r *controller.Report, desired map[string]*endpoint.Endpoint, dropped []statusReason) (_ state, known bool) {
	prev := current(hm)
	st := state{gen: hm.Generation, id: prev.id, ready: true}
	if r.Step == controller.StepSource {
		return prev, false // a source failed: nothing new is known about this object
	}
	obj, known := r.Objects[string(hm.UID)]
	eps, problems := obj.Endpoints, obj.Problems
	if !known || (len(eps) > 0 && eps[0].Sources[0].Generation != hm.Generation) {
		// Created or edited after the sync read its sources: the sync that change starts
		// says what its status is.
		return prev, false
	}
	switch {
	case len(eps) == 0:
		st.reason, st.message, st.id = ReasonValidationFailed, joinProblems(problems), ""
		return st, true
	case r.Step == controller.StepList && r.AuthFailed:
		st.reason, st.message = ReasonAuthenticationFailed, r.Err.Error()
		return st, true
	case r.Step == controller.StepList:
		st.reason, st.message = ReasonServerUnreachable, r.Err.Error()
		return st, true
	}
	ep := eps[0]
	d := desired[ep.Hostname]
	if d == nil || !claims(d, string(hm.UID)) {
		// A whole claim the tenancy rules or a budget turned down says so; otherwise another
		// holds the hostname.
		for _, f := range dropped {
			if f.reason == ReasonNotPermitted || f.reason == ReasonOverBudget {
				st.reason, st.id, st.message = f.reason, "", joinRefusals(dropped)
				return st, true
			}
		}
		st.reason, st.id = ReasonConflict, ""
		st.message = fmt.Sprintf("hostname %s is claimed by another object or cluster", ep.Hostname)
		return st, true
	}
	if f, failed := r.Failed[ep.Hostname]; failed {
		st.message = f.Err.Error()
		switch f.Kind {
		case controller.FailureAuthentication:
			st.reason = ReasonAuthenticationFailed
		case controller.FailureUnreachable:
			st.reason = ReasonServerUnreachable
		default:
			st.reason = ReasonWriteFailed
		}
		return st, true
	}
	entries := r.Entries[ep.Hostname]
	if ep.NoAddress() || len(entries) == 0 {
		st.reason, st.message = ReasonNoAddress, "no address: set spec.ipAddress or configure --ip-resolution"
		return st, true
	}
	st.addresses = strings.Join(endpoint.SortedUnique(ep.Targets), ",")
	if len(dropped) > 0 {
		// The entry is written without the refused part: not what the spec asks for.
		st.id, st.reason, st.message = entries[0].ID, dropped[0].reason, joinRefusals(dropped)
		if st.reason != ReasonOverBudget { // over its budget, nothing of the object changes
			st.message += "; the rest is synced"
		}
		return st, true
	}
	st.synced, st.id, st.reason, st.message = true, entries[0].ID, ReasonSuccess, "Host synced to router-hosts"
	if len(problems) > 0 {
		st.message += "; " + joinProblems(problems)
	}
	return st, true
}

func claims(ep *endpoint.Endpoint, uid string) bool {
	for _, s := range ep.Sources {
		if s.UID == uid {
			return true
		}
	}
	return false
}

func joinProblems(p []endpoint.Problem) string {
	out := ""
	for i, s := range p {
		if i > 0 {
			out += "; "
		}
		out += s.Message
	}
	return out
}

// current is the decisive part of the object's status.
func current(hm *v1alpha1.HostMapping) state {
	st := hm.Status
	out := state{synced: st.Synced, id: st.RouterHostsID, gen: st.ObservedGeneration, addresses: strings.Join(st.Addresses, ","),
		ready: meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady) != nil}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionSynced); c != nil {
		out.reason, out.message = c.Reason, c.Message
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAnswering); c != nil {
		out.answering, out.answerReason, out.answerMessage = c.Status, c.Reason, c.Message
	}
	return out
}

// errNotWritten says the object changed or went meanwhile; the sync that change triggers
// writes the status again.
var errNotWritten = errors.New("object changed meanwhile; status not written")

// write updates the status subresource. The object sent carries only the identity, the
// version it was read at and the status: the apiserver takes nothing else from a status update.
func (h *HostMappings) write(ctx context.Context, hm *v1alpha1.HostMapping, st state) error {
	now := metav1.NewTime(h.now().UTC().Truncate(time.Second))
	status := v1alpha1.HostMappingStatus{Synced: st.synced, RouterHostsID: st.id, LastSyncTime: &now, ObservedGeneration: st.gen,
		Addresses: []string{}}
	if st.addresses != "" {
		status.Addresses = strings.Split(st.addresses, ",")
	}
	condStatus := metav1.ConditionFalse
	if st.synced {
		condStatus = metav1.ConditionTrue
	}
	// Ready is Synced under kstatus's name: Current when True at the observed generation,
	// InProgress otherwise.
	conds := []metav1.Condition{
		{Type: v1alpha1.ConditionSynced, Status: condStatus, Reason: st.reason, Message: st.message, ObservedGeneration: st.gen},
		{Type: v1alpha1.ConditionReady, Status: condStatus, Reason: st.reason, Message: st.message, ObservedGeneration: st.gen}}
	if st.answering != "" {
		conds = append(conds, metav1.Condition{Type: v1alpha1.ConditionAnswering, Status: st.answering, Reason: st.answerReason,
			Message: st.answerMessage, ObservedGeneration: st.gen})
	}
	status.Conditions = v1alpha1.SetConditions(hm.Status.Conditions, now, conds...)
	body, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return fmt.Errorf("converting the status of HostMapping %s/%s: %w", hm.Namespace, hm.Name, err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.HostMappingKind,
		"metadata": map[string]any{"name": hm.Name, "namespace": hm.Namespace, "resourceVersion": hm.ResourceVersion},
		"status":   body,
	}}
	_, err = h.client.Namespace(hm.Namespace).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return errNotWritten
	}
	if err != nil {
		return fmt.Errorf("updating status of HostMapping %s/%s: %w", hm.Namespace, hm.Name, err)
	}
	h.log.WithFields(logrus.Fields{"namespace": hm.Namespace, "name": hm.Name, "reason": st.reason}).Debug("HostMapping status written")
	return nil
}
