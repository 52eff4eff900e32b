// Package dnstest is a DNS server for tests: it answers A and AAAA questions over UDP and TCP
// on one loopback port from the answers a test sets, so that the operator's DNS cache is
// tested against real queries on the wire.
package dnstest

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Answer is what the server answers for a name.
type Answer struct {
	// IPs are the addresses, of both families; each record carries TTL seconds.
	IPs []string
	TTL uint32
	// RCode answers with an error code instead (NameError: no such host).
	RCode dnsmessage.RCode
	// Truncate answers over UDP with the truncation bit and no records, so that the client
	// asks again over TCP.
	Truncate bool
	// Silent never answers.
	Silent bool
}

// Server answers from its answers; a name it has none for is NXDOMAIN.
type Server struct {
	// Addr is host:port, the same port for UDP and TCP.
	Addr string

	udp net.PacketConn
	tcp net.Listener

	mu      sync.Mutex
	answers map[string]Answer
	queries map[string]int
}

// Start serves on a free loopback port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{answers: map[string]Answer{}, queries: map[string]int{}}
	var err error
	for range 20 {
		if s.udp, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if s.tcp, err = net.Listen("tcp", s.udp.LocalAddr().String()); err == nil {
			break
		}
		_ = s.udp.Close()
	}
	if err != nil {
		t.Fatalf("no port free for both UDP and TCP: %v", err)
	}
	s.Addr = s.udp.LocalAddr().String()
	go s.serveUDP()
	go s.serveTCP()
	t.Cleanup(func() { _ = s.udp.Close(); _ = s.tcp.Close() })
	return s
}

// Set makes the server answer a for name (any case, with or without the final dot).
func (s *Server) Set(name string, a Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[key(name)] = a
}

// Queries counts the questions asked about name, of any type and over either transport.
func (s *Server) Queries(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[key(name)]
}

func key(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }

func (s *Server) serveUDP() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.udp.ReadFrom(buf)
		if err != nil {
			return
		}
		if out := s.answer(buf[:n], true); out != nil {
			_, _ = s.udp.WriteTo(out, from)
		}
	}
}

func (s *Server) serveTCP() {
	for {
		c, err := s.tcp.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = c.Close() }()
			var n [2]byte
			if _, err := io.ReadFull(c, n[:]); err != nil {
				return
			}
			in := make([]byte, binary.BigEndian.Uint16(n[:]))
			if _, err := io.ReadFull(c, in); err != nil {
				return
			}
			if out := s.answer(in, false); out != nil {
				_, _ = c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...))
			}
		}()
	}
}

// answer packs the answer to one query, nil for none.
func (s *Server) answer(in []byte, udp bool) []byte {
	var q dnsmessage.Message
	if err := q.Unpack(in); err != nil || len(q.Questions) != 1 {
		return nil
	}
	question := q.Questions[0]
	name := key(question.Name.String())
	s.mu.Lock()
	s.queries[name]++
	a, ok := s.answers[name]
	s.mu.Unlock()
	if a.Silent {
		return nil
	}
	m := dnsmessage.Message{Header: dnsmessage.Header{ID: q.ID, Response: true, RecursionDesired: q.RecursionDesired, RecursionAvailable: true},
		Questions: q.Questions}
	switch {
	case !ok:
		m.RCode = dnsmessage.RCodeNameError
	case a.RCode != dnsmessage.RCodeSuccess:
		m.RCode = a.RCode
	case a.Truncate && udp:
		m.Truncated = true
	default:
		for _, raw := range a.IPs {
			ip, err := netip.ParseAddr(raw)
			if err != nil {
				continue
			}
			h := dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: a.TTL}
			switch {
			case ip.Is4() && question.Type == dnsmessage.TypeA:
				h.Type = dnsmessage.TypeA
				m.Answers = append(m.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AResource{A: ip.As4()}})
			case ip.Is6() && question.Type == dnsmessage.TypeAAAA:
				h.Type = dnsmessage.TypeAAAA
				m.Answers = append(m.Answers, dnsmessage.Resource{Header: h, Body: &dnsmessage.AAAAResource{AAAA: ip.As16()}})
			}
		}
	}
	out, err := m.Pack()
	if err != nil {
		panic(errors.New("dnstest: packing an answer: " + err.Error()))
	}
	return out
}
