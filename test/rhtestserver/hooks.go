package rhtestserver

import (
	"context"
	"fmt"
	"os/exec"
	"sync"

	"google.golang.org/grpc"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// Hook is what the server runs after a write, as the real server runs a [[hooks.on_success]]
// command (e.g. `systemctl reload dnsmasq`). Its error is only remembered, as the real server
// only logs it: the write has succeeded whatever the hook does.
type Hook func() error

// CommandHook is a hook that runs command with sh -c, as the real server runs its hooks'
// commands.
func CommandHook(command string) Hook {
	return func() error {
		if out, err := exec.Command("sh", "-c", command).CombinedOutput(); err != nil {
			return fmt.Errorf("hook %q: %w: %s", command, err, out)
		}
		return nil
	}
}

// hookRunner runs the on-success hook on a goroutine of its own, one run at a time, as the real
// server's background runner does: the writes that come while a run is under way, however
// many, make one more run after it, so the last write is always followed by a run that sees it.
type hookRunner struct {
	mu      sync.Mutex
	hook    Hook
	pending bool
	running bool
	runs    int
	err     error
	// idle is closed and replaced whenever the runner stops with nothing pending.
	idle chan struct{}
}

// OnSuccess makes the server run hook after every AddHost, UpdateHost and DeleteHost that
// succeeded, once the call has returned, on the background runner; nil stops it (a hook that
// is not configured, or one that fails to run: the writes still succeed and the router's DNS
// is not reloaded).
func (s *Server) OnSuccess(hook Hook) {
	r := &s.hooks
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hook = hook
}

// HookRuns is the number of hook runs so far, and the error of the last one that failed (nil
// when none did).
func (s *Server) HookRuns() (int, error) {
	r := &s.hooks
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs, r.err
}

// HooksIdle waits until no hook runs and none is pending, or ctx ends.
func (s *Server) HooksIdle(ctx context.Context) error {
	r := &s.hooks
	for {
		r.mu.Lock()
		if !r.running && !r.pending {
			r.mu.Unlock()
			return nil
		}
		if r.idle == nil {
			r.idle = make(chan struct{})
		}
		idle := r.idle
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the on-success hook: %w", ctx.Err())
		case <-idle:
		}
	}
}

// trigger asks for a run after the one under way, if any; it never waits for the hook.
func (r *hookRunner) trigger() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hook == nil {
		return
	}
	r.pending = true
	if !r.running {
		r.running = true
		go r.run()
	}
}

func (r *hookRunner) run() {
	for {
		r.mu.Lock()
		hook := r.hook
		if !r.pending || hook == nil {
			r.running, r.pending = false, false
			if r.idle != nil {
				close(r.idle)
				r.idle = nil
			}
			r.mu.Unlock()
			return
		}
		r.pending = false
		r.mu.Unlock()
		err := hook()
		r.mu.Lock()
		r.runs++
		if err != nil {
			r.err = err
		}
		r.mu.Unlock()
	}
}

// writeMethods are the RPCs after which the real server runs its hooks.
var writeMethods = map[string]bool{
	pb.HostsService_AddHost_FullMethodName:    true,
	pb.HostsService_UpdateHost_FullMethodName: true,
	pb.HostsService_DeleteHost_FullMethodName: true,
}

// afterWrites is the server's unary interceptor: a write that succeeded triggers the hook
// once its handler has returned, so the reply never waits for the hook, as on the real server.
func (s *Server) afterWrites(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err == nil && writeMethods[info.FullMethod] {
		s.hooks.trigger()
	}
	return resp, err
}
