package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/events"
	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// The budgets, as docs/performance.md states them.
const (
	budgetPlan        = 20 * time.Millisecond
	budgetRatio       = 1.1
	budgetNoop        = 250 * time.Millisecond // operator time of a no-op sync, up to 10,000 objects
	budgetRSSSmall    = 50 << 20               // up to 1,000 objects
	budgetRSSLarge    = 128 << 20              // up to 10,000 objects, the pod's limit
	budgetLatencyP50  = 30 * time.Millisecond  // up to 1,000 objects
	budgetLatencyP99  = 150 * time.Millisecond // up to 1,000 objects
	budgetLatencyP50L = 100 * time.Millisecond // up to 10,000 objects
	budgetCreateP50   = 60 * time.Millisecond  // a new hostname, up to 1,000 objects
	budgetExplain     = 2 * time.Second        // explain as a process, up to 1,000 objects and entries
	budgetPlanCommand = 2 * budgetExplain      // plan decides twice (the cluster as it is and as the manifests make it)
	budgetLatencySize = 1000
	budgetLargeSize   = 10000
)

// grade labels a cell: "ok" or "MISS" where a budget applies, nothing where none does.
type grade int

const (
	noBudget grade = iota
	met
	missed
)

func check(applies, ok bool) grade {
	switch {
	case !applies:
		return noBudget
	case ok:
		return met
	default:
		return missed
	}
}

func (v grade) label(s string) string {
	switch v {
	case met:
		return s + " ok"
	case missed:
		return s + " MISS"
	}
	return s
}

// row is one measurement across the runs.
type row struct {
	name   string
	budget string
	cell   func(r *result) (string, grade)
}

