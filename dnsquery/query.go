// Package dnsquery puts one DNS question to one named server and says what came back, so that
// the operator has a single DNS client: the resolver of hostnames given where an address is
// wanted (source.DNS) and the check that the router's DNS answers what was written (dnscheck)
// both ask through it.
//
// A question ends in one of three ways, which its callers treat differently:
//
//   - an answer with addresses (Answer.Status Answered);
//   - an answer that the name has none: NXDOMAIN (NXDomain), or no records of the type asked
//     for (NoData). Another server would say the same, so it is a fact about the name;
//   - an error: no answer in time, a network error, an answer that does not parse, or an error
//     code such as SERVFAIL or REFUSED (an *RCodeError). It says nothing about the name.
//
// Query has no timeout of its own: the caller's context bounds it, on whatever clock the caller
// keeps, and its end unblocks the reads.
package dnsquery

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Status is how a server answered a question that got an answer.
type Status uint8

// The answers.
const (
	// Answered: records of the type asked for, their addresses in Answer.Addrs.
	Answered Status = iota
	// NoData: the name exists, but has no records of the type asked for.
	NoData
	// NXDomain: the name does not exist.
	NXDomain
)

// String is the status as logs and messages say it.
func (s Status) String() string {
	switch s {
	case NoData:
		return "no data"
	case NXDomain:
		return "NXDOMAIN"
	}
	return "answered"
}

// MaxTTL is the TTL of an answer without records: nothing in it bounds how long it stands.
const MaxTTL = time.Hour

// Answer is what a server said of a name.
type Answer struct {
	Status Status
	// Addrs are the addresses of the answer's A or AAAA records, in the server's order; an
	// AAAA record holding an IPv4-mapped address stays an IPv6 address.
	Addrs []netip.Addr
	// TTL is the least TTL of the answer's records, MaxTTL when it has none.
	TTL time.Duration
}

// RCodeError is an answer with an error code other than NXDOMAIN (SERVFAIL, REFUSED, …): the
// server did not answer for the name.
type RCodeError struct {
	Server, Name string
	Type         dnsmessage.Type
	RCode        dnsmessage.RCode
}

func (e *RCodeError) Error() string {
	return fmt.Sprintf("asking %s for %s %s: %s", e.Server, e.Name, e.Type, e.RCode)
}

// answerSize is the UDP answer this client reads: the EDNS-free 512 bytes are the floor, and
// 1232 is what DNS flag day 2020 settled on as safe from fragmentation.
const answerSize = 1232

// Query asks server (host:port) for name's records of type t (TypeA or TypeAAAA) over UDP, and
// again over TCP when the answer was truncated, until ctx ends. name is absolute, with or
// without its final dot. Errors say the server, the name and the type; when ctx was cancelled
// with a cause (a timeout on the caller's clock), the cause stands for the closed socket it left.
func Query(ctx context.Context, server, name string, t dnsmessage.Type) (Answer, error) {
	fqdn, err := dnsmessage.NewName(absolute(name))
	if err != nil {
		return Answer{}, fmt.Errorf("DNS name %q: %w", name, err)
	}
	var idb [2]byte
	_, _ = rand.Read(idb[:])
	q := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: binary.BigEndian.Uint16(idb[:]), RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: fqdn, Type: t, Class: dnsmessage.ClassINET}},
	}
	packed, err := q.Pack()
	if err != nil {
		return Answer{}, fmt.Errorf("DNS query for %s: %w", name, err)
	}
	m, err := exchange(ctx, "udp", server, packed, q.Header.ID)
	if err == nil && m.Truncated {
		m, err = exchange(ctx, "tcp", server, packed, q.Header.ID)
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			err = cause // the timeout, rather than the closed socket it left
		}
		return Answer{}, fmt.Errorf("asking %s for %s %s: %w", server, name, t, err)
	}
	switch m.RCode {
	case dnsmessage.RCodeSuccess:
	case dnsmessage.RCodeNameError:
		return Answer{Status: NXDomain, TTL: MaxTTL}, nil
	default:
		return Answer{}, &RCodeError{Server: server, Name: name, Type: t, RCode: m.RCode}
	}
	a := Answer{TTL: MaxTTL}
	for _, rr := range m.Answers {
		// A CNAME on the way bounds the answer's life as much as the records it leads to.
		a.TTL = min(a.TTL, time.Duration(rr.Header.TTL)*time.Second)
		switch b := rr.Body.(type) {
		case *dnsmessage.AResource:
			a.Addrs = append(a.Addrs, netip.AddrFrom4(b.A))
		case *dnsmessage.AAAAResource:
			a.Addrs = append(a.Addrs, netip.AddrFrom16(b.AAAA))
		}
	}
	if len(a.Addrs) == 0 {
		a.Status = NoData
	}
	return a, nil
}

// absolute is name with the root's final dot.
func absolute(name string) string {
	if len(name) > 0 && name[len(name)-1] == '.' {
		return name
	}
	return name + "."
}

// exchange sends one packed query and reads the answer with the same ID, until ctx ends.
func exchange(ctx context.Context, network, server string, packed []byte, id uint16) (*dnsmessage.Message, error) {
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, network, server)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	// The caller's deadline may be on a clock of its own, not the system's: its end unblocks
	// the reads instead of a socket deadline.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	stream := network == "tcp"
	if stream {
		packed = append(binary.BigEndian.AppendUint16(nil, uint16(len(packed))), packed...)
	}
	if _, err := conn.Write(packed); err != nil {
		return nil, err
	}
	for {
		var buf []byte
		if stream {
			var n [2]byte
			if _, err := io.ReadFull(conn, n[:]); err != nil {
				return nil, err
			}
			buf = make([]byte, binary.BigEndian.Uint16(n[:]))
			if _, err := io.ReadFull(conn, buf); err != nil {
				return nil, err
			}
		} else {
			buf = make([]byte, answerSize)
			n, err := conn.Read(buf)
			if err != nil {
				return nil, err
			}
			buf = buf[:n]
		}
		var m dnsmessage.Message
		if err := m.Unpack(buf); err != nil || m.ID != id || !m.Response {
			if stream {
				if err == nil {
					err = errors.New("not an answer to the query sent")
				}
				return nil, fmt.Errorf("malformed DNS answer: %w", err)
			}
			continue // not our answer: wait for it until ctx ends
		}
		return &m, nil
	}
}
