package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/router-hosts-operator/router-hosts-operator/test/harness"
)

// proc is one operator process, logging to a file of its own.
type proc struct {
	*harness.Process
	name    string
	metrics string
	// killed says the soak ended it; an exit the soak did not cause is a failure.
	killed atomic.Bool
}

// replica is one replica of a cluster's operator: a slot that runs one process at a time and
// starts a new one after a kill, as a kubelet restarts a container.
type replica struct {
	cluster string
	index   int
	bin     string
	args    []string
	env     []string
	dir     string
	// exited is told of every exit the soak did not cause.
	exited func(p *proc)

	mu  sync.Mutex
	cur *proc
	gen int
}

func (r *replica) name() string { return fmt.Sprintf("%s-%d", r.cluster, r.index) }

// start runs a new process in the slot.
func (r *replica) start() (*proc, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	p := &proc{name: fmt.Sprintf("%s#%d", r.name(), r.gen), metrics: fmt.Sprintf("127.0.0.1:%d", port)}
	cmd := exec.Command(r.bin, append(append([]string(nil), r.args...), "--metrics-address="+p.metrics)...)
	cmd.Env = append(os.Environ(), r.env...)
	if p.Process, err = harness.Start(cmd, filepath.Join(r.dir, fmt.Sprintf("operator-%s-%d.log", r.name(), r.gen))); err != nil {
		return nil, fmt.Errorf("operator %s: %w", p.name, err)
	}
	go func() {
		<-p.Done()
		if !p.killed.Load() && r.exited != nil {
			r.exited(p)
		}
	}()
	r.cur = p
	return p, nil
}

// setArgs gives the processes the slot starts from now on these flags.
func (r *replica) setArgs(args []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.args = args
}

// current is the running process, nil while the slot is empty.
func (r *replica) current() *proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil || r.cur.Exited() {
		return nil
	}
	return r.cur
}

// kill sends SIGKILL to the running process, as a node failure or an OOM kill does.
func (r *replica) kill() *proc {
	p := r.current()
	if p == nil {
		return nil
	}
	p.killed.Store(true)
	_ = p.Cmd.Process.Kill()
	<-p.Done()
	return p
}

// dump ends the running process with SIGQUIT, so that Go writes every goroutine's stack to
// its log; it returns that process, nil when none ran.
func (r *replica) dump() *proc {
	p := r.current()
	if p == nil {
		return nil
	}
	p.killed.Store(true)
	p.Stop(syscall.SIGQUIT, 20*time.Second)
	return p
}

// stop ends the running process with SIGTERM, as a rolling update does, and waits for it.
func (r *replica) stop() {
	p := r.current()
	if p == nil {
		return
	}
	p.killed.Store(true)
	p.Stop(syscall.SIGTERM, 20*time.Second)
}

// metric reads one unlabelled sample from the process's /metrics; ok is false when the
// process does not answer or lacks it.
func (p *proc) metric(name string) (float64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.metrics+"/metrics", nil)
	if err != nil {
		return 0, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// healthy reports whether the process answers /healthz.
func (p *proc) healthy() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.metrics+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// leads reports whether the process holds its cluster's Lease.
func (p *proc) leads() bool {
	v, ok := p.metric("router_hosts_operator_is_leader")
	return ok && v == 1
}

// sample is one reading of a process's resources.
type sample struct {
	proc       string
	age        time.Duration
	at         time.Duration
	rssKiB     float64
	fds        float64
	goroutines float64
}

// sample reads the process's resident memory and open descriptors from /proc and its
// goroutines from /metrics.
func (p *proc) sample(runStart time.Time) (sample, bool) {
	s := sample{proc: p.name, age: time.Since(p.Started), at: time.Since(runStart)}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	if err != nil {
		return s, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &s.rssKiB)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.Cmd.Process.Pid))
	if err != nil {
		return s, false
	}
	s.fds = float64(len(fds))
	g, ok := p.metric("go_goroutines")
	s.goroutines = g
	return s, ok
}

// goroutineCensus counts the goroutines of a Go stack dump by the function they are in (the
// first frame of each, less the runtime's own), most first.
func goroutineCensus(dump string) []string {
	counts := map[string]int{}
	lines := strings.Split(dump, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "goroutine ") || !strings.HasSuffix(l, ":") {
			continue
		}
		for _, f := range lines[i+1:] {
			if f == "" {
				break
			}
			if strings.HasPrefix(f, "\t") || strings.HasPrefix(f, "runtime.") || strings.HasPrefix(f, "internal/") {
				continue
			}
			if j := strings.LastIndex(f, "("); j > 0 {
				f = f[:j]
			}
			counts[f]++
			break
		}
	}
	out := make([]string, 0, len(counts))
	for f, n := range counts {
		out = append(out, fmt.Sprintf("%5d %s", n, f))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

// troubles are the marks of a crash in a log: a panic, a fatal runtime error, a data race.
var troubles = []string{"panic:", "fatal error:", "WARNING: DATA RACE"}

// scanLog returns the first lines of a log that show a crash, with a few lines after each.
func scanLog(r io.Reader) []string {
	var (
		out   []string
		after int
	)
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if after > 0 {
			out[len(out)-1] += "\n" + line
			after--
			continue
		}
		for _, t := range troubles {
			if strings.Contains(line, t) && len(out) < 5 {
				out = append(out, line)
				after = 12
				break
			}
		}
	}
	return out
}
