// Package routerhosts is the provider for the router-hosts gRPC API. It only talks to the
// server: one ListHosts per sync, and each change sent with exactly the fields that differ and
// the version it was planned against. Ownership policy lives in the registry, not here.
package routerhosts

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"

	pb "github.com/router-hosts-operator/router-hosts-operator/api/routerhostsv1"
	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/provider"
)

// Options configures the connection and the write behaviour.
type Options struct {
	// Endpoint is the server's host:port.
	Endpoint string
	// CAFile, CertFile and KeyFile are the mTLS files; they are re-read when they change.
	CAFile, CertFile, KeyFile string
	// Keys, when set, is the mTLS material instead of the files.
	Keys *PEM
	// ServerName is the name the server's certificate must carry; empty means the endpoint's
	// host, a DNS name or an IP address.
	ServerName string
	// Timeout is the deadline of each unary call; ListHosts, which streams everything, gets 3×.
	Timeout time.Duration
	// WriteConcurrency is the number of writes in flight at once.
	WriteConcurrency int
	// Observe, when set, is told the outcome of every call: the RPC's short name ("AddHost"),
	// its status code and how long it took (for ListHosts, how the stream ended and when).
	Observe func(method string, code codes.Code, took time.Duration)
	// Credentials, when set, is told of the client certificate each time mTLS material is
	// taken into use (at the start, after the files changed, from a new Secret), and of each
	// change of the files that could not be loaded. It must not call the provider.
	Credentials func(CredentialsEvent)
	// Clock paces the watchers: WatchCredentials' checks and WatchConnection's second look.
	// nil means the real clock; tests pass a fake one and step it.
	Clock clock.WithDelayedExecution
	Log   logrus.FieldLogger
}

// CredentialsEvent is what taking mTLS material into use found.
type CredentialsEvent struct {
	// NotAfter is when the client certificate in use expires.
	NotAfter time.Time
	// Err is why the changed files could not be loaded; the previous material stays in use, and
	// NotAfter is its certificate's. nil when the new material is in use.
	Err error
}

// Provider reads and writes router-hosts entries.
type Provider struct {
	opts Options
	log  logrus.FieldLogger

	mu     sync.Mutex
	client pb.HostsServiceClient
	conn   *grpc.ClientConn // nil when the caller owns the connection
	// unreachable is set when a call failed for want of a connection and cleared by a
	// complete ListHosts; WatchConnection reports the server's return while it is set.
	unreachable atomic.Bool
	files       keyMaterial // nil when the caller owns the connection or no target is set
	// external: the caller owns the connection (NewFromConn), so it is never retargeted.
	external bool
	stamp    string // the material in use when conn was dialled (keyMaterial.inUse)
}

// New dials the server with mutual TLS. The connection is lazy: an unreachable server shows
// up as a failed call (and a failed sync), not as a failed start.
func New(opts Options) (*Provider, error) {
	if opts.Endpoint == "" {
		return nil, errors.New("router-hosts endpoint is empty")
	}
	opts = withDefaults(opts)
	p := &Provider{opts: opts, log: opts.Log}
	var files keyMaterial = p.newFiles()
	if opts.Keys != nil {
		files = opts.Keys
	}
	if _, _, err := files.load(); err != nil {
		return nil, err
	}
	p.files = files
	if err := p.dial(); err != nil {
		return nil, err
	}
	p.keysInUse(files)
	return p, nil
}

// ErrNoTarget is the error of every call of a provider that no router has been named to yet.
var ErrNoTarget = errors.New("no router-hosts server configured yet")

// NewWaiting returns a provider with no server: every call fails with ErrNoTarget until
// Retarget names one. The operator starts on it when nothing names a router yet, so that a
// RouterHostsConfig applied later takes effect without a restart.
func NewWaiting(opts Options) *Provider {
	opts = withDefaults(opts)
	opts.Endpoint = ""
	return &Provider{opts: opts, log: opts.Log, client: pb.NewHostsServiceClient(noTarget{})}
}

// noTarget is the connection of a provider with no server.
type noTarget struct{}

func (noTarget) Invoke(context.Context, string, any, any, ...grpc.CallOption) error {
	return status.Error(codes.FailedPrecondition, ErrNoTarget.Error())
}

func (noTarget) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.FailedPrecondition, ErrNoTarget.Error())
}

// newFiles is the material of the files in Options, reporting every read of changed files.
func (p *Provider) newFiles() *reloadingFiles {
	return &reloadingFiles{caFile: p.opts.CAFile, certFile: p.opts.CertFile, keyFile: p.opts.KeyFile, loaded: p.filesLoaded}
}

// filesLoaded logs and reports a read of the TLS files that changed (or were read first).
func (p *Provider) filesLoaded(cert *tls.Certificate, err error) {
	expires := notAfter(cert)
	log := p.log.WithFields(logrus.Fields{"ca": p.opts.CAFile, "cert": p.opts.CertFile, "key": p.opts.KeyFile, "not_after": expires})
	if err != nil {
		log.WithError(err).Warn("the TLS files changed but cannot be loaded; the previous client certificate and CA stay in use until they load")
	} else {
		log.Info("TLS files loaded")
	}
	if p.opts.Credentials != nil {
		p.opts.Credentials(CredentialsEvent{NotAfter: expires, Err: err})
	}
}

// keysInUse reports material from a Secret once the provider uses it; files report themselves
// as they are read.
func (p *Provider) keysInUse(files keyMaterial) {
	k, ok := files.(*PEM)
	if !ok {
		return
	}
	expires := notAfter(k.cert)
	p.log.WithField("not_after", expires).Info("mTLS material from the Secret in use")
	if p.opts.Credentials != nil {
		p.opts.Credentials(CredentialsEvent{NotAfter: expires})
	}
}

// dial opens a new connection; the TLS handshake reads the current certificate files.
func (p *Provider) dial() error {
	p.mu.Lock()
	files, target, serverName := p.files, p.opts.Endpoint, p.opts.ServerName
	p.mu.Unlock()
	// The name is fixed per connection, so a Retarget to another endpoint checks the new host.
	verifyName, err := verifiedName(target, serverName)
	if err != nil {
		return err
	}
	stamp := files.inUse()
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(newTransportCredentials(files, serverName, verifyName)),
		// The server disconnects clients that ping more often than every 15 s.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)),
		// A router that reboots is reconnected to within seconds of answering again, not
		// after gRPC's default backoff of up to two minutes; each attempt (dial and TLS
		// handshake) still gets gRPC's default 20 s.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff, MinConnectTimeout: 20 * time.Second}),
	)
	if err != nil {
		return fmt.Errorf("dialing %s: %w", target, err)
	}
	p.mu.Lock()
	old := p.conn
	p.conn, p.client, p.stamp = conn, pb.NewHostsServiceClient(observed(conn, p.opts.Observe)), stamp
	p.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return nil
}

// refresh re-dials when new certificate files took effect since the connection was made, so a
// Secret rotated by cert-manager is used from the next sync on: an established TLS session
// would otherwise keep the old certificate for as long as it lives. Files that changed but do
// not load change nothing in use, so they cost no reconnection.
func (p *Provider) refresh() {
	p.mu.Lock()
	files := p.files
	p.mu.Unlock()
	if files == nil {
		return
	}
	if _, _, err := files.load(); err != nil {
		return
	}
	inUse := files.inUse()
	p.mu.Lock()
	changed := inUse != p.stamp
	p.mu.Unlock()
	if changed {
		p.log.Info("TLS files changed; reconnecting to router-hosts with the new certificate")
		if err := p.dial(); err != nil {
			p.log.WithError(err).Warn("reconnecting after a certificate change")
		}
	}
}

// material is the key material in use.
func (p *Provider) material() keyMaterial {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.files
}

// Target is where the provider connects and with what.
type Target struct {
	Endpoint, ServerName string
	// Keys is the mTLS material; nil means the files of Options.
	Keys *PEM
}

// Retarget connects to t from the next call on, when it differs from the target in use; calls
// in flight finish on the old connection. It does nothing for a connection the caller owns.
func (p *Provider) Retarget(t Target) error {
	p.mu.Lock()
	prevEndpoint, prevName, prevFiles := p.opts.Endpoint, p.opts.ServerName, p.files
	p.mu.Unlock()
	files, err := p.retarget(t)
	if err != nil || files == nil {
		return err
	}
	p.log.WithField("endpoint", t.Endpoint).Info("connecting to router-hosts with the new settings")
	if err := p.dial(); err != nil {
		// Not connected to the new target: the old one stays, and so does its record, so
		// that the next Retarget tries again.
		p.mu.Lock()
		p.opts.Endpoint, p.opts.ServerName, p.files = prevEndpoint, prevName, prevFiles
		p.mu.Unlock()
		return err
	}
	if files != prevFiles {
		p.keysInUse(files)
	}
	return nil
}

