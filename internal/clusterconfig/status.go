package clusterconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/router-hosts-operator/router-hosts-operator/api/v1alpha1"
	"github.com/router-hosts-operator/router-hosts-operator/controller"
)

// The reasons of the Ready and Synced conditions, beside ServerReachable's.
const (
	ReasonReady      = "Ready"
	ReasonSynced     = "Synced"
	ReasonSyncFailed = "SyncFailed"
	ReasonNoSyncYet  = "NoSyncYet"
	// ConditionSynced is True when the last sync wrote everything it planned.
	ConditionSynced = "Synced"
)

// lastSync is what the status needs of the last sync report.
type lastSync struct {
	seen       bool
	ended      time.Time
	step       controller.Step
	err        string
	authFailed bool
	failed     int
	entries    int
	pending    int
}

// statusWriter writes the RouterHostsConfig's status beside the loop: a sync only leaves its
// report, and the writer works out the status and writes it when it differs from what the
// object shows.
type statusWriter struct {
	w    *Watcher
	kick chan struct{}

	mu   sync.Mutex
	last lastSync
	// version is the server's, as asked of the endpoint versionOf; only the writer touches them.
	version, versionOf string
}

func newStatusWriter(w *Watcher) *statusWriter {
	return &statusWriter{w: w, kick: make(chan struct{}, 1)}
}

func (sw *statusWriter) poke() {
	select {
	case sw.kick <- struct{}{}:
	default:
	}
}

// Report takes a sync's outcome (controller.Reporter); it only counts and stores.
func (w *Watcher) Report(_ context.Context, rep *controller.Report) {
	l := lastSync{seen: true, ended: rep.Started.Add(rep.Duration), step: rep.Step, authFailed: rep.AuthFailed,
		failed: len(rep.Failed), pending: rep.Pending}
	if rep.Err != nil {
		l.err = rep.Err.Error()
	}
	for _, recs := range rep.Entries {
		l.entries += len(recs)
	}
	sw := w.status
	sw.mu.Lock()
	if rep.Step == controller.StepSource || rep.Step == controller.StepList {
		// Nothing was counted: keep the last counts.
		l.entries, l.pending = sw.last.entries, sw.last.pending
	}
	sw.last = l
	sw.mu.Unlock()
	sw.poke()
}

// RunStatus writes the object's status until ctx ends; the replica that leads runs it.
func (w *Watcher) RunStatus(ctx context.Context) {
	if !w.writesStatus() {
		return
	}
	w.status.poke()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.status.kick:
		}
		if err := w.status.write(ctx); err != nil && ctx.Err() == nil {
			w.log.WithError(err).Warn("writing the RouterHostsConfig status")
		}
	}
}

// write writes the status the object should show, if it shows another.
func (sw *statusWriter) write(ctx context.Context) error {
	w := sw.w
	w.mu.Lock()
	obj, applied, waiting, problem := w.obj, w.applied, w.waiting, w.problem
	w.mu.Unlock()
	if obj == nil {
		return nil
	}
	sw.mu.Lock()
	last := sw.last
	sw.mu.Unlock()
	if w.opts.Version != nil && last.seen && last.step == controller.StepDone && sw.versionOf != applied.Endpoint {
		// Asked once per endpoint, here beside the loop, never by a sync.
		if v, err := w.opts.Version(ctx); err == nil {
			sw.version, sw.versionOf = v, applied.Endpoint
		}
	}
	want := desiredStatus(obj, applied, waiting, problem, last, time.Now())
	if sw.versionOf == applied.Endpoint {
		want.ServerVersion = sw.version
	}
	if sameStatus(&obj.Status, &want, applied.Interval) {
		return nil
	}
	body, err := statusPatch(&obj.Status, &want)
	if err != nil {
		return err
	}
	_, err = w.opts.Status.Resource(v1alpha1.RouterHostsConfigResource).Patch(ctx, obj.Name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("RouterHostsConfig %s: %w", obj.Name, err)
	}
	return nil
}

