package source

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
)

// external-dns's own annotations, read with --external-dns-annotations so that one annotation
// drives both public DNS and the LAN.
const (
	externalDNSPrefix = "external-dns.alpha.kubernetes.io/"
	// AnnotationExternalDNSHostname names hostnames, comma-separated, besides the object's own;
	// it opts the object in.
	AnnotationExternalDNSHostname = externalDNSPrefix + "hostname"
	// AnnotationExternalDNSTarget names the addresses, comma-separated: IPs as they are,
	// hostnames through DNS. The operator's own ip-address annotation wins over it.
	AnnotationExternalDNSTarget = externalDNSPrefix + "target"
)

// specDriven is implemented by kinds whose hostnames and addresses are their spec (HostMapping):
// other controllers' annotations do not apply to them.
type specDriven interface{ specDriven() }

// externalDNSOptedIn: in the mode, an object that names hostnames in external-dns's annotation
// and is not opted out.
func externalDNSOptedIn(o metav1.Object) bool {
	return o.GetAnnotations()[AnnotationExternalDNSHostname] != "" && !optedOut(o)
}

// addExternalDNS adds what external-dns's annotations ask of an object to its claim: the
// hostnames, and the targets unless the operator's ip-address annotation gives addresses.
func addExternalDNS(c *claim, o metav1.Object) {
	ann := o.GetAnnotations()
	c.hosts = append(c.hosts, splitList(ann[AnnotationExternalDNSHostname])...)
	raw, ok := ann[AnnotationExternalDNSTarget]
	if !ok || c.overrides.ips != nil || c.overrides.badIPs {
		return
	}
	var names []string
	for _, t := range splitList(raw) {
		if _, err := endpoint.NormalizeIP(t); err == nil {
			c.overrides.ips = append(c.overrides.ips, t)
			continue
		}
		n, err := endpoint.NormalizeHostname(t)
		if err != nil {
			c.overrides.badIPs = true
			c.overrides.problems = append(c.overrides.problems, invalidAnnotation("annotation %s: %q is neither an IP address nor a hostname; hostnames held until it is fixed", AnnotationExternalDNSTarget, t))
			continue
		}
		names = append(names, n)
	}
	if len(c.overrides.ips) == 0 && len(names) == 0 && !c.overrides.badIPs {
		c.overrides.badIPs = true
		c.overrides.problems = append(c.overrides.problems, invalidAnnotation("annotation %s is empty; hostnames held until it is fixed", AnnotationExternalDNSTarget))
	}
	c.overrides.names = endpoint.SortedUnique(names)
	if c.overrides.ips != nil {
		c.overrides.ips = endpoint.SortedUnique(c.overrides.ips)
	}
}
