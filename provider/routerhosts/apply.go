package routerhosts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
)

// progressThreshold is the size of an apply from which progress is logged every 10 %.
const progressThreshold = 100

// ApplyChanges sends the changes: deletes first, then updates, then creates, so that AddHost's
// uniqueness check sees what was removed. Each phase runs up to WriteConcurrency writes at once.
// One failed change never stops the others. It returns one result per change, at the change's
// index: the entry as stored (ID, version) or the *plan.ChangeError that stopped it. It never
// writes into changes or the records they point to, so the caller may hold or copy them as it
// likes. Every write is checked against the version it was planned from, so an interruption
// at any point leaves a state the next sync plans from. When ctx ends, no new change starts,
// the ones in flight finish, and each change not started gets a plan.ErrNotStarted result.
func (p *Provider) ApplyChanges(ctx context.Context, changes []plan.Change) []plan.Result {
	var phases [3][]int
	for i := range changes {
		c := &changes[i]
		switch {
		case c.New == nil:
			phases[0] = append(phases[0], i)
		case c.Old != nil:
			phases[1] = append(phases[1], i)
		default:
			phases[2] = append(phases[2], i)
		}
	}
	// Each write fills only its own change's result, and the phases' Wait orders those writes
	// before the return: the slice needs no lock.
	results := make([]plan.Result, len(changes))
	started := make([]bool, len(changes))
	var done atomic.Int64
	total := int64(len(changes))
	step := total / 10
	for _, phase := range phases {
		sem := make(chan struct{}, p.opts.WriteConcurrency)
		var wg sync.WaitGroup
		for _, i := range phase {
			if ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			started[i] = true
			wg.Add(1)
			go func(i int) {
				defer func() { <-sem; wg.Done() }()
				results[i] = p.result(ctx, &changes[i])
				if n := done.Add(1); total >= progressThreshold && step > 0 && n%step == 0 {
					p.log.WithFields(logrus.Fields{"done": n, "total": total}).Info("applying changes")
				}
			}(i)
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		for i := range changes {
			if !started[i] {
				results[i] = plan.Result{Err: &plan.ChangeError{Change: changes[i], Err: plan.NotStarted(err)}}
			}
		}
	}
	return results
}

// result sends one change and says what became of it.
func (p *Provider) result(ctx context.Context, c *plan.Change) plan.Result {
	stored, err := p.apply(ctx, c)
	if err = p.callError(err); err != nil {
		return plan.Result{Err: &plan.ChangeError{Change: *c, Err: err, Refused: refused(err), Stale: stale(err)}}
	}
	return plan.Result{Stored: stored}
}

// callCtx bounds one call. It is detached from the caller's cancellation so that a change
// already sent when SIGTERM arrives completes instead of being cut off mid-flight.
func (p *Provider) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), p.opts.Timeout)
}

// apply sends one change and returns the entry as stored: a new record, never one of the
// change's, nil for a delete.
func (p *Provider) apply(ctx context.Context, c *plan.Change) (*endpoint.Record, error) {
	log := p.log.WithFields(logrus.Fields{"action": c.Action, "hostname": c.Hostname()})
	switch {
	case c.Old == nil:
		if err := endpoint.ValidateRecord(c.New); err != nil {
			return nil, fmt.Errorf("%w: %w", errNotSent, err)
		}
		cctx, cancel := p.callCtx(ctx)
		defer cancel()
		resp, err := p.rpc().AddHost(cctx, addRequest(c.New))
		if err != nil {
			return nil, fmt.Errorf("AddHost: %w", err)
		}
		// A server that answers without the entry: what was sent is what is stored, under the
		// ID it gave.
		var stored *endpoint.Record
		if e := resp.GetEntry(); e != nil {
			r := fromEntry(e)
			stored = &r
		} else {
			stored = clone(c.New)
		}
		stored.ID = resp.GetId()
		log.WithFields(logrus.Fields{"ip": stored.IP, "id": stored.ID}).Debug("created entry")
		return stored, nil
	case c.New == nil:
		return nil, p.delete(ctx, c.Old, log)
	default:
		if err := endpoint.ValidateUpdate(c.Old, c.New); err != nil {
			return nil, fmt.Errorf("%w: %w", errNotSent, err)
		}
		return p.update(ctx, c, log)
	}
}

