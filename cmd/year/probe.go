package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
)

// probeRounds is how many times each probe call is timed; the median is kept.
const probeRounds = 5

// probe is what the router's calls cost at one moment, each timed with a call that writes
// nothing, so that measuring leaves the log as it is:
//   - list: ListHosts (a replay of every aggregate);
//   - search: SearchHosts of a name nobody has (the operator's look before a create; a replay);
//   - add: AddHost of a line that exists, which the server refuses as a duplicate after the
//     replay every AddHost makes, before it appends;
//   - update: UpdateHost that changes nothing, of the operator's live entry with the longest
//     log: the server replays that one aggregate, as every UpdateHost does before it appends.
type probe struct {
	list, search, add, update time.Duration
}

// measure times the probe calls. dup is an existing line (for add), longest the operator's
// entry with the longest log (for update; nil for none).
func measure(ctx context.Context, cli pb.HostsServiceClient, dup, longest *pb.HostEntry) (probe, error) {
	var p probe
	var err error
	if p.list, err = median(func() error { _, err := rhclient.List(ctx, cli); return err }); err != nil {
		return p, err
	}
	if p.search, err = median(func() error {
		st, err := cli.SearchHosts(ctx, &pb.SearchHostsRequest{Query: "nobody-has-this.invalid"})
		if err != nil {
			return err
		}
		for {
			if _, err := st.Recv(); err != nil {
				return ignoreEOF(err)
			}
		}
	}); err != nil {
		return p, err
	}
	if p.add, err = median(func() error {
		_, err := cli.AddHost(ctx, &pb.AddHostRequest{Hostname: dup.GetHostname(), IpAddress: dup.GetIpAddress()})
		if status.Code(err) == codes.AlreadyExists {
			return nil
		}
		return fmt.Errorf("AddHost of an existing line answered %v, want AlreadyExists", err)
	}); err != nil {
		return p, err
	}
	if longest != nil {
		if p.update, err = median(func() error {
			_, err := cli.UpdateHost(ctx, &pb.UpdateHostRequest{Id: longest.GetId(), ExpectedVersion: proto.String(longest.GetVersion())})
			return err
		}); err != nil {
			return p, fmt.Errorf("UpdateHost that changes nothing: %w", err)
		}
	}
	return p, nil
}

func median(call func() error) (time.Duration, error) {
	took := make([]time.Duration, 0, probeRounds)
	for range probeRounds {
		start := time.Now()
		if err := call(); err != nil {
			return 0, err
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took[len(took)/2], nil
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
