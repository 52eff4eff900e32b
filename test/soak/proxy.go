package soak

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// netMode is what the faulty network between a cluster and the router does to its bytes.
type netMode uint8

const (
	// netPass forwards every byte at once.
	netPass netMode = iota
	// netDelay forwards every byte late.
	netDelay
	// netHold forwards nothing and keeps every byte, as a dead path does: connections stay
	// open, calls hang, and what was sent arrives once the path heals.
	netHold
	// netReset resets every connection, and every new one as it comes.
	netReset
)

func (m netMode) String() string {
	return [...]string{"pass", "delay", "hold", "reset"}[m]
}

// faultProxy is a loopback TCP proxy whose network can be made slow, dead or hostile.
type faultProxy struct {
	lis    net.Listener
	target string

	mu    sync.Mutex
	mode  netMode
	delay time.Duration
	// changed is closed when the mode changes, waking every held byte.
	changed chan struct{}
	conns   map[net.Conn]bool
	closed  bool
}

func startProxy(target string) (*faultProxy, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p := &faultProxy{lis: lis, target: target, changed: make(chan struct{}), conns: map[net.Conn]bool{}}
	go p.accept()
	return p, nil
}

// Addr is where the cluster dials.
func (p *faultProxy) Addr() string { return p.lis.Addr().String() }

// set changes what the network does; delay applies to netDelay.
func (p *faultProxy) set(mode netMode, delay time.Duration) {
	p.mu.Lock()
	p.mode, p.delay = mode, delay
	close(p.changed)
	p.changed = make(chan struct{})
	var victims []net.Conn
	if mode == netReset {
		for c := range p.conns {
			victims = append(victims, c)
		}
	}
	p.mu.Unlock()
	for _, c := range victims {
		reset(c)
	}
}

// Close stops the proxy and drops every connection.
func (p *faultProxy) Close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[net.Conn]bool{}
	p.mu.Unlock()
	_ = p.lis.Close()
	for c := range conns {
		_ = c.Close()
	}
}

func (p *faultProxy) accept() {
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode, closed := p.mode, p.closed
		p.mu.Unlock()
		if mode == netReset || closed {
			reset(c)
			continue
		}
		b, err := net.Dial("tcp", p.target)
		if err != nil {
			reset(c)
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[b] = true, true
		p.mu.Unlock()
		var wg sync.WaitGroup
		wg.Add(2)
		go p.pump(c, b, &wg)
		go p.pump(b, c, &wg)
		go func() {
			wg.Wait()
			p.mu.Lock()
			delete(p.conns, c)
			delete(p.conns, b)
			p.mu.Unlock()
			_ = c.Close()
			_ = b.Close()
		}()
	}
}

// pump copies src to dst, each chunk as the network's mode says when it is read. An end of
// stream is passed on as one; any other error ends both directions.
func (p *faultProxy) pump(src, dst net.Conn, wg *sync.WaitGroup) {
	defer wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass(src, dst) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				_ = src.Close()
				return
			}
		}
		if err == io.EOF {
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			return
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}

// pass waits until a chunk read from src may go on; false when the connection is to be reset.
func (p *faultProxy) pass(src, dst net.Conn) bool {
	for {
		p.mu.Lock()
		mode, delay, changed := p.mode, p.delay, p.changed
		p.mu.Unlock()
		switch mode {
		case netPass:
			return true
		case netDelay:
			select {
			case <-time.After(delay):
				return true
			case <-changed:
			}
		case netHold:
			<-changed
		case netReset:
			reset(src)
			reset(dst)
			return false
		}
	}
}

// reset closes c with an RST instead of a FIN, as a middlebox that drops the connection does.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
