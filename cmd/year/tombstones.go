package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// tombstones is the server's share alone, with no operator: a fresh router with live entries,
// then, step by step, entries added and deleted and every aggregate compacted
// (CompactAggregates over 1 event, as an admin's `router-hosts compact --over 1`), each step
// probed. A deleted aggregate keeps one event after compaction and every read replays it, so
// what the probes show growing is what only the server can take away.
func (o options) tombstones(ctx context.Context, steps []int, out io.Writer) error {
	rt, err := o.startRouter(ctx, filepath.Join(o.dir, "tombstones"))
	if err != nil {
		return err
	}
	defer rt.stop()
	cli, closeCli, err := rt.conn().dial()
	if err != nil {
		return err
	}
	defer closeCli()
	var first, last *pb.HostEntry
	for i := range o.mix.Live {
		r, err := cli.AddHost(ctx, &pb.AddHostRequest{Hostname: fmt.Sprintf("live-%04d.home.lab", i), IpAddress: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)})
		if err != nil {
			return fmt.Errorf("adding a live entry: %w", err)
		}
		if first == nil {
			first = r.GetEntry()
		}
		last = r.GetEntry()
	}
	fmt.Fprintf(out, "%d live entries on %s; each step adds and deletes entries, then compacts every aggregate over 1 event\n\n", o.mix.Live, o.describe())
	fmt.Fprintln(out, "| deleted aggregates (1 event each) | events | ListHosts | SearchHosts | AddHost (refused duplicate) | UpdateHost (no change) |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|")
	deleted := 0
	for _, want := range steps {
		for ; deleted < want; deleted++ {
			r, err := cli.AddHost(ctx, &pb.AddHostRequest{Hostname: fmt.Sprintf("gone-%05d.home.lab", deleted), IpAddress: fmt.Sprintf("10.1.%d.%d", deleted/250%250, deleted%250+1)})
			if err != nil {
				return fmt.Errorf("adding an entry to delete: %w", err)
			}
			if _, err := cli.DeleteHost(ctx, &pb.DeleteHostRequest{Id: r.GetId()}); err != nil {
				return fmt.Errorf("deleting it: %w", err)
			}
		}
		if _, err := cli.CompactAggregates(ctx, &pb.CompactAggregatesRequest{Target: &pb.CompactAggregatesRequest_OverThreshold{OverThreshold: 1}}); err != nil {
			return fmt.Errorf("compacting: %w", err)
		}
		l, err := rt.log(ctx)
		if err != nil {
			return err
		}
		p, err := measure(ctx, cli, first, last)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "| %d | %d | %s | %s | %s | %s |\n", deleted, l.events(), ms(p.list), ms(p.search), ms(p.add), ms(p.update))
	}
	fmt.Fprintln(out)
	return nil
}
