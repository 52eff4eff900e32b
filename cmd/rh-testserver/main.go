// Command rh-testserver runs the router-hosts TEST SERVER for `make demo` and manual trials, and
// lists the entries of any router-hosts server, the real one included:
//
//	rh-testserver serve -dir D [-addr A] [-replay-cost 32us] [-hosts-file F [-on-success CMD]]
//	rh-testserver list [-addr A] [-ca F] [-cert F] [-key F] [-server-name N]
//
// serve writes its CA and client certificate into D (ca.crt, tls.crt, tls.key) and its address
// to D/addr, and serves until SIGINT or SIGTERM. With -hosts-file it keeps a hosts file as the
// real server does, and with -on-success runs a command after each write, as the real server's
// [[hooks.on_success]] (e.g. one that reloads a dnsmasq reading that file). list's flags default to the operator's own
// ROUTER_HOSTS_OPERATOR_* environment variables.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/provider/inmemory"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

const envPrefix = "ROUTER_HOSTS_OPERATOR_"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "list":
		err = list(os.Args[2:], os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rh-testserver %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: rh-testserver serve -dir D [-addr A] [-replay-cost D] [-hosts-file F [-on-success CMD]]\n       rh-testserver list [-addr A] [-ca F] [-cert F] [-key F] [-server-name N]")
	os.Exit(2)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("dir", "", "directory for the CA, the certificates and the addr file (required)")
	addr := fs.String("addr", "", "listen address (default 127.0.0.1 on a free port)")
	cost := fs.Duration("replay-cost", 0, "latency per event replayed by reads and AddHost; "+
		inmemory.RouterReplayCost.String()+" plays a router running the real server 0.13")
	hosts := fs.String("hosts-file", "", "keep a hosts file here, rewritten after every write, as the real server's hosts_file_path")
	hook := fs.String("on-success", "", "shell command run after each write, after the reply, runs coalesced, as the real server's [[hooks.on_success]]")
	_ = fs.Parse(args) // ExitOnError: Parse exits on a bad flag
	if *dir == "" {
		return errors.New("-dir is required")
	}
	srv, err := rhtestserver.Start(*dir, *addr)
	if err != nil {
		return fmt.Errorf("starting: %w", err)
	}
	defer srv.Stop()
	srv.Store().SetReplayCost(*cost)
	if *hosts != "" {
		srv.WriteHostsFile(*hosts)
	}
	if *hook != "" {
		srv.OnSuccess(rhtestserver.CommandHook(*hook))
	}
	if err := os.WriteFile(filepath.Join(*dir, "addr"), []byte(srv.Addr()+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing the address: %w", err)
	}
	fmt.Printf("router-hosts TEST SERVER (in-memory, standing in for a router) on %s; CA %s, client cert %s, key %s\n",
		srv.Addr(), srv.CAFile(), srv.CertFile(), srv.KeyFile())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

func list(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("list", flag.ExitOnError)
	addr := fs.String("addr", os.Getenv(envPrefix+"ROUTER_HOSTS_ENDPOINT"), "server host:port")
	caFile := fs.String("ca", os.Getenv(envPrefix+"TLS_CA"), "CA certificate that signed the server's certificate")
	certFile := fs.String("cert", os.Getenv(envPrefix+"TLS_CERT"), "client certificate")
	keyFile := fs.String("key", os.Getenv(envPrefix+"TLS_KEY"), "client key")
	serverName := fs.String("server-name", os.Getenv(envPrefix+"TLS_SERVER_NAME"), "name to verify in the server's certificate (default: the host of -addr)")
	_ = fs.Parse(args) // ExitOnError: Parse exits on a bad flag
	if *addr == "" || *caFile == "" || *certFile == "" || *keyFile == "" {
		return errors.New("-addr, -ca, -cert and -key are required (or the ROUTER_HOSTS_OPERATOR_* variables)")
	}
	cli, closeCli, err := rhclient.Dial(*addr, rhclient.Files{CA: *caFile, Cert: *certFile, Key: *keyFile, ServerName: *serverName})
	if err != nil {
		return err
	}
	defer closeCli()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	entries, err := rhclient.List(ctx, cli)
	if err != nil {
		return fmt.Errorf("listing %s: %w", *addr, err)
	}
	return printTable(out, entries)
}

// printTable sorts by hostname then IP, because the server streams entries in no order.
func printTable(out io.Writer, entries []*pb.HostEntry) error {
	sort.Slice(entries, func(i, j int) bool {
		if a, b := entries[i].GetHostname(), entries[j].GetHostname(); a != b {
			return a < b
		}
		return entries[i].GetIpAddress() < entries[j].GetIpAddress()
	})
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "HOSTNAME\tIP\tALIASES\tTAGS")
	for _, e := range entries {
		tags := append([]string(nil), e.GetTags()...)
		sort.Strings(tags)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.GetHostname(), e.GetIpAddress(), orDash(strings.Join(e.GetAliases(), ",")), orDash(strings.Join(tags, ",")))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return nil
}

// orDash keeps empty columns visible in the table.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
