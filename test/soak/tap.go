package soak

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhclient"
	"github.com/router-hosts-operator/router-hosts-operator/test/rhtestserver"
)

// tap is one installation's own door to the router: a gRPC relay that serves the router's
// API with the router's certificates and passes every call on, so that every write the router
// takes is known by the installation that sent it (all its replicas go through it). It goes
// down and comes back with the router, dropping its connections as the router does, so that
// an operator sees a router restart as it would without it. It works with the test server
// and the real one alike.
type tap struct {
	pb.UnimplementedHostsServiceServer
	inst    string
	target  string
	files   rhclient.Files
	tlsConf *tls.Config
	addr    string
	ledger  *ledger

	mu      sync.Mutex
	grpc    *grpc.Server
	lis     *rhtestserver.DropListener
	up      pb.HostsServiceClient
	closeUp func()
}

func startTap(inst, target string, pki rhtestserver.PKI, l *ledger) (*tap, error) {
	pair, err := tls.LoadX509KeyPair(pki.ServerCertFile(), pki.ServerKeyFile())
	if err != nil {
		return nil, fmt.Errorf("tap %s: the server certificate: %w", inst, err)
	}
	caPEM, err := os.ReadFile(pki.CAFile())
	if err != nil {
		return nil, fmt.Errorf("tap %s: the CA: %w", inst, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("tap: the CA does not parse")
	}
	t := &tap{inst: inst, target: target, ledger: l, files: rhclient.Files{CA: pki.CAFile(), Cert: pki.CertFile(), Key: pki.KeyFile()},
		tlsConf: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tap %s: %w", inst, err)
	}
	t.addr = lis.Addr().String()
	if err := t.serve(lis); err != nil {
		_ = lis.Close()
		return nil, err
	}
	return t, nil
}

// Addr is where the installation dials the router.
func (t *tap) Addr() string { return t.addr }

// serve starts a fresh gRPC server on lis, with a fresh connection to the router.
func (t *tap) serve(lis net.Listener) error {
	up, closeUp, err := rhclient.Dial(t.target, t.files)
	if err != nil {
		return fmt.Errorf("tap %s: %w", t.inst, err)
	}
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(t.tlsConf)),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}),
		grpc.MaxRecvMsgSize(4<<20))
	pb.RegisterHostsServiceServer(g, t)
	dl := rhtestserver.NewDropListener(lis)
	t.mu.Lock()
	t.grpc, t.lis, t.up, t.closeUp = g, dl, up, closeUp
	t.mu.Unlock()
	go func() { _ = g.Serve(dl) }()
	return nil
}

// stop takes the tap down with the router: the port closes and every connection drops.
func (t *tap) stop() {
	t.mu.Lock()
	g, lis, closeUp := t.grpc, t.lis, t.closeUp
	t.grpc, t.lis, t.closeUp = nil, nil, nil
	t.mu.Unlock()
	if g != nil {
		lis.Drop()
		g.Stop()
		closeUp()
	}
}

// restart serves again on the same address, once the router is back.
func (t *tap) restart() error {
	t.stop()
	var (
		lis net.Listener
		err error
	)
	for i := 0; i < 50; i++ {
		if lis, err = net.Listen("tcp", t.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("tap %s: listening again on %s: %w", t.inst, t.addr, err)
	}
	return t.serve(lis)
}

func (t *tap) upstream() pb.HostsServiceClient {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.up
}

// routerSide is the context of a write passed on: the caller's deadline, but not its
// cancellation, so that the tap learns what the router did with a write whose caller is gone
// (killed, its network reset) as the router's own log would.
func routerSide(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.WithoutCancel(ctx), d)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

func (t *tap) AddHost(ctx context.Context, req *pb.AddHostRequest) (*pb.AddHostResponse, error) {
	at := time.Now()
	ctx, cancel := routerSide(ctx)
	defer cancel()
	resp, err := t.upstream().AddHost(ctx, req)
	t.ledger.write(&write{inst: t.inst, at: at, method: methodAdd, host: req.GetHostname(), id: resp.GetId(), req: req, after: resp.GetEntry(), err: err})
	return resp, err
}

func (t *tap) UpdateHost(ctx context.Context, req *pb.UpdateHostRequest) (*pb.UpdateHostResponse, error) {
	at := time.Now()
	ctx, cancel := routerSide(ctx)
	defer cancel()
	resp, err := t.upstream().UpdateHost(ctx, req)
	t.ledger.write(&write{inst: t.inst, at: at, method: methodUpdate, id: req.GetId(), expected: req.ExpectedVersion, req: req, after: resp.GetEntry(), err: err})
	return resp, err
}

func (t *tap) DeleteHost(ctx context.Context, req *pb.DeleteHostRequest) (*pb.DeleteHostResponse, error) {
	at := time.Now()
	ctx, cancel := routerSide(ctx)
	defer cancel()
	resp, err := t.upstream().DeleteHost(ctx, req)
	t.ledger.write(&write{inst: t.inst, at: at, method: methodDelete, id: req.GetId(), expected: req.ExpectedVersion, req: req, err: err})
	return resp, err
}

// CompactAggregates passes an installation's compactions on (on by default), so that the churn
// folds logs as a router in use does; a compaction changes nothing an entry says, so the ledger,
// which judges what the writes did to entries, does not keep it.
func (t *tap) CompactAggregates(ctx context.Context, req *pb.CompactAggregatesRequest) (*pb.CompactAggregatesResponse, error) {
	ctx, cancel := routerSide(ctx)
	defer cancel()
	return t.upstream().CompactAggregates(ctx, req)
}

func (t *tap) GetHost(ctx context.Context, req *pb.GetHostRequest) (*pb.GetHostResponse, error) {
	return t.upstream().GetHost(ctx, req)
}

func (t *tap) Liveness(ctx context.Context, req *pb.LivenessRequest) (*pb.LivenessResponse, error) {
	return t.upstream().Liveness(ctx, req)
}

func (t *tap) Readiness(ctx context.Context, req *pb.ReadinessRequest) (*pb.ReadinessResponse, error) {
	return t.upstream().Readiness(ctx, req)
}

func (t *tap) Health(ctx context.Context, req *pb.HealthRequest) (*pb.HealthResponse, error) {
	return t.upstream().Health(ctx, req)
}

func (t *tap) ListHosts(req *pb.ListHostsRequest, out grpc.ServerStreamingServer[pb.ListHostsResponse]) error {
	in, err := t.upstream().ListHosts(out.Context(), req)
	if err != nil {
		return err
	}
	return relay(in.Recv, out.Send)
}

func (t *tap) SearchHosts(req *pb.SearchHostsRequest, out grpc.ServerStreamingServer[pb.SearchHostsResponse]) error {
	in, err := t.upstream().SearchHosts(out.Context(), req)
	if err != nil {
		return err
	}
	return relay(in.Recv, out.Send)
}

// relay passes a stream on until it ends; its error, the router's, goes to the caller as it is.
func relay[M any](recv func() (M, error), send func(M) error) error {
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := send(m); err != nil {
			return err
		}
	}
}

// The writes the ledger keeps.
const (
	methodAdd    = "AddHost"
	methodUpdate = "UpdateHost"
	methodDelete = "DeleteHost"
)

// write is one write call an installation sent the router, as its tap saw it.
type write struct {
	inst   string
	at     time.Time
	method string
	// host is an AddHost's hostname; id the entry written (an AddHost's once it answered).
	host, id string
	// expected is the version an UpdateHost or a DeleteHost was sent for, nil when none.
	expected *string
	req      proto.Message
	// after is the entry as the router answered an AddHost or an UpdateHost.
	after *pb.HostEntry
	err   error
}

func (w *write) String() string {
	out := fmt.Sprintf("%s at %s", w.method, w.at.Format("15:04:05.000"))
	if w.expected != nil {
		out += " for version " + *w.expected
	}
	if w.err != nil {
		out += fmt.Sprintf(" (failed: %v)", w.err)
	}
	return out
}

// ledger is every version of every entry the run saw written, whoever wrote it (the
// installations through their taps, the person, the seeding of cluster c), and every write
// the installations sent: from it, the entry a write was sent for (its expected version) is
// known exactly, however quickly the entry changed before and after.
type ledger struct {
	mu       sync.Mutex
	versions map[string]map[string]*pb.HostEntry
	writes   []*write
}

func newLedger() *ledger {
	return &ledger{versions: map[string]map[string]*pb.HostEntry{}}
}

// saw records a version of an entry as a write's answer showed it.
func (l *ledger) saw(e *pb.HostEntry) {
	if e == nil || e.GetId() == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sawLocked(e)
}

func (l *ledger) sawLocked(e *pb.HostEntry) {
	vs := l.versions[e.GetId()]
	if vs == nil {
		vs = map[string]*pb.HostEntry{}
		l.versions[e.GetId()] = vs
	}
	vs[e.GetVersion()] = e
}

func (l *ledger) write(w *write) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.err == nil && w.after != nil {
		l.sawLocked(w.after)
		if w.id == "" {
			w.id = w.after.GetId()
		}
	}
	l.writes = append(l.writes, w)
}

// version is the entry id at version v, nil when the run never saw it.
func (l *ledger) version(id string, v *string) *pb.HostEntry {
	if v == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.versions[id][*v]
}

// save writes every write down, one a line, for reading a run afterwards.
func (l *ledger) save(path string, start time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, w := range l.writes {
		result := "ok"
		if w.err != nil {
			result = "failed: " + w.err.Error()
		}
		after := ""
		if w.after != nil {
			after = fmt.Sprintf(" -> v%s %s %s aliases=%v tags=%v", w.after.GetVersion(), w.after.GetIpAddress(), w.after.GetHostname(), w.after.GetAliases(), w.after.GetTags())
		}
		expected := ""
		if w.expected != nil {
			expected = " for v" + *w.expected
		}
		fmt.Fprintf(&b, "%9s  %s %s %s%s%s (%s)\n", w.at.Sub(start).Round(time.Millisecond), w.inst, w.method, w.id+w.host, expected, after, result)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// since are the writes sent from t on, in the order the taps saw them.
func (l *ledger) since(t time.Time) []*write {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*write
	for _, w := range l.writes {
		if !w.at.Before(t) {
			out = append(out, w)
		}
	}
	return out
}
