package inmemory

import (
	"maps"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// aggregate is what the log holds of one entry's events: how many there are, and the last.
type aggregate struct {
	events int64
	last   logRecord
}

// CompactAggregates folds aggregates' events into one seed event each, as the server's RPC of
// that name does (router-hosts 0.10.7 on): the seed is the entry as it stands (a tombstone for a
// deleted one) at the same version, so a write with the expected_version read before still
// succeeds, at version+1. An aggregate of one event or none is left as it is, and an unknown
// (well-formed) ID answers a row of zeros. Nothing any entry says changes, so the live entries
// are not reported to SetOnWrite's function: the server neither rewrites its hosts file nor
// runs its hooks for a compaction. A malformed ID, no target, or a threshold that is not
// positive is InvalidArgument; dry_run reports the same rows and changes nothing.
func (s *Store) CompactAggregates(req *pb.CompactAggregatesRequest) (*pb.CompactAggregatesResponse, error) {
	var one string
	var over int64
	switch t := req.GetTarget().(type) {
	case *pb.CompactAggregatesRequest_AggregateId:
		key, err := parseID(t.AggregateId)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "invalid aggregate_id %q: not a ULID", t.AggregateId)
		}
		one = key
	case *pb.CompactAggregatesRequest_OverThreshold:
		if t.OverThreshold <= 0 {
			return nil, status.Errorf(codes.InvalidArgument, "over_threshold must be > 0, got %d", t.OverThreshold)
		}
		over = t.OverThreshold
	default:
		return nil, status.Error(codes.InvalidArgument, "target (aggregate_id or over_threshold) is required")
	}
	// Under the writers' lock, as the server serialises compactions with the other writes.
	s.mu.Lock()
	defer s.mu.Unlock()
	aggs := map[string]*aggregate{}
	for _, r := range s.log {
		if one != "" && r.id != one {
			continue
		}
		a := aggs[r.id]
		if a == nil {
			a = &aggregate{}
			aggs[r.id] = a
		}
		a.events++
		a.last = r
	}
	targets := []string{one}
	if one == "" {
		targets = targets[:0]
		for id, a := range aggs {
			if a.events > over {
				targets = append(targets, id)
			}
		}
		// The server lists its aggregates in no set order; a seeded simulation needs one.
		if s.ordered {
			slices.Sort(targets)
		}
	}
	resp := &pb.CompactAggregatesResponse{}
	folded := map[string]*aggregate{}
	for _, id := range targets {
		row := &pb.CompactedAggregate{AggregateId: id}
		if a := aggs[id]; a != nil {
			row.EventsBefore, row.EventsAfter, row.Version = a.events, min(a.events, 1), int64(a.last.version)
			if a.events > 1 {
				folded[id] = a
			}
		}
		resp.Compacted = append(resp.Compacted, row)
		resp.TotalEventsReclaimed += row.EventsBefore - row.EventsAfter
	}
	if req.GetDryRun() || len(folded) == 0 {
		return resp, nil
	}
	// A new log, not the old one edited in place: readers replay a prefix of the old one
	// without the lock. Each seed goes last, as the server's gets the newest event ID.
	log := make([]logRecord, 0, len(s.log)-int(resp.TotalEventsReclaimed))
	for _, r := range s.log {
		if folded[r.id] == nil {
			log = append(log, r)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(folded)) {
		log = append(log, folded[id].last)
	}
	s.log = log
	return resp, nil
}
