package harness

import (
	"fmt"
	"net"
)

// FreePort returns a loopback port that was free a moment ago, for the processes the tests, the
// bench and the soak start: the operator's metrics address, a webhook's, a router's. Another
// process may take it before the caller listens on it; the processes started with it fail
// then, loudly.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr is FreePort as an address, 127.0.0.1:<port>.
func Addr() (string, error) {
	p, err := FreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}
