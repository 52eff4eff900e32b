package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
)

// operator is the operator binary running as its own process, as in a pod, so that its memory
// is its own and its requests are counted by its own metrics.
type operator struct {
	*harness.Process
	metrics string
	// heapPeak is the largest go_memstats_heap_inuse_bytes seen by sampleHeap.
	heapPeak atomic.Uint64
}

// startOperator runs bin against srv with default flags but for the connection, the cluster
// name, the metrics address and the source; extra flags come last.
func startOperator(bin, kubeconfig, dir string, srv conn, extra ...string) (*operator, error) {
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	// Every object of a run is in one namespace, whose budget would hold all but the first
	// thousand entries; the other budgets stay as shipped.
	args := append([]string{"--cluster-name=" + benchCluster, "--max-entries-per-namespace=0",
		fmt.Sprintf("--metrics-address=127.0.0.1:%d", port), "--log-format=json"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+kubeconfig), srv.env()...)
	p, err := harness.Start(cmd, filepath.Join(dir, fmt.Sprintf("operator-%d.log", time.Now().UnixNano())))
	if err != nil {
		return nil, err
	}
	return &operator{Process: p, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port)}, nil
}

// alive fails with the tail of the operator's log once the process has exited.
func (o *operator) alive() error {
	if !o.Exited() {
		return nil
	}
	return fmt.Errorf("the operator exited (%v); its log ends:\n%s", o.Cmd.ProcessState, o.Tail(15))
}

// stop sends SIGTERM, as Kubernetes does, and waits for the exit.
func (o *operator) stop() { o.Stop(syscall.SIGTERM, 10*time.Second) }

// memory reads the process's peak and current resident set size from /proc, in bytes.
func (o *operator) memory() (peak, current uint64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", o.Cmd.Process.Pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the operator's memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(fields[1], 10, 64)
		switch fields[0] {
		case "VmHWM:":
			peak = kb << 10
		case "VmRSS:":
			current = kb << 10
		}
	}
	return peak, current, sc.Err()
}

// cpu is the CPU time the process has used so far, user and system, from /proc.
func (o *operator) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", o.Cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("reading the operator's CPU time: %w", err)
	}
	// The command name (field 2) may hold spaces; the fields after its ')' are fixed.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat line: %q", b)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	// Linux counts clock ticks of 1/100 s (USER_HZ) on every architecture Go supports.
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// scrape reads the operator's /metrics.
func (o *operator) scrape(ctx context.Context) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.metrics, nil)
	if err != nil {
		return nil, fmt.Errorf("metrics request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping the operator: %w", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing the operator's metrics: %w", err)
	}
	return fams, nil
}

// waitMetrics scrapes until the metrics endpoint answers, the process exits or ctx ends.
func (o *operator) waitMetrics(ctx context.Context) (metrics, error) {
	for {
		m, err := o.scrape(ctx)
		if err == nil {
			return m, nil
		}
		if aerr := o.alive(); aerr != nil {
			return nil, aerr
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the operator's metrics never answered: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sampleHeap records the peak in-use Go heap every 250 ms until ctx ends: often enough to see
// the first sync's peak, seldom enough not to load the process being measured.
func (o *operator) sampleHeap(ctx context.Context) {
	for {
		if m, err := o.scrape(ctx); err == nil {
			if v := uint64(m.sum("go_memstats_heap_inuse_bytes", nil)); v > o.heapPeak.Load() {
				o.heapPeak.Store(v)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// metrics is one scrape.
type metrics map[string]*dto.MetricFamily

// sum adds the values of every series of a counter, gauge or histogram count whose labels
// include match.
func (m metrics) sum(name string, match map[string]string) float64 {
	fam, ok := m[name]
	if !ok {
		return 0
	}
	var total float64
series:
	for _, s := range fam.GetMetric() {
		for k, v := range match {
			found := false
			for _, l := range s.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue series
			}
		}
		switch {
		case s.Counter != nil:
			total += s.GetCounter().GetValue()
		case s.Gauge != nil:
			total += s.GetGauge().GetValue()
		case s.Histogram != nil:
			total += float64(s.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// syncs is how many syncs have reported so far.
func (m metrics) syncs() float64 { return m.sum("router_hosts_operator_sync_duration_seconds", nil) }

// kubeRequests is the number of requests the operator sent to the apiserver.
func (m metrics) kubeRequests() float64 {
	return m.sum("router_hosts_operator_kube_requests_total", nil)
}

// rpcs is the operator's count of one router-hosts RPC, successful or not.
func (m metrics) rpcs(method string) float64 {
	return m.sum("router_hosts_operator_router_hosts_requests_total", map[string]string{"method": method})
}

// waitSync scrapes until a sync after the one numbered since has reported, and returns that
// scrape.
func (o *operator) waitSync(ctx context.Context, since float64) (metrics, error) {
	for {
		m, err := o.scrape(ctx)
		if err == nil && m.syncs() > since {
			return m, nil
		}
		if aerr := o.alive(); aerr != nil {
			return nil, aerr
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("no sync reported in time")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
