package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// explainRun times explain and list as a person runs them, against the router the run
// converged, once its operator has stopped: the whole process, from its start (the informers'
// lists and one read of the router) to its answer, and the router-hosts reads it made (from the
// server's own counts; a real router cannot tell them apart from others').
func (b *bench) explainRun(ctx context.Context, c conn, r *result, hostname string, args ...string) error {
	run := func(cmdArgs ...string) (time.Duration, string, error) {
		before := b.srv.calls()
		cmd := exec.CommandContext(ctx, b.opts.operator, append(append([]string{"--cluster-name=" + benchCluster, "--max-entries-per-namespace=0",
			"--log-level=warn"}, args...), cmdArgs...)...)
		cmd.Env = append(append(os.Environ(), "KUBECONFIG="+b.kubeconfig), c.env()...)
		t := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(t)
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
	return nil
}
