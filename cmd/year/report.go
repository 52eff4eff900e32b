package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
)

// freshCopy starts a fresh router in dir, writes it the live entries of rt as they are (one
// AddHost each: one event an entry, no deleted aggregate) and probes it: what the same live
// names cost a server without the year behind it.
func (o options) freshCopy(ctx context.Context, rt router, dir string) (probe, error) {
	from, closeFrom, err := rt.conn().dial()
	if err != nil {
		return probe{}, err
	}
	defer closeFrom()
	entries, err := rhclient.List(ctx, from)
	if err != nil {
		return probe{}, err
	}
	fresh, err := o.startRouter(ctx, dir)
	if err != nil {
		return probe{}, err
	}
	defer fresh.stop()
	cli, closeCli, err := fresh.conn().dial()
	if err != nil {
		return probe{}, err
	}
	defer closeCli()
	var dup, own *pb.HostEntry
	for _, e := range entries {
		got, err := cli.AddHost(ctx, &pb.AddHostRequest{Hostname: e.GetHostname(), IpAddress: e.GetIpAddress(), Aliases: e.GetAliases(),
			Comment: e.Comment, Tags: e.GetTags()})
		if err != nil {
			return probe{}, fmt.Errorf("copying %s: %w", e.GetHostname(), err)
		}
		switch {
		case slices.Contains(e.GetTags(), ownTag):
			own = got.GetEntry()
		case dup == nil:
			dup = got.GetEntry()
		}
	}
	return measure(ctx, cli, dup, own)
}

// The RPCs whose cost the table shows, as the operator timed its own calls.
var shownCalls = []string{"AddHost", "SearchHosts", "UpdateHost", "DeleteHost", "ListHosts", "CompactAggregates"}

func writeTable(out io.Writer, res result) {
	fmt.Fprintf(out, "### Compaction %s\n\n", onOff(res.compact))
	fmt.Fprintln(out, "| day | live (own) | aggregates (deleted) | events | largest own | log on disk | ListHosts | SearchHosts | AddHost | UpdateHost | sync: morning / evening | operator's calls in the period: count × mean |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, p := range res.periods {
		var calls []string
		for _, m := range shownCalls {
			if c, ok := p.calls[m]; ok {
				calls = append(calls, fmt.Sprintf("%s %d × %s", m, c.n, ms(c.mean)))
			}
		}
		fmt.Fprintf(out, "| %d | %d (%d) | %d (%d) | %d | %d | %s | %s | %s | %s | %s | %s / %s | %s |\n",
			p.day, p.live, p.own, p.aggregates, p.deleted(), p.events, p.largestOwn, kib(p.bytes),
			ms(p.probe.list), ms(p.probe.search), ms(p.probe.add), ms(p.probe.update), ms(p.busy), ms(p.quiet), join(calls))
	}
	f := res.fresh
	fmt.Fprintf(out, "| fresh server, the same live entries | | | | 1 | | %s | %s | %s | %s | | |\n\n", ms(f.list), ms(f.search), ms(f.add), ms(f.update))
}

func kib(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%d KiB", b/1024)
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}

// ratio is after as a multiple of before.
func ratio(after, before time.Duration) string {
	if before <= 0 {
		return "-"
	}
	return fmt.Sprintf("×%.2f", float64(after)/float64(before))
}

// writeSummary compares each year's end with its first day, and its end with the fresh server:
// the year's growth, and how much of what is left the server keeps for deleted entries.
func writeSummary(out io.Writer, results []result) {
	fmt.Fprintln(out, "### The year's end against day 1 (the same live size), and against a fresh server with the same live entries")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| compaction | events / aggregates at the end | probes: ListHosts, SearchHosts, AddHost, UpdateHost | the operator's AddHost, UpdateHost, DeleteHost | syncs: morning, evening | the end against a fresh server: ListHosts, AddHost |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|")
	for _, r := range results {
		if len(r.periods) < 2 {
			continue
		}
		// Day 0 fills the router; day 1 is the first of the year's ordinary days.
		first, last := r.periods[1], r.periods[len(r.periods)-1]
		own := func(m string) string { return ratio(last.calls[m].mean, first.calls[m].mean) }
		fmt.Fprintf(out, "| %s | %d / %d | %s, %s, %s, %s | %s, %s, %s | %s, %s | %s, %s |\n", onOff(r.compact), last.events, last.aggregates,
			ratio(last.probe.list, first.probe.list), ratio(last.probe.search, first.probe.search), ratio(last.probe.add, first.probe.add),
			ratio(last.probe.update, first.probe.update), own("AddHost"), own("UpdateHost"), own("DeleteHost"),
			ratio(last.busy, first.busy), ratio(last.quiet, first.quiet),
			ratio(last.probe.list, r.fresh.list), ratio(last.probe.add, r.fresh.add))
	}
	fmt.Fprintln(out)
}
