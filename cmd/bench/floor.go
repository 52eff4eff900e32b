package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/plan"
	"github.com/router-hosts-operator/router-hosts-operator/provider/routerhosts"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
)

// floor times N AddHost calls of the operator's own payloads (hostname, IP, ownership tags and
// comment) on an empty server, concurrency at a time, from a plain client in a process of its
// own, as the operator is: the bench re-runs itself as `bench floor`.
func floor(ctx context.Context, dir string, c conn, kind, ns string, apps []app, concurrency int) (took, cpu time.Duration, err error) {
	f, err := os.CreateTemp(dir, "floor-*.json")
	if err != nil {
		return 0, 0, fmt.Errorf("floor payloads: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, a := range apps {
		comment := "router-hosts-operator: " + kind + " " + ns + "/" + a.name
		req := &pb.AddHostRequest{IpAddress: a.ip, Hostname: a.hostname, Comment: &comment,
			Tags: []string{registry.PrefixCluster + benchCluster, registry.TagOwner, registry.PrefixKind + kind,
				registry.PrefixNamespace + ns, registry.PrefixSource + string(a.uid)}}
		line, err := protojson.Marshal(req)
		if err != nil {
			f.Close()
			return 0, 0, fmt.Errorf("floor payloads: %w", err)
		}
		_, _ = w.Write(append(line, '\n')) // a write error is reported by Flush
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return 0, 0, fmt.Errorf("floor payloads: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return 0, 0, fmt.Errorf("finding the bench binary: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, "floor", "-payloads", f.Name(), "-concurrency", strconv.Itoa(concurrency))
	cmd.Env = append(os.Environ(), c.env()...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return 0, 0, fmt.Errorf("floor client: %w: %s", err, ee.Stderr)
		}
		return 0, 0, fmt.Errorf("floor client: %w", err)
	}
	d, err := time.ParseDuration(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, 0, fmt.Errorf("floor client printed %q: %w", out, err)
	}
	return d, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// floorClient is `bench floor`: it sends the AddHost requests of a payload file (one JSON
// object a line) with the given concurrency to the server in the ROUTER_HOSTS_OPERATOR_*
// variables and prints the time they took, the connection being made before the clock starts.
func floorClient(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	payloads := fs.String("payloads", "", "file of AddHostRequest, one JSON object a line")
	concurrency := fs.Int("concurrency", 4, "requests in flight at once")
	via := fs.String("via", "client", "client: a plain gRPC client; provider: the operator's provider (its connection, deadlines and write pool), the same requests as creates")
	_ = fs.Parse(args) // ExitOnError: Parse exits on a bad flag
	raw, err := os.ReadFile(*payloads)
	if err != nil {
		return fmt.Errorf("reading payloads: %w", err)
	}
	var reqs []*pb.AddHostRequest
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		req := &pb.AddHostRequest{}
		if err := protojson.Unmarshal([]byte(line), req); err != nil {
			return fmt.Errorf("payload %q: %w", line, err)
		}
		reqs = append(reqs, req)
	}
	if *via == "provider" {
		return floorViaProvider(reqs, *concurrency)
	}
	cli, closeConn, err := connFromEnv().client()
	if err != nil {
		return err
	}
	defer closeConn()
	ctx := context.Background()
	if _, err := cli.Readiness(ctx, &pb.ReadinessRequest{}); err != nil {
		return fmt.Errorf("Readiness: %w", err)
	}
	start := time.Now()
	err = harness.Pool(*concurrency, len(reqs), func(i int) error {
		if _, err := cli.AddHost(ctx, reqs[i]); err != nil {
			return fmt.Errorf("AddHost %s: %w", reqs[i].GetHostname(), err)
		}
		return nil
	})
	took := time.Since(start)
	if err != nil {
		return err
	}
	fmt.Println(took)
	return nil
}

// floorViaProvider sends the requests as creates through the operator's provider, after the
// ListHosts its first sync makes: the operator's write path without the rest of the operator.
func floorViaProvider(reqs []*pb.AddHostRequest, concurrency int) error {
	c := connFromEnv()
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	p, err := routerhosts.New(routerhosts.Options{Endpoint: c.endpoint, CAFile: c.ca, CertFile: c.cert, KeyFile: c.key, ServerName: c.serverName,
		WriteConcurrency: concurrency, Log: log})
	if err != nil {
		return fmt.Errorf("provider: %w", err)
	}
	defer func() { _ = p.Close() }()
	ctx := context.Background()
	if _, err := p.Records(ctx); err != nil {
		return err
	}
	changes := make([]plan.Change, len(reqs))
	for i, r := range reqs {
		changes[i] = plan.Change{Action: plan.Create, New: &endpoint.Record{Hostname: r.GetHostname(), IP: r.GetIpAddress(), Comment: r.GetComment(), Tags: r.GetTags()}}
	}
	start := time.Now()
	if err := plan.ErrorOf(p.ApplyChanges(ctx, changes)); err != nil {
		return err
	}
	fmt.Println(time.Since(start))
	return nil
}
