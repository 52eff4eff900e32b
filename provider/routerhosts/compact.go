package routerhosts

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
)

// Compact asks the server to fold each aggregate of ids into one event, with one
// CompactAggregates by ID each, never by threshold: a threshold would fold every writer's
// entries, and the operator compacts only what it was told to. Compaction changes no entry and
// no version, so nothing read before it goes stale. The calls go as ApplyChanges' writes do, up
// to WriteConcurrency at once, each bounded by the request timeout and detached from ctx's
// cancellation; once ctx ends, or the server answered that it does not compact
// (provider.ErrCompactionUnsupported), no further call starts. It returns one Compaction per
// ID, at the ID's index, and an error when any was not compacted: the first failure, wrapping
// ErrCompactionUnsupported when the server was the reason.
func (p *Provider) Compact(ctx context.Context, ids []string) ([]provider.Compaction, error) {
	p.refresh()
	out := make([]provider.Compaction, len(ids))
	// stop ends the starting of calls; unsupported is the server's answer that made it.
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var unsupported error
	sem := make(chan struct{}, p.opts.WriteConcurrency)
	var wg sync.WaitGroup
	started := make([]bool, len(ids))
	for i, id := range ids {
		if stop.Err() != nil {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-stop.Done():
		}
		if stop.Err() != nil {
			break
		}
		started[i] = true
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = p.compact(ctx, id)
			if errors.Is(out[i].Err, provider.ErrCompactionUnsupported) {
				mu.Lock()
				if unsupported == nil {
					unsupported = out[i].Err
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	cause := ctx.Err()
	if unsupported != nil {
		cause = unsupported
	}
	var first error
	for i, id := range ids {
		if !started[i] {
			out[i] = provider.Compaction{ID: id, Err: plan.NotStarted(cause)}
		}
		if first == nil && out[i].Err != nil {
			first = out[i].Err
		}
	}
	if unsupported != nil {
		return out, unsupported
	}
	if first != nil {
		return out, fmt.Errorf("compacting %d aggregates: %w", len(ids), first)
	}
	return out, nil
}

// compact sends one CompactAggregates for id.
func (p *Provider) compact(ctx context.Context, id string) provider.Compaction {
	c := provider.Compaction{ID: id}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	resp, err := p.rpc().CompactAggregates(cctx, &pb.CompactAggregatesRequest{Target: &pb.CompactAggregatesRequest_AggregateId{AggregateId: id}})
	if err = p.callError(err); err != nil {
		if code := status.Code(err); code == codes.Unimplemented || code == codes.PermissionDenied {
			err = fmt.Errorf("%w: %w", provider.ErrCompactionUnsupported, err)
		}
		c.Err = fmt.Errorf("CompactAggregates %s: %w", id, err)
		return c
	}
	rows := resp.GetCompacted()
	if len(rows) != 1 {
		c.Err = fmt.Errorf("CompactAggregates %s: the server answered %d aggregates for one", id, len(rows))
		return c
	}
	c.EventsBefore, c.EventsAfter, c.Version = rows[0].GetEventsBefore(), rows[0].GetEventsAfter(), rows[0].GetVersion()
	p.log.WithFields(logrus.Fields{"id": id, "events_before": c.EventsBefore, "events_after": c.EventsAfter, "version": c.Version}).Debug("compacted aggregate")
	return c
}
