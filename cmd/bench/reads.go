package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
)

// readsCommand is `bench reads`: what each way of reading the server costs as it fills, for
// choosing how a sync learns of the entries of a hostname it is about to create, and what the
// write of one change costs beside them. It fills the server in ROUTER_HOSTS_OPERATOR_* with
// the bench's entries up to each size, then times GetHost of one entry, SearchHosts of one
// hostname, ListHosts and UpdateHost of one entry's address (the server rewrites its hosts
// file from a replay of its log before it answers), and deletes its entries at the end.
// -payload=upstream fills with what the upstream operator writes for a HostMapping (a short
// comment, no tags) instead of the operator's five tags and comment, so the two stores' costs
// can be told apart from the operators'. -payload=identity is operator's with the
// installation's identity in the cluster tag, -payload=identity-tag with it in a tag of its
// own, to weigh what each costs the server. Last at each size it
// times AddHost of new entries of the same payload, one at a time (they stay: the next size
// counts them). -samples writes every timed call, for pooling runs.
func readsCommand(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("reads", flag.ExitOnError)
	sizes := fs.String("sizes", "1000,5000", "entries on the server when the reads are timed, comma-separated")
	rounds := fs.Int("rounds", 20, "calls timed per read and size")
	concurrency := fs.Int("concurrency", 4, "AddHost calls in flight while filling")
	payloadName := fs.String("payload", "operator", "what the entries carry: operator (five tags and the comment), upstream (a short comment, no tags), equal (the five tags, upstream's comment), identity (operator's with the installation's identity in the cluster tag, as the operator writes it), identity-tag (the identity in a tag of its own) or identity10 (identity-tag's plus nine more tags of its length, an amplifier)")
	samplesPath := fs.String("samples", "", "file to write every timed call to (entries, call, microseconds; one a line)")
	serverPID := fs.Int("server-pid", 0, "the server's process, on this machine: prints the server's CPU time a call of each kind (from /proc, utime+stime), which other work on the machine disturbs less than the wall time")
	cleanup := fs.Bool("cleanup", true, "delete the bench's entries at the end (false: leave them, for a server thrown away after the run)")
	_ = fs.Parse(args) // ExitOnError: Parse exits on a bad flag
	payload, ok := payloads[*payloadName]
	if !ok {
		return fmt.Errorf("unknown -payload %q: operator, upstream, equal, identity, identity-tag or identity10", *payloadName)
	}
	ns, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	c := connFromEnv()
	if c.endpoint == "" {
		return errors.New("bench reads needs ROUTER_HOSTS_OPERATOR_ROUTER_HOSTS_ENDPOINT, _TLS_CA, _TLS_CERT and _TLS_KEY")
	}
	cli, closeCli, err := c.client()
	if err != nil {
		return err
	}
	defer closeCli()
	ctx := context.Background()
	samples, closeSamples, err := openSamples(*samplesPath)
	if err != nil {
		return err
	}
	defer closeSamples()
	var ids []string
	defer func() {
		if !*cleanup {
			return
		}
		for _, id := range ids {
			if _, err := cli.DeleteHost(ctx, &pb.DeleteHostRequest{Id: id}); err != nil && status.Code(err) != codes.NotFound {
				fmt.Fprintln(os.Stderr, "bench reads: cleaning up:", err)
				return
			}
		}
	}()
	fmt.Fprintf(out, "%-8s %-12s %12s %12s %12s %12s %15s\n", "entries", "read", "p50", "p90", "p99", "max", "server cpu/call")
	for _, n := range ns {
		start := time.Now()
		added, err := fill(ctx, cli, len(ids), n, *concurrency, payload)
		ids = append(ids, added...)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "filled to %d entries in %v\n", n, time.Since(start).Round(time.Millisecond))
		for _, r := range readCalls(ctx, cli, &ids, n, payload) {
			var took []time.Duration
			cpu0, cpuErr := procCPU(*serverPID)
			for i := 0; i < *rounds; i++ {
				s := time.Now()
				if err := r.call(i * 7919); err != nil {
					return fmt.Errorf("%s at %d entries: %w", r.name, n, err)
				}
				took = append(took, time.Since(s))
				fmt.Fprintf(samples, "%d %s %d\n", n, r.name, took[len(took)-1].Microseconds())
			}
			cpu1, err := procCPU(*serverPID)
			cpu := "-"
			if cpuErr == nil && err == nil && *serverPID != 0 {
				per := (cpu1 - cpu0) / time.Duration(*rounds)
				cpu = ms(per) + " ms"
				fmt.Fprintf(samples, "%d %s-server-cpu %d\n", n, r.name, per.Microseconds())
			}
			slices.Sort(took)
			fmt.Fprintf(out, "%-8d %-12s %9s ms %9s ms %9s ms %9s ms %15s\n", n, r.name, ms(took[len(took)/2]), ms(took[len(took)*9/10]), ms(took[len(took)*99/100]), ms(took[len(took)-1]), cpu)
		}
	}
	return nil
}