// errNotSent marks a change the operator refused to send; errNoLongerOurs one dropped because
// the entry changed hands since it was read.
var (
	errNotSent      = errors.New("not sent")
	errNoLongerOurs = errors.New("the entry changed since it was read in a way this change was not planned for; not written")
)

// stale tells a change that met an entry other than the one it was planned against: the
// caller's picture of the server is out of date and must be read again.
func stale(err error) bool {
	if errors.Is(err, errNoLongerOurs) {
		return true
	}
	switch status.Code(err) {
	case codes.AlreadyExists, codes.NotFound, codes.Aborted:
		return true
	}
	return false
}

// refused tells a change the server (or the operator's own checks) turned down from a server
// that could not be reached or answered in time: the first concerns that change alone.
func refused(err error) bool {
	if errors.Is(err, errNoLongerOurs) || errors.Is(err, errNotSent) {
		return true
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.AlreadyExists, codes.NotFound, codes.Aborted, codes.FailedPrecondition,
		codes.OutOfRange, codes.PermissionDenied:
		return true
	}
	return false
}

// update sends the fields in which want differs from have and returns the entry as stored.
// On Aborted (someone else wrote the entry since it was read) it re-reads the entry and, if the
// change still applies to it (the entry is still ours, or still free to adopt), rebases the
// change onto it and tries once more.
func (p *Provider) update(ctx context.Context, c *plan.Change, log logrus.FieldLogger) (*endpoint.Record, error) {
	have, want := c.Old, c.New
	fields := endpoint.Diff(have, want)
	if fields == 0 {
		// Nothing to send: the entry stands as planned.
		return clone(want), nil
	}
	stored, err := p.sendUpdate(ctx, have, want, fields)
	if status.Code(err) != codes.Aborted {
		if err != nil {
			return nil, err
		}
		log.WithFields(logrus.Fields{"id": have.ID, "fields": fields.String()}).Debug("updated entry")
		return stored, nil
	}
	fresh, gerr := p.get(ctx, have.ID)
	if gerr != nil {
		return nil, fmt.Errorf("re-reading after a version conflict: %w", gerr)
	}
	if p.opts.StillApplies != nil && !p.opts.StillApplies(c, fresh) {
		log.WithFields(logrus.Fields{"id": have.ID, "tags": fresh.Tags}).Warn("entry changed hands since it was read; change dropped")
		return nil, errNoLongerOurs
	}
	rebased := rebase(have, want, fresh)
	fields = endpoint.Diff(fresh, rebased)
	log.WithFields(logrus.Fields{"id": have.ID, "fields": fields.String()}).Info("version conflict; retrying on the fresh entry")
	if fields == 0 {
		return fresh, nil
	}
	return p.sendUpdate(ctx, fresh, rebased, fields)
}

