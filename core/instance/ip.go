package instance

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Environment variables that ejob reads in place of upstream's JVM system
// properties elasticjob.preferred.network.interface and
// elasticjob.preferred.network.ip. The host's config file may set the same
// two settings; it wins over the environment.
const (
	EnvPreferredInterface = "EJOB_PREFERRED_NETWORK_INTERFACE"
	EnvPreferredIP        = "EJOB_PREFERRED_NETWORK_IP"
)

// ErrNoIP is upstream's HostException("ip is null"): no interface has a
// usable address.
var ErrNoIP = errors.New("ip is null")

// Interface is one network interface as IP selection sees it. Order
// matters: SelectIP treats the list as Java's enumeration order.
type Interface struct {
	// Name is matched against the preferred interface (Java compares
	// getDisplayName(), which is the name on Linux).
	Name     string
	Up       bool
	Loopback bool
	// Virtual is Java's isVirtual(): an alias sub-interface like "eth0:1".
	Virtual bool
	// Addrs in the interface's order.
	Addrs []netip.Addr
}

// IPOptions are the inputs of SelectIP.
type IPOptions struct {
	// PreferredInterface: upstream's elasticjob.preferred.network.interface
	// (ejob: config, or EJOB_PREFERRED_NETWORK_INTERFACE).
	PreferredInterface string
	// PreferredIP: upstream's elasticjob.preferred.network.ip, an address
	// prefix or a regular expression matched against the whole address
	// (ejob: config, or EJOB_PREFERRED_NETWORK_IP).
	PreferredIP string
	// Interfaces lists the interfaces; nil means SystemInterfaces.
	Interfaces func() ([]Interface, error)
	// Reachable stands for Java's InetAddress.isReachable(100 ms). nil means
	// every address is reachable: a Java host address is practically always
	// reachable from itself (a refused TCP echo counts as reachable), and
	// ejob does not send ICMP.
	Reachable func(netip.Addr) bool
}

// IPOptionsFromEnv reads the two preferred-network settings from getenv
// (os.Getenv when nil).
func IPOptionsFromEnv(getenv func(string) string) IPOptions {
	if getenv == nil {
		getenv = os.Getenv
	}
	return IPOptions{
		PreferredInterface: getenv(EnvPreferredInterface),
		PreferredIP:        getenv(EnvPreferredIP),
	}
}

// SelectIP chooses the server IP exactly as upstream's IpUtils.getIp
// so that a Go and a Java instance on one host
// register the same servers/{ip} node:
//
//  1. Drop interfaces that are loopback, virtual or down.
//  2. With PreferredInterface set, take the first remaining interface with
//     that name. Without it, or when none has that name, take the LAST
//     remaining interface (in list order) that has a valid and preferred
//     address — upstream's getFirstNetworkInterface only breaks its inner
//     loop, so the last match wins (its unit test expects that) — or the
//     first remaining interface when none has one.
//  3. Return the first valid and preferred address of that interface, or
//     ErrNoIP. There is no fallback to another interface, also when the
//     preferred interface has no such address.
//
// Valid means IPv4 (IPv4-mapped IPv6 counts as IPv4, as in Java), not
// loopback, not unspecified, and Reachable. IPv4 link-local
// (169.254.0.0/16) is NOT excluded, because Java does not exclude it; IPv6
// is always excluded. Preferred means PreferredIP is empty, or the address
// starts with it, or it matches it as a whole (a Java regex such as
// "192.168.*"; an invalid regex is an error unless the prefix test
// already matched).
func SelectIP(opts IPOptions) (netip.Addr, error) {
	list := opts.Interfaces
	if list == nil {
		list = SystemInterfaces
	}
	ifaces, err := list()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("select ip: list interfaces: %w", err)
	}
	reachable := opts.Reachable
	if reachable == nil {
		reachable = func(netip.Addr) bool { return true }
	}
	var re *regexp.Regexp
	preferred := func(a netip.Addr) (bool, error) {
		if opts.PreferredIP == "" {
			return true, nil
		}
		s := a.String()
		if strings.HasPrefix(s, opts.PreferredIP) {
			return true, nil
		}
		if re == nil {
			var err error
			if re, err = regexp.Compile("^(?:" + opts.PreferredIP + ")$"); err != nil {
				return false, fmt.Errorf("select ip: preferred ip %q is neither a matching prefix nor a valid regular expression: %w", opts.PreferredIP, err)
			}
		}
		return re.MatchString(s), nil
	}
	firstGood := func(in Interface) (netip.Addr, bool, error) {
		for _, a := range in.Addrs {
			a = a.Unmap()
			if !a.Is4() || a.IsLoopback() || a.IsUnspecified() || !reachable(a) {
				continue
			}
			ok, err := preferred(a)
			if err != nil {
				return netip.Addr{}, false, err
			}
			if ok {
				return a, true, nil
			}
		}
		return netip.Addr{}, false, nil
	}

	var valid []Interface
	for _, in := range ifaces {
		if in.Loopback || in.Virtual || !in.Up {
			continue
		}
		valid = append(valid, in)
	}
	chosen := -1
	if opts.PreferredInterface != "" {
		chosen = slices.IndexFunc(valid, func(in Interface) bool { return in.Name == opts.PreferredInterface })
	}
	if chosen < 0 {
		for i, in := range valid {
			_, ok, err := firstGood(in)
			if err != nil {
				return netip.Addr{}, err
			}
			if ok {
				chosen = i // no break: the last match wins, as upstream
			}
		}
		if chosen < 0 && len(valid) > 0 {
			chosen = 0
		}
	}
	if chosen < 0 {
		return netip.Addr{}, fmt.Errorf("select ip: %w: no usable network interface", ErrNoIP)
	}
	a, ok, err := firstGood(valid[chosen])
	if err != nil {
		return netip.Addr{}, err
	}
	if !ok {
		return netip.Addr{}, fmt.Errorf("select ip: %w: interface %q has no usable IPv4 address", ErrNoIP, valid[chosen].Name)
	}
	return a, nil
}

// SystemInterfaces lists this host's interfaces in the order OpenJDK
// enumerates them on Linux, which is the REVERSE of the kernel's index
// order (its native code prepends each interface it finds). With the
// last-match-wins rule of SelectIP this makes ejob pick the address a JVM
// on the same host picks.
func SystemInterfaces() ([]Interface, error) {
	nifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("net.Interfaces: %w", err)
	}
	out := make([]Interface, 0, len(nifs))
	for _, ni := range nifs {
		addrs, err := ni.Addrs()
		if err != nil {
			return nil, fmt.Errorf("addresses of %s: %w", ni.Name, err)
		}
		in := Interface{
			Name:     ni.Name,
			Up:       ni.Flags&net.FlagUp != 0,
			Loopback: ni.Flags&net.FlagLoopback != 0,
			Virtual:  strings.Contains(ni.Name, ":"),
		}
		for _, a := range addrs {
			var ip net.IP
			switch v := a.(type) {
			case *net.IPNet:
				ip = v.IP
			case *net.IPAddr:
				ip = v.IP
			}
			if addr, ok := netip.AddrFromSlice(ip); ok {
				in.Addrs = append(in.Addrs, addr)
			}
		}
		out = append(out, in)
	}
	slices.Reverse(out)
	return out, nil
}

// LocalID returns this process's instance id: SelectIP + "@-@" + os.Getpid().
func LocalID(opts IPOptions) (ID, error) {
	ip, err := SelectIP(opts)
	if err != nil {
		return ID{}, err
	}
	return NewID(ip.String(), os.Getpid()), nil
}
