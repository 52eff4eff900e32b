package plan

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// Action says what a Change does, in the words a user reads in dry-run output and metrics.
type Action string

// The actions. The plan produces Create, Update and Delete; the registry turns some of them
// into Adopt, Mark, Unmark and Release, which the provider sends as UpdateHost.
const (
	Create  Action = "create"
	Update  Action = "update"
	Adopt   Action = "adopt"
	Mark    Action = "mark"
	Unmark  Action = "unmark"
	Delete  Action = "delete"
	Release Action = "release"
)

// Change is one write to the router-hosts server. New alone is a create, Old and New an
// update of Old.ID (only the fields that differ are sent), Old alone a delete.
type Change struct {
	Action Action
	Old    *endpoint.Record
	New    *endpoint.Record
	// Duplicate, on a Delete of an entry the operator created: another entry of the hostname
	// serves the same address after this plan (it kept it, or takes it over here), so the
	// entry goes at once instead of after a grace period; waiting would leave two lines for one
	// (hostname, address), since UpdateHost does not check uniqueness.
	Duplicate bool
	// Due, on a Mark, is when the marked entry falls due for deletion: the mark's time and the
	// entry's grace period, as the registry decided them.
	Due time.Time
}

// Fields returns what an update changes; creates and deletes return 0.
func (c *Change) Fields() endpoint.Fields {
	if c.Old == nil || c.New == nil {
		return 0
	}
	return endpoint.Diff(c.Old, c.New)
}

// Hostname is the (normalised) hostname the change concerns, for sorting and logs: the one
// the operator manages, not the user's spelling a release gives back.
func (c *Change) Hostname() string {
	if c.New != nil && c.Action != Release {
		return c.New.Hostname
	}
	return c.Old.Hostname
}

// String renders one readable line, as --dry-run prints it.
func (c *Change) String() string {
	switch {
	case c.Old == nil:
		return fmt.Sprintf("%-7s %s %s aliases=[%s] tags=[%s]", c.Action, c.New.Hostname, c.New.IP,
			strings.Join(c.New.Aliases, ","), strings.Join(c.New.Tags, ","))
	case c.New == nil && c.Duplicate:
		return fmt.Sprintf("%-7s %s %s id=%s (duplicate)", c.Action, c.Old.Hostname, c.Old.IP, c.Old.ID)
	case c.New == nil:
		return fmt.Sprintf("%-7s %s %s id=%s", c.Action, c.Old.Hostname, c.Old.IP, c.Old.ID)
	}
	var parts []string
	fs := c.Fields()
	if fs.Has(endpoint.FieldIP) {
		parts = append(parts, fmt.Sprintf("ip %s→%s", c.Old.IP, c.New.IP))
	}
	if fs.Has(endpoint.FieldHostname) {
		parts = append(parts, fmt.Sprintf("hostname %s→%s", c.Old.Hostname, c.New.Hostname))
	}
	if fs.Has(endpoint.FieldComment) {
		parts = append(parts, fmt.Sprintf("comment %q→%q", c.Old.Comment, c.New.Comment))
	}
	if fs.Has(endpoint.FieldAliases) {
		parts = append(parts, fmt.Sprintf("aliases [%s]→[%s]", strings.Join(c.Old.Aliases, ","), strings.Join(c.New.Aliases, ",")))
	}
	if fs.Has(endpoint.FieldTags) {
		add, del := setDelta(c.Old.Tags, c.New.Tags)
		if len(add) > 0 {
			parts = append(parts, fmt.Sprintf("tags +[%s]", strings.Join(add, ",")))
		}
		if len(del) > 0 {
			parts = append(parts, fmt.Sprintf("tags -[%s]", strings.Join(del, ",")))
		}
	}
	return fmt.Sprintf("%-7s %s %s id=%s %s", c.Action, c.Old.Hostname, c.Old.IP, c.Old.ID, strings.Join(parts, " "))
}

