// Package harness holds what the bench (cmd/bench), the soak (test/soak) and the tests need to
// run the operator and its neighbours on this machine, each in one place:
//
//   - free loopback ports for the processes they start (FreePort, Addr);
//   - child processes that log to a file and are stopped the way Kubernetes stops a pod: a
//     signal, a grace period, then SIGKILL (Start, Process.Stop);
//   - a pool of workers that runs numbered jobs (Pool).
//
// The router-hosts test server the bench and the soak run in their own process is
// internal/rhtestserver.
package harness