// desiredStatus is the status for the object given the settings in use (none while waiting),
// the reason the object's are not in use (nil when they are) and the last sync.
func desiredStatus(obj *v1alpha1.RouterHostsConfig, applied Settings, waiting bool, problem error, last lastSync, now time.Time) v1alpha1.RouterHostsConfigStatus {
	// Without a router the operator syncs nothing; the object says why and what names one.
	waiting = waiting || applied.Endpoint == "" && !applied.NoServer
	if waiting {
		applied.Endpoint = ""
	}
	st := v1alpha1.RouterHostsConfigStatus{ObservedGeneration: obj.Generation, Endpoint: applied.Endpoint,
		Entries: last.entries, PendingDeletions: last.pending, LastSyncTime: obj.Status.LastSyncTime, ServerVersion: obj.Status.ServerVersion}
	if last.seen && last.step == controller.StepDone {
		t := metav1.NewTime(last.ended.UTC().Truncate(time.Second))
		st.LastSyncTime = &t
	}
	cond := func(typ string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: obj.Generation}
	}
	var reach, synced metav1.Condition
	switch {
	case !last.seen:
		reach = metav1.Condition{Type: v1alpha1.ConditionServerReachable, Status: metav1.ConditionUnknown, Reason: ReasonNoSyncYet, Message: "no sync has run yet", ObservedGeneration: obj.Generation}
		synced = metav1.Condition{Type: ConditionSynced, Status: metav1.ConditionUnknown, Reason: ReasonNoSyncYet, Message: "no sync has run yet", ObservedGeneration: obj.Generation}
	case last.authFailed:
		reach = cond(v1alpha1.ConditionServerReachable, false, v1alpha1.ReasonAuthenticationFailed, last.err)
		synced = cond(ConditionSynced, false, ReasonSyncFailed, last.err)
	case last.step == controller.StepList || last.step == controller.StepApply:
		reach = cond(v1alpha1.ConditionServerReachable, false, v1alpha1.ReasonUnreachable, last.err)
		synced = cond(ConditionSynced, false, ReasonSyncFailed, last.err)
	case last.step == controller.StepSource:
		reach = cond(v1alpha1.ConditionServerReachable, true, v1alpha1.ReasonConnected, "")
		synced = cond(ConditionSynced, false, ReasonSyncFailed, last.err)
	default:
		reach = cond(v1alpha1.ConditionServerReachable, true, v1alpha1.ReasonConnected, "router-hosts at "+applied.Endpoint+" answers")
		if last.failed > 0 {
			synced = cond(ConditionSynced, false, ReasonSyncFailed, fmt.Sprintf("%d hostnames were not written; see the Warning events of their objects", last.failed))
		} else {
			synced = cond(ConditionSynced, true, ReasonSynced, "every wanted entry is on the server")
		}
	}
	switch {
	case waiting:
		reason, why, then := v1alpha1.ReasonNoRouter, "no router-hosts endpoint: set spec.server.endpoint and spec.server.tlsSecretRef",
			"the operator waits for a router and syncs nothing until then"
		if problem != nil {
			why = problem.Error()
			if !IsNoRouter(problem) {
				reason, then = v1alpha1.ReasonInvalidConfig, "the operator syncs nothing until this RouterHostsConfig can be used (it does not fall back to the flags)"
			}
		}
		reach = cond(v1alpha1.ConditionServerReachable, false, reason, why+"; "+then)
	case problem != nil && applied.Endpoint == "":
		reach = cond(v1alpha1.ConditionServerReachable, false, v1alpha1.ReasonInvalidConfig, problem.Error())
	}
	var ready metav1.Condition
	switch {
	case waiting:
		ready = cond(v1alpha1.ConditionReady, false, reach.Reason, reach.Message)
	case problem != nil:
		ready = cond(v1alpha1.ConditionReady, false, v1alpha1.ReasonInvalidConfig, problem.Error()+"; the last good configuration stays in use")
	case reach.Status != metav1.ConditionTrue:
		ready = cond(v1alpha1.ConditionReady, false, reach.Reason, reach.Message)
	case synced.Status != metav1.ConditionTrue:
		ready = cond(v1alpha1.ConditionReady, false, synced.Reason, synced.Message)
	default:
		ready = cond(v1alpha1.ConditionReady, true, ReasonReady, "configuration applied, server reachable, last sync complete")
	}
	st.Conditions = v1alpha1.SetConditions(obj.Status.Conditions, metav1.NewTime(now.UTC().Truncate(time.Second)), ready, reach, synced)
	return st
}

// statusPatch is the merge patch that turns the status have into want. A field want leaves
// out is sent as null, since a merge patch leaves a field it does not name as it is: the
// endpoint of a waiting operator is cleared, not left naming a router it does not use.
func statusPatch(have, want *v1alpha1.RouterHostsConfigStatus) ([]byte, error) {
	fields := func(st *v1alpha1.RouterHostsConfigStatus) (map[string]any, error) {
		raw, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		return m, json.Unmarshal(raw, &m)
	}
	h, err := fields(have)
	if err != nil {
		return nil, err
	}
	w, err := fields(want)
	if err != nil {
		return nil, err
	}
	for k := range h {
		if _, ok := w[k]; !ok {
			w[k] = nil
		}
	}
	return json.Marshal(map[string]any{"status": w})
}

// sameStatus reports whether the object already shows want. The last sync's time alone is
// refreshed only once per interval, so a quiet operator writes one status an interval, not
// one a sync.
func sameStatus(have, want *v1alpha1.RouterHostsConfigStatus, interval time.Duration) bool {
	a, b := *have, *want
	stale := false
	switch {
	case a.LastSyncTime == nil && b.LastSyncTime != nil:
		stale = true
	case a.LastSyncTime != nil && b.LastSyncTime != nil:
		stale = b.LastSyncTime.Sub(a.LastSyncTime.Time) >= interval
	}
	a.LastSyncTime, b.LastSyncTime = nil, nil
	// As JSON, times compare as the apiserver stores them, whatever their location.
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return !stale && errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// Flush writes the status once, for --once, which has no loop beside it.
func (w *Watcher) Flush(ctx context.Context) {
	if !w.writesStatus() {
		return
	}
	if err := w.status.write(ctx); err != nil {
		w.log.WithError(err).Warn("writing the RouterHostsConfig status")
	}
}

// writesStatus reports whether there is a status to write: the CRD is served and a status
// client was given.
func (w *Watcher) writesStatus() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.served && w.opts.Status != nil
}