// printTable writes the runs as one table, a column per run and a row per measurement, and
// returns the number of budgets missed.
func printTable(w io.Writer, server string, plan *planResult, results []*result, o options) int {
	misses := 0
	mib := func(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	rows := []row{
		{"plain-client floor: N AddHost, " + fmt.Sprint(o.concurrency) + " at a time", "", func(r *result) (string, grade) {
			return fmt.Sprintf("%.2f s", r.floor.Seconds()), noBudget
		}},
		{"operator: start until all N entries exist", "", func(r *result) (string, grade) {
			return fmt.Sprintf("%.2f s", r.converge.Seconds()), noBudget
		}},
		{"  of which: start until caches synced", "", func(r *result) (string, grade) {
			return fmt.Sprintf("%.2f s", r.ready.Seconds()), noBudget
		}},
		{"  of which: first sync (list, plan, N writes)", "", func(r *result) (string, grade) {
			return fmt.Sprintf("%.2f s", r.firstSync.Seconds()), noBudget
		}},
		{"CPU time: floor client / operator until converged", "", func(r *result) (string, grade) {
			return fmt.Sprintf("%.2f / %.2f s", r.floorCPU.Seconds(), r.convergeCPU.Seconds()), noBudget
		}},
		{"convergence / floor", fmt.Sprintf("< %.1f", budgetRatio), func(r *result) (string, grade) {
			x := ratio(r.converge, r.floor)
			return fmt.Sprintf("%.3f", x), check(!r.realServer, x < budgetRatio)
		}},
		{"RPCs to converge: Add/Update/Delete/Get/List", "Add = N, no other write", func(r *result) (string, grade) {
			return rpcCell(r.rpcs), check(true, r.rpcs[rpcAdd] == int64(r.n) && r.rpcs[rpcUpdate]+r.rpcs[rpcDelete]+r.rpcs[rpcGet] == 0)
		}},
		{"  the same, counted by the server", "", func(r *result) (string, grade) {
			if r.server == nil {
				return "-", noBudget
			}
			return rpcCell(r.server), check(true, rpcCell(r.server) == rpcCell(r.rpcs))
		}},
		{"Kubernetes requests after convergence (first sync's events; HostMappings: + a status each, + a status and an event per timed change)", fmt.Sprintf("≤ %d (+ N + 2 × changes)", events.MaxNormalPerSync), func(r *result) (string, grade) {
			limit := float64(events.MaxNormalPerSync)
			if r.kind == source.HostMappingKind {
				// Their changes are timed before the requests settle.
				limit += float64(r.n + 2*len(r.latencies))
			}
			return fmt.Sprintf("%.0f", r.settleRequests), check(true, r.settleRequests <= limit)
		}},
		{"no-op sync: operator time, median / max ms", "< 250 ms at 10,000", func(r *result) (string, grade) {
			return ms(percentile(r.noopOp, 50)) + " / " + ms(percentile(r.noopOp, 100)),
				check(r.n <= budgetLargeSize && len(r.noopOp) > 0, percentile(r.noopOp, 100) < budgetNoop)
		}},
		{"no-op sync: ListHosts (server), median / max ms", "reported", func(r *result) (string, grade) {
			return ms(percentile(r.noopList, 50)) + " / " + ms(percentile(r.noopList, 100)), noBudget
		}},
		{"no-op syncs: write RPCs / Kubernetes requests", "0 / 0", func(r *result) (string, grade) {
			return fmt.Sprintf("%.0f / %.0f", r.noopWrites, r.noopKube), check(len(r.noopOp) > 0, r.noopWrites == 0 && r.noopKube == 0)
		}},
		{"explain NAME, whole process: s (ListHosts / SearchHosts)", "< 2 s at 1,000, one read", func(r *result) (string, grade) {
			if r.explainTook == 0 {
				return "-", noBudget
			}
			return fmt.Sprintf("%.2f s (%s)", r.explainTook.Seconds(), r.explainReads),
				check(r.n <= budgetLatencySize, r.explainTook < budgetExplain && (r.explainReads == "-" || r.explainReads == "1 / 0"))
		}},
		{"the DNS check (--verify-dns): questions a minute after convergence", "≤ N a minute", func(r *result) (string, grade) {
			if !r.dns {
				return "-", noBudget
			}
			return fmt.Sprintf("%.0f", r.dnsPerMinute), check(true, r.dnsPerMinute <= float64(r.n))
		}},
		{"plan -f (one new object), whole process: s (ListHosts / SearchHosts)", "< 4 s at 1,000, one read", func(r *result) (string, grade) {
			if r.planTook == 0 {
				return "-", noBudget
			}
			return fmt.Sprintf("%.2f s (%s)", r.planTook.Seconds(), r.planReads),
				check(r.n <= budgetLatencySize, r.planTook < budgetPlanCommand && (r.planReads == "-" || r.planReads == "1 / 0"))
		}},
		{"list, whole process: s", "reported", func(r *result) (string, grade) {
			if r.listTook == 0 {
				return "-", noBudget
			}
			return fmt.Sprintf("%.2f s", r.listTook.Seconds()), noBudget
		}},
		{"peak RSS", "< 50 MiB at 1,000; < 128 MiB at 10,000", func(r *result) (string, grade) {
			size := r.n
			if r.objects > 0 {
				size = r.objects
			}
			limit := uint64(budgetRSSLarge)
			if size <= budgetLatencySize {
				limit = budgetRSSSmall
			}
			return mib(r.rssPeak), check(size <= budgetLargeSize, r.rssPeak < limit)
		}},
		{"RSS at the end of the run", "", func(r *result) (string, grade) { return mib(r.rssSteady), noBudget }},
		{"peak Go heap in use", "", func(r *result) (string, grade) { return mib(r.heapPeak), noBudget }},
		{fmt.Sprintf("change latency p50 / p99 ms (%d changes)", o.changes), "< 30 / < 150 at 1,000; p50 < 100 at 10,000", func(r *result) (string, grade) {
			return latencyCell(r.n, r.latencies)
		}},
		{fmt.Sprintf("create latency p50 / p99 ms (%d new hostnames)", o.creates), "p50 < 60 at 1,000", func(r *result) (string, grade) {
			if len(r.creations) == 0 {
				return "-", noBudget
			}
			p50 := percentile(r.creations, 50)
			return ms(p50) + " / " + ms(percentile(r.creations, 99)), check(r.n <= budgetLatencySize, p50 < budgetCreateP50)
		}},
		{"  ListHosts / SearchHosts during the creates", "reported", func(r *result) (string, grade) {
			if len(r.creations) == 0 {
				return "-", noBudget
			}
			return fmt.Sprintf("%.0f / %.0f", r.createLists, r.createSearches), noBudget
		}},
		{"ListHosts during the changes / --interval reads in that time", "none beyond the interval's", func(r *result) (string, grade) {
			// The operator runs with the default --interval of a minute; each one that ends
			// during the changes may read the server once.
			if len(r.latencies) == 0 {
				return "-", noBudget
			}
			allowed := math.Ceil(r.changeTime.Minutes())
			return fmt.Sprintf("%.0f / %.0f", r.changeLists, allowed), check(len(r.latencies) > 0, r.changeLists <= allowed)
		}},
		{"HostMappings: start until every status says Synced", "< N / 20 + 5 s (--kube-api-qps 20)", func(r *result) (string, grade) {
			if r.kind != source.HostMappingKind {
				return "", noBudget
			}
			limit := time.Duration(r.n)*time.Second/20 + 5*time.Second
			return fmt.Sprintf("%.1f s", r.statusSynced.Seconds()), check(true, r.statusSynced < limit)
		}},
		{"  statuses still pending when the timed changes began", "reported", func(r *result) (string, grade) {
			if r.kind != source.HostMappingKind {
				return "", noBudget
			}
			return fmt.Sprintf("%d", r.statusPending), noBudget
		}},
		{fmt.Sprintf("outage (test server stopped %v): statuses not Synced when it came back", o.outage), "reported", func(r *result) (string, grade) {
			if r.outage == nil {
				return "", noBudget
			}
			return fmt.Sprintf("%d", r.outage.unsynced), noBudget
		}},
		{"  the change made during the outage: on the server after its return", "reported", func(r *result) (string, grade) {
			if r.outage == nil {
				return "", noBudget
			}
			return fmt.Sprintf("%.1f s", r.outage.changed.Seconds()), noBudget
		}},
		{"  its return until every status says Synced again", "reported", func(r *result) (string, grade) {
			if r.outage == nil {
				return "", noBudget
			}
			return fmt.Sprintf("%.1f s", r.outage.recovered.Seconds()), noBudget
		}},
		{"  change latency meanwhile (one every 1.1 s), p50 / p99 ms", "< 30 / < 150 at 1,000; p50 < 100 at 10,000", func(r *result) (string, grade) {
			if r.outage == nil {
				return "", noBudget
			}
			return latencyCell(r.n, r.outage.latencies)
		}},
	}

	fmt.Fprintf(w, "\nrouter-hosts-operator scale run — %s\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(w, "machine: %s\nserver: %s\n\n", machine(), server)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"measurement"}
	for _, r := range results {
		head = append(head, r.label)
	}
	fmt.Fprintln(tw, strings.Join(append(head, "budget"), "\t"))
	if plan != nil {
		v := check(true, plan.nsPerOp < float64(budgetPlan))
		if v == missed {
			misses++
		}
		cells := []string{"plan: 10,000 endpoints vs 10,000 entries (go test -bench)",
			v.label(fmt.Sprintf("%.1f ms/op, %.0f allocs, %.1f MiB", plan.nsPerOp/1e6, plan.allocsPerOp, plan.bytesPerOp/(1<<20)))}
		for i := 1; i < len(results); i++ {
			cells = append(cells, "")
		}
		fmt.Fprintln(tw, strings.Join(append(cells, "< 20 ms"), "\t"))
	}
	for _, rw := range rows {
		cells := []string{rw.name}
		for _, r := range results {
			s, v := rw.cell(r)
			if v == missed {
				misses++
			}
			cells = append(cells, v.label(s))
		}
		fmt.Fprintln(tw, strings.Join(append(cells, rw.budget), "\t"))
	}
	_ = tw.Flush()
	if misses > 0 {
		fmt.Fprintf(w, "\n%d budget(s) missed (MISS above)\n", misses)
	} else {
		fmt.Fprintln(w, "\nevery budget met")
	}
	return misses
}

func rpcCell(c map[string]int64) string {
	return fmt.Sprintf("%d/%d/%d/%d/%d", c[rpcAdd], c[rpcUpdate], c[rpcDelete], c[rpcGet], c[rpcList])
}

// latencyCell is p50 / p99 of changes among n objects, judged by the change-latency budgets.
func latencyCell(n int, ds []time.Duration) (string, grade) {
	if len(ds) == 0 {
		return "-", noBudget
	}
	p50, p99 := percentile(ds, 50), percentile(ds, 99)
	cell := ms(p50) + " / " + ms(p99)
	if n > budgetLatencySize {
		return cell, check(n <= budgetLargeSize && len(ds) > 0, p50 < budgetLatencyP50L)
	}
	return cell, check(len(ds) > 0, p50 < budgetLatencyP50 && p99 < budgetLatencyP99)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }
