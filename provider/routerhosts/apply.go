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

// errNotSent marks a change the operator refused to send.
var errNotSent = errors.New("not sent")

// stale tells a change that met an entry other than the one it was planned against (a newer
// version, an entry gone, a line added meanwhile): the caller's picture of the server is out of
// date and must be read again before the change is planned anew.
func stale(err error) bool {
	switch status.Code(err) {
	case codes.AlreadyExists, codes.NotFound, codes.Aborted:
		return true
	}
	return false
}

// refused tells a change the server (or the operator's own checks) turned down from a server
// that could not be reached or answered in time: the first concerns that change alone.
func refused(err error) bool {
	if errors.Is(err, errNotSent) {
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
// A write the server refuses as stale (Aborted: the entry changed since it was read) is not
// tried again here: whether the change still applies to the entry as it is now is the
// registry's to decide, from the next sync's read.
func (p *Provider) update(ctx context.Context, c *plan.Change, log logrus.FieldLogger) (*endpoint.Record, error) {
	have, want := c.Old, c.New
	fields := endpoint.Diff(have, want)
	if fields == 0 {
		// Nothing to send: the entry stands as planned.
		return clone(want), nil
	}
	stored, err := p.sendUpdate(ctx, have, want, fields)
	if err != nil {
		logStale(log, err, have)
		return nil, err
	}
	log.WithFields(logrus.Fields{"id": have.ID, "fields": fields.String()}).Debug("updated entry")
	return stored, nil
}

// logStale logs a write the server refused because the entry changed since it was read: the
// ordinary race with another writer, which the next sync's read settles, so no warning.
func logStale(log logrus.FieldLogger, err error, have *endpoint.Record) {
	if status.Code(err) == codes.Aborted {
		log.WithFields(logrus.Fields{"id": have.ID, "version": have.Version}).Info("entry changed since it was read (version conflict); not written")
	}
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

// delete removes the entry at the version it was planned against. NotFound means it is gone
// already, which is what was wanted; Aborted that it changed since it was read, and the next
// sync decides whether it still goes.
func (p *Provider) delete(ctx context.Context, have *endpoint.Record, log logrus.FieldLogger) error {
	if err := p.sendDelete(ctx, have.ID, have.Version); err != nil && status.Code(err) != codes.NotFound {
		logStale(log, err, have)
		return err
	}
	log.WithFields(logrus.Fields{"id": have.ID, "ip": have.IP}).Debug("deleted entry")
	return nil
}

func (p *Provider) sendDelete(ctx context.Context, id, version string) error {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	if _, err := p.rpc().DeleteHost(cctx, &pb.DeleteHostRequest{Id: id, ExpectedVersion: &version}); err != nil {
		return fmt.Errorf("DeleteHost: %w", err)
	}
	return nil
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
