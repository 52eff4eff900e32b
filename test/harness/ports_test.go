package harness

import (
	"net"
	"strconv"
	"testing"
)

// TestAFreePortCanBeListenedOn: the port returned is one a listener can take at once.
func TestAFreePortCanBeListenedOn(t *testing.T) {
	addr, err := Addr()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on %s: %v", addr, err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(addr)
	if n, err := strconv.Atoi(port); err != nil || n <= 0 {
		t.Fatalf("port %q", port)
	}
}