// retarget records t as the target and returns its key material, or nil when nothing changed.
func (p *Provider) retarget(t Target) (keyMaterial, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.external {
		return nil, nil
	}
	cur, _ := p.files.(*PEM)
	if p.files != nil && p.opts.Endpoint == t.Endpoint && p.opts.ServerName == t.ServerName && ((t.Keys == nil && cur == nil) || (t.Keys != nil && t.Keys.Equal(cur))) {
		return nil, nil
	}
	var files keyMaterial = t.Keys
	if t.Keys == nil {
		files = p.newFiles()
		if rf, ok := p.files.(*reloadingFiles); ok {
			files = rf // the same files: keep what was read
		}
		if _, _, err := files.load(); err != nil {
			return nil, err
		}
	}
	p.opts.Endpoint, p.opts.ServerName, p.files = t.Endpoint, t.ServerName, files
	return files, nil
}

func (p *Provider) rpc() pb.HostsServiceClient {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.client
}

func withDefaults(opts Options) Options {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.WriteConcurrency <= 0 {
		opts.WriteConcurrency = 4
	}
	if opts.Log == nil {
		opts.Log = logrus.StandardLogger()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return opts
}

// NewFromConn uses an existing connection, e.g. the in-process one of --provider=inmemory.
// Close does not close it.
func NewFromConn(conn grpc.ClientConnInterface, opts Options) *Provider {
	opts = withDefaults(opts)
	return &Provider{client: pb.NewHostsServiceClient(observed(conn, opts.Observe)), opts: opts, log: opts.Log, external: true}
}

// observed wraps conn so that every call is reported to observe; nil observe leaves it as is.
func observed(conn grpc.ClientConnInterface, observe func(string, codes.Code, time.Duration)) grpc.ClientConnInterface {
	if observe == nil {
		return conn
	}
	return &observedConn{ClientConnInterface: conn, observe: observe}
}

// observedConn reports each call by the method's short name, so a metric can count the writes a
// sync sends, and time what each costs the router, without the provider knowing about metrics.
type observedConn struct {
	grpc.ClientConnInterface
	observe func(string, codes.Code, time.Duration)
}

func (c *observedConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	start := time.Now()
	err := c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
	c.observe(path.Base(method), status.Code(err), time.Since(start))
	return err
}

func (c *observedConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	start := time.Now()
	st, err := c.ClientConnInterface.NewStream(ctx, desc, method, opts...)
	if err != nil {
		c.observe(path.Base(method), status.Code(err), time.Since(start))
		return nil, err
	}
	return &observedStream{ClientStream: st, method: path.Base(method), observe: c.observe, start: start}, nil
}

// observedStream reports a server stream once it ends: a server's error on a streaming call
// arrives with a message read, not when the stream opens.
type observedStream struct {
	grpc.ClientStream
	method  string
	observe func(string, codes.Code, time.Duration)
	start   time.Time
	done    bool
}

func (s *observedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil && !s.done {
		s.done = true
		code := status.Code(err)
		if errors.Is(err, io.EOF) {
			code = codes.OK
		}
		s.observe(s.method, code, time.Since(s.start))
	}
	return err
}

// Close releases the connection New made.
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		return nil
	}
	return p.conn.Close()
}

// Records returns every live entry with one ListHosts call. The server ignores filters and
// streams everything, so ownership filtering is the registry's job.
func (p *Provider) Records(ctx context.Context) ([]endpoint.Record, error) {
	p.refresh()
	ctx, cancel := context.WithTimeout(ctx, 3*p.opts.Timeout)
	defer cancel()
	stream, err := p.rpc().ListHosts(ctx, &pb.ListHostsRequest{})
	if err != nil {
		return nil, fmt.Errorf("ListHosts: %w", p.callError(err))
	}
	return p.receive("ListHosts", func() (*pb.HostEntry, error) {
		resp, err := stream.Recv()
		return resp.GetEntry(), err
	}, func(*endpoint.Record) bool { return true })
}

