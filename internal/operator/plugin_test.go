package operator

import "testing"

func TestProgramName(t *testing.T) {
	for _, c := range []struct{ argv0, want string }{
		{"router-hosts-operator", "router-hosts-operator"},
		{"/usr/local/bin/router-hosts-operator", "router-hosts-operator"},
		{"./bin/rho", "router-hosts-operator"},
		{"kubectl-router_hosts", "kubectl router-hosts"},
		{"/home/me/.krew/bin/kubectl-router_hosts", "kubectl router-hosts"},
		{`C:\Users\me\bin\kubectl-router_hosts.exe`, "kubectl router-hosts"},
		{`C:\Users\me\bin\kubectl-router_hosts.EXE`, "kubectl router-hosts"},
		// Only the plugin's exact name: kubectl would run this one as `kubectl router-hosts-x`.
		{"kubectl-router_hosts_x", "router-hosts-operator"},
		{"/path/kubectl-router_hosts/router-hosts-operator", "router-hosts-operator"},
		{"", "router-hosts-operator"},
	} {
		if got := ProgramName(c.argv0); got != c.want {
			t.Errorf("ProgramName(%q) = %q, want %q", c.argv0, got, c.want)
		}
	}
}