// setDelta returns what is in b but not a, and what is in a but not b, both sorted.
func setDelta(a, b []string) (added, removed []string) {
	in := func(s []string) map[string]bool {
		m := make(map[string]bool, len(s))
		for _, x := range s {
			m[x] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	for _, x := range endpoint.SortedUnique(b) {
		if !ma[x] {
			added = append(added, x)
		}
	}
	for _, x := range endpoint.SortedUnique(a) {
		if !mb[x] {
			removed = append(removed, x)
		}
	}
	return added, removed
}

// Result is what became of one Change. A provider returns one per change, at the change's
// index, so that a caller pairs changes[i] with results[i]: the provider never writes into the
// changes, and a copy of them stays valid.
type Result struct {
	// Stored is the entry as the server stored it after a create or an update, with its ID
	// (for status) and its version (for the next write); a value of its own, sharing nothing
	// with the change. It is nil for a delete and for a change that did not go through.
	Stored *endpoint.Record
	// Err is why the change did not go through, nil when it did.
	Err *ChangeError
}

// ChangeError is one failed write: it carries the change, so that its message and its reader
// can tell which hostname it concerns (for status and events).
type ChangeError struct {
	// Change is the change as it was sent; its records are the caller's, and only read.
	Change Change
	Err    error
	// Refused says the change itself was turned down (invalid, a duplicate, an entry changed
	// or gone meanwhile), not the server unreachable: retrying it at once would fail the same
	// way, and the other changes of the sync are unaffected.
	Refused bool
	// Stale says the change met an entry other than the one it was planned against (created,
	// changed or deleted by someone else meanwhile; for an update or a delete, the server
	// refused its expected version): the caller's picture of the server is out of date, and
	// the change is planned again from a fresh read, never retried as it stands.
	Stale bool
}

// Error describes the failed change.
func (e *ChangeError) Error() string {
	c := &e.Change
	if c.Old != nil && c.New != nil && c.Old.Hostname != c.New.Hostname {
		return fmt.Sprintf("%s %s %s (id %s): %v", c.Action, c.New.Hostname, c.New.IP, c.Old.ID, e.Err)
	}
	if c.Old != nil {
		return fmt.Sprintf("%s %s %s (id %s): %v", c.Action, c.Old.Hostname, c.Old.IP, c.Old.ID, e.Err)
	}
	return fmt.Sprintf("%s %s %s: %v", c.Action, c.New.Hostname, c.New.IP, e.Err)
}

// Unwrap gives access to the provider's error, e.g. a gRPC status.
func (e *ChangeError) Unwrap() error { return e.Err }

// ErrNotStarted is in the error of a change a provider did not start because its context
// ended: the change was not sent, and neither refused nor stale; the next sync plans it again.
var ErrNotStarted = errors.New("not started")

// NotStarted is the error of a change not started because the context ended with cause
// (ctx.Err()). It matches both ErrNotStarted and cause.
func NotStarted(cause error) error { return &notStarted{cause: cause} }

type notStarted struct{ cause error }

func (e *notStarted) Error() string   { return fmt.Sprintf("%v: %v", ErrNotStarted, e.cause) }
func (e *notStarted) Unwrap() []error { return []error{ErrNotStarted, e.cause} }

// Failures lists the changes that did not go through, in the order of the results.
func Failures(results []Result) []*ChangeError {
	var out []*ChangeError
	for i := range results {
		if ce := results[i].Err; ce != nil {
			out = append(out, ce)
		}
	}
	return out
}

// SplitRefused separates the refused changes from the failures that concern the server as a
// whole (unreachable, timed out, authentication, a stopped sync); whole is nil when every
// failure was a refusal. Changes not started are said once in whole, as the point at which
// the writes stopped, rather than once per change.
func SplitRefused(results []Result) (whole error, refused []*ChangeError) {
	var rest []error
	for _, ce := range Failures(results) {
		switch {
		case errors.Is(ce.Err, ErrNotStarted):
		case ce.Refused:
			refused = append(refused, ce)
		default:
			rest = append(rest, ce)
		}
	}
	return errors.Join(append(rest, stopped(results))...), refused
}

// ErrorOf is every failure among results as one error, nil when every change went through:
// each failed change in the order of the results, and once at the end the changes not started.
func ErrorOf(results []Result) error {
	var errs []error
	for _, ce := range Failures(results) {
		if !errors.Is(ce.Err, ErrNotStarted) {
			errs = append(errs, ce)
		}
	}
	return errors.Join(append(errs, stopped(results))...)
}

// stopped says how far the writes got when changes were not started, nil when all were.
func stopped(results []Result) error {
	var (
		n     int
		cause error
	)
	for i := range results {
		ce := results[i].Err
		if ce == nil || !errors.Is(ce.Err, ErrNotStarted) {
			continue
		}
		if n++; cause != nil {
			continue
		}
		// The context's error alone: the stop is said once, not as a change's.
		cause = ce.Err
		var ns *notStarted
		if errors.As(ce.Err, &ns) {
			cause = ns.cause
		}
	}
	if n == 0 {
		return nil
	}
	return &stoppedError{started: len(results) - n, total: len(results), cause: cause}
}

// stoppedError says how far a provider got before its context ended. It matches
// ErrNotStarted and the context's error.
type stoppedError struct {
	started, total int
	cause          error
}

func (e *stoppedError) Error() string {
	return fmt.Sprintf("stopped after %d of %d changes: %v", e.started, e.total, e.cause)
}

func (e *stoppedError) Unwrap() []error { return []error{ErrNotStarted, e.cause} }