// Search reads the entries of one hostname, spelled in any case, with one SearchHosts. The
// server replays its whole log for it as for ListHosts, but sends only what matches; the
// query also matches other hostnames, addresses, comments and tags containing it, which are
// left out here.
func (p *Provider) Search(ctx context.Context, hostname string) ([]endpoint.Record, error) {
	p.refresh()
	ctx, cancel := context.WithTimeout(ctx, 3*p.opts.Timeout)
	defer cancel()
	stream, err := p.rpc().SearchHosts(ctx, &pb.SearchHostsRequest{Query: hostname})
	if err != nil {
		return nil, fmt.Errorf("SearchHosts: %w", p.callError(err))
	}
	return p.receive("SearchHosts", func() (*pb.HostEntry, error) {
		resp, err := stream.Recv()
		return resp.GetEntry(), err
	}, func(r *endpoint.Record) bool { return strings.EqualFold(r.Hostname, hostname) })
}

// receive reads a stream of entries to its end, keeping those keep accepts. A stream cut
// short fails the read: a partial list must never be mistaken for the whole.
func (p *Provider) receive(rpc string, next func() (*pb.HostEntry, error), keep func(*endpoint.Record) bool) ([]endpoint.Record, error) {
	var out []endpoint.Record
	for {
		e, err := next()
		if errors.Is(err, io.EOF) {
			p.unreachable.Store(false)
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s after %d entries: %w", rpc, len(out), p.callError(err))
		}
		if e != nil {
			if r := fromEntry(e); keep(&r) {
				out = append(out, r)
			}
		}
	}
}

// Ping asks the server whether it is ready, for health checks.
func (p *Provider) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	resp, err := p.rpc().Readiness(ctx, &pb.ReadinessRequest{})
	if err != nil {
		return fmt.Errorf("Readiness: %w", p.callError(err))
	}
	if !resp.GetReady() {
		return fmt.Errorf("router-hosts is not ready: %s", resp.GetReason())
	}
	return nil
}

// ServerVersion asks the server for its version (the Health RPC).
func (p *Provider) ServerVersion(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	resp, err := p.rpc().Health(ctx, &pb.HealthRequest{})
	if err != nil {
		return "", fmt.Errorf("Health: %w", p.callError(err))
	}
	return resp.GetServer().GetVersion(), nil
}

// WatchCredentials calls fn each time the TLS files change, checking every `every` (10 s when
// not positive) until ctx ends; it returns at once and does the checking in a goroutine. The
// controller uses it to sync again as soon as a certificate is rotated, rather than waiting
// out the interval after router-hosts refused the old one (AuthenticationFailed). A provider
// on a caller's connection (NewFromConn) has no files: nothing is watched and fn never runs.
func (p *Provider) WatchCredentials(ctx context.Context, every time.Duration, fn func()) {
	if p.files == nil {
		return
	}
	if every <= 0 {
		every = 10 * time.Second
	}
	// The stamp now is the baseline: fn reports changes, not the files' existence.
	last, _ := p.material().stamp()
	// One timer, set with the baseline and set again once a check is done, so that checks are
	// `every` apart and never overlap; stopped when the watcher returns.
	next := p.opts.Clock.NewTimer(every)
	go func() {
		defer next.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-next.C():
			}
			last = p.checkCredentials(last, fn)
			next.Reset(every)
		}
	}()
}

// checkCredentials calls fn when the files' stamp differs from last, and returns the stamp to
// compare the next check with.
func (p *Provider) checkCredentials(last string, fn func()) string {
	// A file missing for a moment mid-rotation is not a change yet: wait until all three are
	// back and compare then.
	files := p.material()
	stamp, err := files.stamp()
	if err != nil || stamp == last {
		return last
	}
	// Read now, on every replica, so that the certificate's expiry and a file that does not
	// load are reported by standbys too, which make no handshake.
	_, _, _ = files.load()
	fn()
	return stamp
}

// reconnectBackoff paces the attempts to reach a server that is down.
var reconnectBackoff = backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second}

