// Package rhclient dials a router-hosts server as a plain client: mutual TLS 1.3 and the
// keepalive the server allows, and none of the operator's code. Tools that load or watch a
// server beside the operator (the bench's floor, the soak's person and checker) use it, so
// that what they see is the server's answer, not the operator's view of it.
package rhclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
)

// Files are the client's TLS material: the CA that signed the server's certificate, the
// client certificate and its key; ServerName, when set, is the name the server's certificate
// must carry instead of the endpoint's host.
type Files struct {
	CA, Cert, Key, ServerName string
}

// Dial returns a client of the server at endpoint and a function that closes its connection.
// The connection is made on first use.
func Dial(endpoint string, f Files) (pb.HostsServiceClient, func(), error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("loading the client certificate: %w", err)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, nil, fmt.Errorf("CA %s holds no PEM certificate", f.CA)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: f.ServerName}
	// The server sends away clients that ping more often than every 15 s.
	cc, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return nil, nil, fmt.Errorf("dialing %s: %w", endpoint, err)
	}
	return pb.NewHostsServiceClient(cc), func() { _ = cc.Close() }, nil
}

// List reads every live entry with one ListHosts.
func List(ctx context.Context, cli pb.HostsServiceClient) ([]*pb.HostEntry, error) {
	stream, err := cli.ListHosts(ctx, &pb.ListHostsRequest{})
	if err != nil {
		return nil, fmt.Errorf("ListHosts: %w", err)
	}
	var out []*pb.HostEntry
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("ListHosts: %w", err)
		}
		out = append(out, resp.GetEntry())
	}
}
