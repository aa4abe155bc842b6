package pki

import (
	"net"
	"os"
)

// LocalHosts lists the names a client on this machine, or on another one, may dial the
// apiserver by: localhost, the loopback addresses, the host name and every address of the
// host's interfaces that are up.
func LocalHosts() []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if name, err := os.Hostname(); err == nil && name != "" {
		hosts = append(hosts, name)
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		// Loopback and the host name still make a usable certificate for one machine.
		return hosts
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			// Link-local addresses need a zone to dial and never reach the apiserver.
			if !ok || ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			hosts = append(hosts, ipn.IP.String())
		}
	}
	return dedupe(hosts)
}
