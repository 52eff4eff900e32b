package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// pairCommand is `bench pair`: the calls of `bench reads` on two servers side by side, each
// filled with a payload of its own, call for call: the i-th call of a kind goes to one server
// then at once to the other (which first alternates), so that whatever else the machine is
// doing at that moment falls on both alike and the difference between the payloads is read
// from pairs a few tens of milliseconds apart, not from runs minutes apart. The servers are
// those of -endpoints (the TLS files from ROUTER_HOSTS_OPERATOR_TLS_*); each is filled in
// turn, the other idle.
func pairCommand(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("pair", flag.ExitOnError)
	sizes := fs.String("sizes", "1000", "entries on each server when the calls are timed, comma-separated")
	rounds := fs.Int("rounds", 100, "pairs of calls timed per kind and size")
	concurrency := fs.Int("concurrency", 4, "AddHost calls in flight while filling")
	payloadNames := fs.String("payloads", "operator,identity", "the payloads of the two servers, comma-separated (see bench reads -payload)")
	endpoints := fs.String("endpoints", "", "the two servers, host:port,host:port")
	serverPIDs := fs.String("server-pids", "", "the two servers' processes, pid,pid: prints each server's CPU time a call")
	samplesPath := fs.String("samples", "", "file to write every timed pair to (entries, call, microseconds of the first payload's call, of the second's)")
	_ = fs.Parse(args) // ExitOnError: Parse exits on a bad flag
	names := strings.Split(*payloadNames, ",")
	eps := strings.Split(*endpoints, ",")
	if len(names) != 2 || len(eps) != 2 {
		return errors.New("bench pair needs two -payloads and two -endpoints")
	}
	var pids [2]int
	if *serverPIDs != "" {
		ps := strings.Split(*serverPIDs, ",")
		if len(ps) != 2 {
			return errors.New("-server-pids takes two pids")
		}
		for k, p := range ps {
			v, err := strconv.Atoi(p)
			if err != nil {
				return fmt.Errorf("-server-pids: %w", err)
			}
			pids[k] = v
		}
	}
	var loads [2]payload
	for k, name := range names {
		p, ok := payloads[name]
		if !ok {
			return fmt.Errorf("unknown payload %q", name)
		}
		loads[k] = p
	}
	ns, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	samples, closeSamples, err := openSamples(*samplesPath)
	if err != nil {
		return err
	}
	defer closeSamples()
	var clis [2]pb.HostsServiceClient
	for k, ep := range eps {
		c := connFromEnv()
		c.endpoint = ep
		cli, closeCli, err := c.client()
		if err != nil {
			return err
		}
		defer closeCli()
		clis[k] = cli
	}
	ctx := context.Background()
	var ids [2][]string
	fmt.Fprintf(out, "%-8s %-12s %10s %10s %10s %10s %12s %12s\n", "entries", "call", names[0]+" p50", names[1]+" p50", "diff p50", "pair diff", names[0]+" cpu", names[1]+" cpu")
	for _, n := range ns {
		for k := range 2 {
			start := time.Now()
			added, err := fill(ctx, clis[k], len(ids[k]), n, *concurrency, loads[k])
			ids[k] = append(ids[k], added...)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "filled %s's server to %d entries in %v\n", names[k], n, time.Since(start).Round(time.Millisecond))
		}
		calls := [2][]readCall{readCalls(ctx, clis[0], &ids[0], n, loads[0]), readCalls(ctx, clis[1], &ids[1], n, loads[1])}
		for c := range calls[0] {
			var (
				took  [2][]time.Duration
				diffs []time.Duration
				cpu   [2]time.Duration
			)
			for i := 0; i < *rounds; i++ {
				var d [2]time.Duration
				for _, k := range [2][2]int{{0, 1}, {1, 0}}[i%2] {
					c0, _ := procCPU(pids[k])
					s := time.Now()
					if err := calls[k][c].call(i * 7919); err != nil {
						return fmt.Errorf("%s on %s's server at %d entries: %w", calls[k][c].name, names[k], n, err)
					}
					d[k] = time.Since(s)
					c1, _ := procCPU(pids[k])
					cpu[k] += c1 - c0
				}
				took[0], took[1] = append(took[0], d[0]), append(took[1], d[1])
				diffs = append(diffs, d[1]-d[0])
				fmt.Fprintf(samples, "%d %s %d %d\n", n, calls[0][c].name, d[0].Microseconds(), d[1].Microseconds())
			}
			for k := range 2 {
				slices.Sort(took[k])
			}
			slices.Sort(diffs)
			cpus := [2]string{"-", "-"}
			if pids[0] != 0 {
				for k := range 2 {
					cpus[k] = ms(cpu[k]/time.Duration(*rounds)) + " ms"
				}
				fmt.Fprintf(samples, "%d %s-server-cpu %d %d\n", n, calls[0][c].name, (cpu[0] / time.Duration(*rounds)).Microseconds(), (cpu[1] / time.Duration(*rounds)).Microseconds())
			}
			p50 := func(d []time.Duration) time.Duration { return d[len(d)/2] }
			fmt.Fprintf(out, "%-8d %-12s %7s ms %7s ms %7s ms %7s ms %12s %12s\n", n, calls[0][c].name, ms(p50(took[0])), ms(p50(took[1])),
				ms(p50(took[1])-p50(took[0])), ms(p50(diffs)), cpus[0], cpus[1])
		}
	}
	return nil
}