// readCall is one kind of call the reads time; call(i) makes the i-th.
type readCall struct {
	name string
	call func(i int) error
}

// readCalls are the calls timed at n entries on the server of cli, whose bench entries are
// *ids (AddHost appends the entries it adds), in the order they are timed.
func readCalls(ctx context.Context, cli pb.HostsServiceClient, ids *[]string, n int, payload payload) []readCall {
	return []readCall{
		{"GetHost", func(i int) error {
			_, err := cli.GetHost(ctx, &pb.GetHostRequest{Id: (*ids)[i%len(*ids)]})
			return err
		}},
		{"SearchHosts", func(i int) error {
			stream, err := cli.SearchHosts(ctx, &pb.SearchHostsRequest{Query: benchHostname(i % n)})
			if err != nil {
				return err
			}
			for {
				if _, err := stream.Recv(); errors.Is(err, io.EOF) {
					return nil
				} else if err != nil {
					return err
				}
			}
		}},
		{"ListHosts", func(int) error {
			_, err := rhclient.List(ctx, cli)
			return err
		}},
		{"UpdateHost", func(i int) error {
			// The address alternates, so every call is a real change of one field.
			id := (*ids)[i%len(*ids)]
			got, err := cli.GetHost(ctx, &pb.GetHostRequest{Id: id})
			if err != nil {
				return err
			}
			ip := "10.250.0.1"
			if got.GetEntry().GetIpAddress() == ip {
				ip = "10.250.0.2"
			}
			_, err = cli.UpdateHost(ctx, &pb.UpdateHostRequest{Id: id, IpAddress: &ip, ExpectedVersion: proto.String(got.GetEntry().GetVersion())})
			return err
		}},
		{"AddHost", func(int) error {
			// A new entry of the same payload: the duplicate check and the hosts file's
			// rewrite both replay the log.
			i := len(*ids)
			comment, tags := payload(i)
			resp, err := cli.AddHost(ctx, &pb.AddHostRequest{IpAddress: fmt.Sprintf("10.%d.%d.%d", 90+i/65536, i/256%256, i%256), Hostname: benchHostname(i),
				Comment: proto.String(comment), Tags: tags})
			if err == nil {
				*ids = append(*ids, resp.GetId())
			}
			return err
		}},
	}
}

// benchHostname is the i-th hostname the reads fill the server with.
func benchHostname(i int) string { return fmt.Sprintf("reads-%05d.bench.example", i) }

// payload is what the i-th entry carries besides its hostname and address.
type payload func(i int) (comment string, tags []string)

// operatorPayload is what the operator writes for the i-th of the bench's Ingresses.
func operatorPayload(i int) (string, []string) {
	return "router-hosts-operator: Ingress bench/app", []string{registry.PrefixCluster + benchCluster, registry.TagOwner, registry.PrefixKind + "Ingress",
		registry.PrefixNamespace + "bench", registry.PrefixSource + fmt.Sprintf("00000000-0000-0000-0000-%012d", i)}
}

