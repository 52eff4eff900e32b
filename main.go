// Command router-hosts-operator keeps a router-hosts server's host entries in step with the
// annotated resources of a Kubernetes cluster, so that services get internal DNS names on the
// router. See README.md for flags, annotations, tags and the deletion rules.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/internal/klogbridge"
	"github.com/router-hosts-operator/router-hosts-operator/internal/memtune"
	"github.com/router-hosts-operator/router-hosts-operator/internal/operator"
)

// The release's version (its git tag), commit and build date, set at build time with
// -ldflags "-X main.version=... -X main.commit=... -X main.date=...".
var (
	version = "dev"
	commit  = ""
	date    = ""
)

func main() {
	// Linked or copied as kubectl-router_hosts, the binary is the kubectl plugin `kubectl
	// router-hosts`, and says so in its help and errors.
	name := operator.ProgramName(os.Args[0])
	cfg, err := operator.ParseFlags(os.Args[1:], operator.Build{Version: version, Commit: commit, Date: date}.WithVCS())
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	log, err := newLogger(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	klogbridge.Install(log)
	if soft := memtune.Set(); soft > 0 {
		log.WithField("go_memory_limit_mib", soft>>20).Info("Go soft memory limit set below the container's")
	}
	// SIGTERM and SIGINT cancel the context; the provider finishes the writes in flight and
	// the loop returns, so a rolling update never leaves a half-sent change.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := operator.Run(ctx, cfg, log, os.Stdout); err != nil {
		code := operator.ExitCode(cfg, err)
		var answer *operator.PlanExitError
		if !errors.As(err, &answer) && (code != 1 || (cfg.Command != operator.CommandExplain && cfg.Command != operator.CommandList)) {
			log.WithError(err).Error("router-hosts-operator failed")
		}
		os.Exit(code)
	}
}

// logTime is the logs' timestamp: RFC 3339 to the millisecond.
const logTime = "2006-01-02T15:04:05.000Z07:00"

// newLogger builds the process logger from --log-level and --log-format.
func newLogger(level, format string) (*logrus.Logger, error) {
	log := logrus.New()
	log.SetOutput(os.Stderr)
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	log.SetLevel(lvl)
	// Milliseconds, so that a sync's lines can be set beside a change's other traces (an
	// apiserver's audit log, the router's, a timed kubectl) to the part of it that each took.
	switch format {
	case "json":
		log.SetFormatter(&logrus.JSONFormatter{TimestampFormat: logTime})
	default:
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: logTime})
	}
	return log, nil
}