// sendUpdate sends the fields of want that differ from have and returns the entry as stored.
func (p *Provider) sendUpdate(ctx context.Context, have, want *endpoint.Record, fields endpoint.Fields) (*endpoint.Record, error) {
	req := &pb.UpdateHostRequest{Id: have.ID, ExpectedVersion: &have.Version}
	if fields.Has(endpoint.FieldIP) {
		req.IpAddress = &want.IP
	}
	if fields.Has(endpoint.FieldHostname) {
		req.Hostname = &want.Hostname
	}
	if fields.Has(endpoint.FieldComment) {
		req.Comment = &want.Comment
	}
	if fields.Has(endpoint.FieldAliases) {
		// An empty wrapper clears the list; an absent one would keep it.
		req.Aliases = &pb.AliasesUpdate{Values: nonNil(want.Aliases)}
	}
	if fields.Has(endpoint.FieldTags) {
		req.Tags = &pb.TagsUpdate{Values: nonNil(want.Tags)}
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	resp, err := p.rpc().UpdateHost(cctx, req)
	if err != nil {
		return nil, fmt.Errorf("UpdateHost: %w", err)
	}
	if e := resp.GetEntry(); e != nil {
		stored := fromEntry(e)
		return &stored, nil
	}
	// A server that answers without the entry: what was sent is what is stored, at a version
	// not known.
	stored := clone(want)
	stored.Version = ""
	return stored, nil
}

// clone is a copy of r that shares none of its slices, so that a result never aliases the
// caller's records.
func clone(r *endpoint.Record) *endpoint.Record {
	out := *r
	out.Aliases, out.Tags = slices.Clone(r.Aliases), slices.Clone(r.Tags)
	return &out
}

// rebase applies the planned change (have→want) to fresh, the entry as it is now: scalar fields
// the plan changed take the planned value, and tags and aliases get the planned additions and
// removals, so a concurrent writer's unrelated edits survive.
func rebase(have, want, fresh *endpoint.Record) *endpoint.Record {
	out := *fresh
	fields := endpoint.Diff(have, want)
	if fields.Has(endpoint.FieldIP) {
		out.IP = want.IP
	}
	if fields.Has(endpoint.FieldHostname) {
		out.Hostname = want.Hostname
	}
	if fields.Has(endpoint.FieldComment) {
		out.Comment = want.Comment
	}
	if fields.Has(endpoint.FieldAliases) {
		out.Aliases = applyDelta(fresh.Aliases, have.Aliases, want.Aliases)
	}
	if fields.Has(endpoint.FieldTags) {
		out.Tags = applyDelta(fresh.Tags, have.Tags, want.Tags)
	}
	return &out
}

// applyDelta returns cur less what the change took away (from − to) plus what it added
// (to − from), counted as multisets and in cur's order, so a user's tags keep their order.
func applyDelta(cur, from, to []string) []string {
	delta := map[string]int{}
	for _, s := range to {
		delta[s]++
	}
	for _, s := range from {
		delta[s]--
	}
	out := make([]string, 0, len(cur))
	for _, s := range cur {
		if delta[s] < 0 {
			delta[s]++
			continue
		}
		out = append(out, s)
	}
	for _, s := range to {
		if delta[s] > 0 {
			delta[s]--
			out = append(out, s)
		}
	}
	return out
}

// delete removes the entry at the version it was planned against. NotFound means it is gone
// already, which is what was wanted. On Aborted the entry changed since it was read: it is
// deleted only if the change touched nothing but its version; otherwise the next sync decides.
func (p *Provider) delete(ctx context.Context, have *endpoint.Record, log logrus.FieldLogger) error {
	err := p.sendDelete(ctx, have.ID, have.Version)
	if status.Code(err) == codes.Aborted {
		fresh, gerr := p.get(ctx, have.ID)
		if status.Code(gerr) == codes.NotFound {
			return nil
		}
		if gerr != nil {
			return fmt.Errorf("re-reading after a version conflict: %w", gerr)
		}
		if endpoint.Diff(have, fresh) != 0 {
			return fmt.Errorf("entry was edited since it was read; not deleting it: %w", err)
		}
		err = p.sendDelete(ctx, have.ID, fresh.Version)
	}
	if status.Code(err) == codes.NotFound {
		err = nil
	}
	if err == nil {
		log.WithFields(logrus.Fields{"id": have.ID, "ip": have.IP}).Debug("deleted entry")
	}
	return err
}

func (p *Provider) sendDelete(ctx context.Context, id, version string) error {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	if _, err := p.rpc().DeleteHost(cctx, &pb.DeleteHostRequest{Id: id, ExpectedVersion: &version}); err != nil {
		return fmt.Errorf("DeleteHost: %w", err)
	}
	return nil
}

func (p *Provider) get(ctx context.Context, id string) (*endpoint.Record, error) {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	resp, err := p.rpc().GetHost(cctx, &pb.GetHostRequest{Id: id})
	if err != nil {
		return nil, fmt.Errorf("GetHost: %w", err)
	}
	r := fromEntry(resp.GetEntry())
	return &r, nil
}

func addRequest(r *endpoint.Record) *pb.AddHostRequest {
	req := &pb.AddHostRequest{IpAddress: r.IP, Hostname: r.Hostname, Tags: r.Tags, Aliases: r.Aliases}
	if r.Comment != "" {
		req.Comment = &r.Comment
	}
	return req
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