var payloads = map[string]payload{
	"operator": operatorPayload,
	"upstream": func(i int) (string, []string) { return fmt.Sprintf("k8s:bench/app-%d", i), nil },
	// equal is what hack/latency-equal.sh has the upstream operator write: our five tags, its
	// own comment, so that only the comments differ from operator's.
	"equal": func(i int) (string, []string) {
		_, tags := operatorPayload(i)
		return fmt.Sprintf("k8s:bench/app-%d", i), tags
	},
	// identity is operator's with the installation's identity in the cluster tag
	// (cluster:<name>@<id>), as versions before the design's tags wrote it: the same number of
	// tags, 9 bytes more.
	"identity": identityPayload,
	// identity-tag is what the operator writes: the design's cluster:<name> and the identity in
	// a tag of its own (cluster-id:<id>), one tag more.
	"identity-tag": identityTagPayload,
	// identity-short is identity-tag's with the shortest comment that still names the object
	// (the upstream operator's form): what a shorter comment would win back of the identity's
	// cost.
	"identity-short": func(i int) (string, []string) {
		_, tags := identityTagPayload(i)
		return "k8s:bench/app", tags
	},
	// identity10 is an amplifier, not a payload anyone writes: operator's plus ten tags of the
	// identity tag's 19 bytes (the identity and nine of its shape), so that the cost of one is
	// read as a tenth of a difference ten times as large as the noise of the machine.
	"identity10": func(i int) (string, []string) {
		comment, tags := identityTagPayload(i)
		for k := range 9 {
			tags = append(tags, fmt.Sprintf("cluster-i%d:%s", k, benchClusterID))
		}
		return comment, endpoint.SortedUnique(tags)
	},
}

// benchClusterID is the identity the bench's identity payload carries: 8 lowercase hex digits.
const benchClusterID = "1a2b3c4d"

// identityPayload is operator's with the identity in the cluster tag, as versions before the
// design's tags wrote it (cluster:<name>@<id>), the tags sorted and
// unique as the operator writes them (registry merge: OwnerTags and the record's tags go
// through endpoint.SortedUnique).
func identityPayload(i int) (string, []string) {
	comment, tags := operatorPayload(i)
	for k, t := range tags {
		if t == registry.PrefixCluster+benchCluster {
			tags[k] = registry.ClusterTag(benchCluster) + registry.IdentitySeparator + benchClusterID
		}
	}
	return comment, endpoint.SortedUnique(tags)
}

// identityTagPayload is operator's with the identity in a tag of its own, as the operator
// writes it.
func identityTagPayload(i int) (string, []string) {
	comment, tags := operatorPayload(i)
	return comment, endpoint.SortedUnique(append(tags, registry.PrefixClusterID+benchClusterID))
}

// fill adds entries from from up to to, concurrency at a time, and returns their IDs.
func fill(ctx context.Context, cli pb.HostsServiceClient, from, to, concurrency int, carry payload) ([]string, error) {
	var (
		mu  sync.Mutex
		ids []string
	)
	err := harness.Pool(concurrency, to-from, func(j int) error {
		i := from + j
		comment, tags := carry(i)
		resp, err := cli.AddHost(ctx, &pb.AddHostRequest{IpAddress: fmt.Sprintf("10.%d.%d.%d", 90+i/65536, i/256%256, i%256), Hostname: benchHostname(i),
			Comment: proto.String(comment), Tags: tags})
		if err != nil {
			return err
		}
		mu.Lock()
		ids = append(ids, resp.GetId())
		mu.Unlock()
		return nil
	})
	sort.Strings(ids)
	return ids, err
}

// procCPU is the user and system CPU time process pid has used so far (pid 0: none).
func procCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	var ticks int64
	for _, v := range f[11:13] {
		t, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += t
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux architecture Go
// supports.
const clockTicks = 100

// openSamples opens the file every call's time is written to, one a line; with no path the
// samples go nowhere.
func openSamples(path string) (io.Writer, func(), error) {
	if path == "" {
		return io.Discard, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("samples file: %w", err)
	}
	return f, func() { _ = f.Close() }, nil
}
