// Package status writes the status of HostMappings after each sync. It is the only part of the
// operator that writes to the cluster, and it writes only when a status really changes, so a
// steady cluster makes no status writes however many syncs run.
package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/router-hosts-operator/router-hosts-operator/controller"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
	"github.com/router-hosts-operator/router-hosts-operator/source"
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
)

// Objects lists HostMappings from a cache (the HostMapping source).
type Objects interface {
	Objects() ([]*unstructured.Unstructured, error)
}

// HostMappings writes HostMapping status.
type HostMappings struct {
	objects  Objects
	client   dynamic.Interface
	resolver *source.Resolver
	log      logrus.FieldLogger
	now      func() time.Time
}

// NewHostMappings returns a status writer for the HostMappings objects lists.
func NewHostMappings(objects Objects, client dynamic.Interface, resolver *source.Resolver, log logrus.FieldLogger) *HostMappings {
	return &HostMappings{objects: objects, client: client, resolver: resolver, log: log, now: time.Now}
}

// state is the part of a status that decides whether to write.
type state struct {
	synced  bool
	id      string
	gen     int64
	reason  string
	message string
}

// Report computes every HostMapping's status from the sync and writes those that changed.
func (h *HostMappings) Report(ctx context.Context, r *controller.Report) {
	objs, err := h.objects.Objects()
	if err != nil {
		h.log.WithError(err).Warn("listing HostMappings for status")
		return
	}
	desired := map[string]*endpoint.Endpoint{}
	for _, ep := range r.Desired {
		desired[ep.Hostname] = ep
	}
	dropped := map[string][]string{}
	for _, p := range r.Problems {
		dropped[p.Source.UID] = append(dropped[p.Source.UID], p.Message)
	}
	for _, u := range objs {
		want := h.compute(u, r, desired, dropped[string(u.GetUID())])
		if want == current(u) {
			continue
		}
		if err := h.write(ctx, u, want); err != nil {
			h.log.WithError(err).WithFields(logrus.Fields{"namespace": u.GetNamespace(), "name": u.GetName()}).Warn("writing HostMapping status")
		}
	}
}

func (h *HostMappings) compute(u *unstructured.Unstructured, r *controller.Report, desired map[string]*endpoint.Endpoint, dropped []string) state {
	prev := current(u)
	st := state{gen: u.GetGeneration(), id: prev.id}
	eps, problems := source.HostMappingEndpoints(u, h.resolver)
	switch {
	case len(eps) == 0:
		st.reason, st.message, st.id = ReasonValidationFailed, joinProblems(problems), ""
		return st
	case r.Stage == controller.StageList && r.AuthFailed:
		st.reason, st.message = ReasonAuthenticationFailed, r.Err.Error()
		return st
	case r.Stage == controller.StageList:
		st.reason, st.message = ReasonServerUnreachable, r.Err.Error()
		return st
	case r.Stage == controller.StageSource:
		return prev // a source failed: nothing new is known about this object
	}
	ep := eps[0]
	d := desired[ep.Hostname]
	if d == nil || !claims(d, string(u.GetUID())) {
		st.reason, st.id = ReasonConflict, ""
		st.message = fmt.Sprintf("hostname %s is claimed by another object or cluster", ep.Hostname)
		return st
	}
	if err := r.Failed[ep.Hostname]; err != nil {
		st.reason, st.message = ReasonWriteFailed, err.Error()
		switch {
		case errors.Is(err, provider.ErrAuthentication):
			st.reason = ReasonAuthenticationFailed
		case status.Code(err) == codes.Unavailable:
			st.reason = ReasonServerUnreachable
		}
		return st
	}
	entries := r.Entries[ep.Hostname]
	if ep.Held() || len(entries) == 0 {
		st.reason, st.message = ReasonNoAddress, "no address: set spec.ipAddress or configure --ip-resolution"
		return st
	}
	if len(dropped) > 0 {
		// The entry is written without the refused part: not what the spec asks for.
		st.id, st.reason = entries[0].ID, ReasonValidationFailed
		st.message = strings.Join(dropped, "; ") + "; the rest is synced"
		return st
	}
	st.synced, st.id, st.reason, st.message = true, entries[0].ID, ReasonSuccess, "Host synced to router-hosts"
	if len(problems) > 0 {
		st.message += "; " + joinProblems(problems)
	}
	return st
}

func claims(ep *endpoint.Endpoint, uid string) bool {
	for _, s := range ep.Sources {
		if s.UID == uid {
			return true
		}
	}
	return false
}

func joinProblems(p []source.Problem) string {
	out := ""
	for i, s := range p {
		if i > 0 {
			out += "; "
		}
		out += s.Message
	}
	return out
}

// current reads the decisive part of the object's status.
func current(u *unstructured.Unstructured) state {
	var st state
	st.synced, _, _ = unstructured.NestedBool(u.Object, "status", "synced")
	st.id, _, _ = unstructured.NestedString(u.Object, "status", "routerHostsId")
	st.gen, _, _ = unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Synced" {
			st.reason, _ = m["reason"].(string)
			st.message, _ = m["message"].(string)
		}
	}
	return st
}

// write updates the status subresource. A conflict means the object changed meanwhile; the
// sync that change triggers writes the status again.
func (h *HostMappings) write(ctx context.Context, u *unstructured.Unstructured, st state) error {
	now := h.now().UTC().Format(time.RFC3339)
	prev := current(u)
	transition := now
	if conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); prev.synced == st.synced {
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Synced" {
				if t, ok := m["lastTransitionTime"].(string); ok {
					transition = t
				}
			}
		}
	}
	condStatus := "False"
	if st.synced {
		condStatus = "True"
	}
	obj := u.DeepCopy()
	obj.Object["status"] = map[string]any{
		"synced":             st.synced,
		"routerHostsId":      st.id,
		"lastSyncTime":       now,
		"observedGeneration": st.gen,
		"conditions": []any{map[string]any{
			"type": "Synced", "status": condStatus, "reason": st.reason, "message": st.message,
			"observedGeneration": st.gen, "lastTransitionTime": transition,
		}},
	}
	_, err := h.client.Resource(source.HostMappingGVR).Namespace(u.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating status of HostMapping %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	h.log.WithFields(logrus.Fields{"namespace": u.GetNamespace(), "name": u.GetName(), "reason": st.reason}).Debug("HostMapping status written")
	return nil
}