// WatchConnection calls fn each time the server answers again after a call failed for want of
// a connection, so that a sync that failed on an outage is retried as soon as the server is
// back rather than when its backoff ends. Until then the connection keeps being retried, calls
// or not. A failure on a connection that stays up (the server refusing for a moment) is not
// reported, so fn never starts a tight retry loop. It does nothing for a connection the caller
// owns.
func (p *Provider) WatchConnection(ctx context.Context, fn func()) {
	if p.files == nil {
		return
	}
	go func() {
		down := false // the connection has been seen not up since the failure
		for ctx.Err() == nil {
			p.mu.Lock()
			conn := p.conn // replaced when the certificate changes
			p.mu.Unlock()
			state := conn.GetState()
			switch {
			case !p.unreachable.Load():
				down = false // a call got through meanwhile: nothing to report
			case state != connectivity.Ready:
				down = true
				if state == connectivity.Idle {
					conn.Connect()
				}
			case down && p.unreachable.CompareAndSwap(true, false):
				down = false
				fn()
			}
			// Looked at again after a second whatever the state does: a call can fail while the
			// connection already shows TRANSIENT_FAILURE, which gRPC keeps through all its
			// reconnection attempts, so no change of state would ever show that failure.
			wctx, cancel := context.WithCancel(ctx)
			recheck := p.opts.Clock.AfterFunc(time.Second, cancel)
			conn.WaitForStateChange(wctx, state)
			recheck.Stop()
			cancel()
		}
	}()
}

// callError is authError for a call's error, noting a failure to reach the server for
// WatchConnection.
func (p *Provider) callError(err error) error {
	err = authError(err)
	if err != nil && !errors.Is(err, provider.ErrAuthentication) && status.Code(err) == codes.Unavailable {
		p.unreachable.Store(true)
	}
	return err
}

// authMarkers are texts that only a TLS authentication failure puts into a gRPC error. The
// transport reports every connection failure as Unavailable with the cause as text only, so
// the text is all there is to tell a certificate problem from an outage.
var authMarkers = []string{
	// Alerts the server sends when it refuses our certificate, as crypto/tls names them
	// (acceptedCreds makes sure the alert is what gRPC reports, not the broken pipe after it).
	"remote error: tls: bad certificate",
	"remote error: tls: unsupported certificate",
	"remote error: tls: revoked certificate",
	"remote error: tls: expired certificate",
	"remote error: tls: unknown certificate", // also "unknown certificate authority"
	"remote error: tls: certificate required",
	"remote error: tls: access denied",
	// Other TLS stacks (rustls) may answer a bad signature on our certificate this way.
	"remote error: tls: error decrypting message",
}

// ourMarkers are the texts of our own check of the server's certificate failing (crypto/x509,
// from verifyServer): signed by a CA other than ours, not valid for the name dialled, expired.
var ourMarkers = []string{"x509: "}

// authError marks err as a provider.ErrAuthentication when it is a TLS authentication
// failure (a provider.ErrServerCertificate when ours was the check that failed), keeping its text and gRPC status; any other error comes back unchanged. A refused
// certificate fails every call the same way until the files change, so the controller must
// not treat it as a passing outage. Only transport failures (Unavailable, or DeadlineExceeded
// after waiting for a connection) are considered, which keeps the server's own messages
// (InvalidArgument and the like) out of it; a server that is down has none of the markers.
func authError(err error) error {
	if err == nil || errors.Is(err, provider.ErrAuthentication) {
		return err
	}
	if c := status.Code(err); c != codes.Unavailable && c != codes.DeadlineExceeded {
		return err
	}
	msg := err.Error()
	for _, m := range ourMarkers {
		if strings.Contains(msg, m) {
			return fmt.Errorf("%w: %w", provider.ErrServerCertificate, err)
		}
	}
	for _, m := range authMarkers {
		if strings.Contains(msg, m) {
			return fmt.Errorf("%w: %w", provider.ErrAuthentication, err)
		}
	}
	return err
}

func fromEntry(e *pb.HostEntry) endpoint.Record {
	return endpoint.Record{
		ID: e.GetId(), IP: e.GetIpAddress(), Hostname: e.GetHostname(), Aliases: e.GetAliases(),
		Tags: e.GetTags(), Comment: e.GetComment(), Version: e.GetVersion(),
	}
}
