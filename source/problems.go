package source

import (
	"fmt"
	"sync"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// The reasons of the Warning events sources raise about bad input.
const (
	ReasonInvalidHostname   = "InvalidHostname"
	ReasonInvalidAnnotation = "InvalidAnnotation"
	ReasonNoAddress         = "NoAddress"
)

// Problem is something wrong with one object (endpoint.Problem, the plain data the controller
// hands its observers).
type Problem = endpoint.Problem

func invalidHostname(format string, args ...any) Problem {
	return Problem{Reason: ReasonInvalidHostname, Message: fmt.Sprintf(format, args...)}
}

func invalidAnnotation(format string, args ...any) Problem {
	return Problem{Reason: ReasonInvalidAnnotation, Message: fmt.Sprintf(format, args...)}
}

// Warner receives the problems of an object; the operator turns them into Kubernetes Warning
// events. A source never writes itself: it only hands problems over.
type Warner interface {
	Warn(ref endpoint.SourceRef, reason, message string)
}

// reporter logs an object's problems (and hands them to the Warner) once per version of the
// object, not on every sync: an unchanged bad object is reported once.
type reporter struct {
	log  logrus.FieldLogger
	warn Warner
	mu   sync.Mutex
	seen map[types.UID]string // UID → resourceVersion last reported
	// current are the problems of each object as of the last listing, for observers that
	// report an object's state (a HostMapping's status) rather than transitions.
	current map[string][]Problem
}

func newReporter(log logrus.FieldLogger, warn Warner) *reporter {
	return &reporter{log: log, warn: warn, seen: map[types.UID]string{}, current: map[string][]Problem{}}
}

// problems returns a copy of the current problems by object UID.
func (r *reporter) problems() map[string][]Problem {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]Problem, len(r.current))
	for k, v := range r.current {
		out[k] = v
	}
	return out
}

func (r *reporter) report(ref endpoint.SourceRef, version string, problems []Problem) {
	uid := types.UID(ref.UID)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(problems) == 0 {
		delete(r.seen, uid)
		delete(r.current, ref.UID)
		return
	}
	r.current[ref.UID] = problems
	if r.seen[uid] == version {
		return
	}
	r.seen[uid] = version
	for _, p := range problems {
		r.log.WithFields(logrus.Fields{"kind": ref.Kind, "namespace": ref.Namespace, "name": ref.Name, "reason": p.Reason}).Warn(p.Message)
		if r.warn != nil {
			r.warn.Warn(ref, p.Reason, p.Message)
		}
	}
}

// forgetExcept drops memory of objects that are gone, keeping the maps bounded; present says
// which objects were listed.
func (r *reporter) forgetExcept(present func(types.UID) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid := range r.seen {
		if !present(uid) {
			delete(r.seen, uid)
		}
	}
	for uid := range r.current {
		if !present(types.UID(uid)) {
			delete(r.current, uid)
		}
	}
}
