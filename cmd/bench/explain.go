package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/source"
)

// explainRun times explain, list and plan as a person runs them, against the router the run
// converged, once its operator has stopped: the whole process, from its start (the informers'
// lists and one read of the router) to its answer, and the router-hosts reads it made (from the
// server's own counts; a real router cannot tell them apart from others').
func (b *bench) explainRun(ctx context.Context, c conn, r *result, hostname string, args ...string) error {
	// plan exits 1 for a plan with changes, which is its answer, not a failure.
	run := func(cmdArgs ...string) (time.Duration, string, error) {
		before := b.srv.calls()
		cmd := exec.CommandContext(ctx, b.opts.operator, append(append([]string{"--cluster-name=" + benchCluster, "--max-entries-per-namespace=0",
			"--log-level=warn"}, args...), cmdArgs...)...)
		cmd.Env = append(append(os.Environ(), "KUBECONFIG="+b.kubeconfig), c.env()...)
		t := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(t)
		var exit *exec.ExitError
		if cmdArgs[0] == "plan" && errors.As(err, &exit) && exit.ExitCode() == 1 {
			err = nil
		}
		if err != nil {
			return 0, "", fmt.Errorf("%v: %w\n%s", cmdArgs, err, out)
		}
		reads := "-"
		if after := b.srv.calls(); after != nil {
			reads = fmt.Sprintf("%d / %d", after["ListHosts"]-before["ListHosts"], after["SearchHosts"]-before["SearchHosts"])
		}
		return took, reads, nil
	}
	var err error
	if r.explainTook, r.explainReads, err = run("explain", hostname); err != nil {
		return err
	}
	if r.listTook, _, err = run("list"); err != nil {
		return err
	}
	manifest, err := b.planManifest(r.kind)
	if err != nil {
		return err
	}
	if r.planTook, r.planReads, err = run("plan", "-f", manifest); err != nil {
		return err
	}
	return nil
}

// planManifest writes the manifest a pull request of the run's kind would carry: one new object
// of it, which plan lays over the run's objects.
func (b *bench) planManifest(kind string) (string, error) {
	doc := `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: planned
  namespace: ` + benchNamespace + `
  annotations: {router-hosts.fzymgc.house/enabled: "true", router-hosts.fzymgc.house/ip-address: 10.99.0.1}
spec:
  rules: [{host: planned.bench.lan}]
`
	if kind == source.HostMappingKind {
		doc = `apiVersion: router-hosts.fzymgc.house/v1alpha1
kind: HostMapping
metadata:
  name: planned
  namespace: ` + benchNamespace + `
spec: {hostname: planned.bench.lan, ipAddress: 10.99.0.1}
`
	}
	path := filepath.Join(b.dir, "planned.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		return "", fmt.Errorf("writing the plan's manifest: %w", err)
	}
	return path, nil
}
