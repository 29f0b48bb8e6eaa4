package org.tent4j.transport.tcp;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InterfaceAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.SegmentDescriptor;

/**
 * The addresses of the tcp rails (multi-rail tcp): which local addresses the engine listens on and connects from
 * ({@code transports.tcp.interfaces}), how they are published ({@link #ATTR_ADDRESSES}), and which (local, remote)
 * pairs are worth trying for a peer. Trying decides whether a pair is a rail; the subnets only say which local address
 * to try a remote address from.
 */
final class RailAddresses {
    static final String OPTION = "transports.tcp.interfaces";
    /** Published tcp attribute: the addresses this engine's data port listens on, comma separated (absent: the host only). */
    static final String ATTR_ADDRESSES = "addresses";
    /** More published addresses than this are refused: a descriptor is untrusted input. */
    static final int MAX_ADDRESSES = 16;

    /** A local address and the interface it is on, with its prefix, so remote addresses on its subnet go from it. */
    record Local(InetAddress address, String interfaceName, int prefix) {
        String label() {
            return interfaceName != null ? interfaceName : address.getHostAddress();
        }

        boolean onLink(InetAddress remote) {
            return prefix > 0 && sameSubnet(address.getAddress(), remote.getAddress(), prefix);
        }
    }

    /** Listening and connecting addresses; the first is always {@code control.host}'s. */
    private final List<Local> locals;

    RailAddresses(List<Local> locals) {
        this.locals = List.copyOf(locals);
    }

    /**
     * Resolves {@code transports.tcp.interfaces} on this machine: empty = the host alone (one rail, as before multi-rail);
     * {@code *} = every address of every non-loopback interface that is up; else a comma-separated list of interface
     * names and local addresses. The host ({@code control.host}) always comes first, as it is where peers that read
     * only {@code port} connect.
     */
    static RailAddresses resolve(String option, String host) {
        InetAddress hostAddress;
        try {
            hostAddress = InetAddress.getByName(host);
        } catch (java.net.UnknownHostException e) {
            throw new ConfigException(OPTION, "control.host '" + host + "' does not resolve: " + e.getMessage());
        }
        Map<InetAddress, Local> out = new LinkedHashMap<>();
        out.put(hostAddress, local(hostAddress));
        String spec = option == null ? "" : option.strip();
        if (spec.isEmpty()) {
            return new RailAddresses(List.copyOf(out.values()));
        }
        try {
            if (spec.equals("*")) {
                for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                    if (ni.isUp() && !ni.isLoopback()) {
                        addAll(out, ni);
                    }
                }
            } else {
                for (String item : spec.split(",")) {
                    String name = item.strip();
                    if (name.isEmpty()) {
                        throw new ConfigException(OPTION, "empty entry in '" + option + "'");
                    }
                    NetworkInterface ni = NetworkInterface.getByName(name);
                    if (ni != null) {
                        if (!ni.isUp()) {
                            throw new ConfigException(OPTION, "interface '" + name + "' is down");
                        }
                        int before = out.size();
                        addAll(out, ni);
                        if (out.size() == before && ni.inetAddresses().noneMatch(RailAddresses::usable)) {
                            throw new ConfigException(OPTION, "interface '" + name + "' has no usable address");
                        }
                        continue;
                    }
                    InetAddress a = literal(name);
                    if (a == null || NetworkInterface.getByInetAddress(a) == null) {
                        throw new ConfigException(OPTION, "'" + name + "' is neither an interface nor an address of "
                                + "this machine");
                    }
                    out.putIfAbsent(a, local(a));
                }
            }
        } catch (SocketException e) {
            throw new ConfigException(OPTION, "cannot list this machine's interfaces: " + e.getMessage());
        }
        if (out.size() > MAX_ADDRESSES) {
            throw new ConfigException(OPTION, "names " + out.size() + " addresses; at most " + MAX_ADDRESSES);
        }
        return new RailAddresses(List.copyOf(out.values()));
    }

    private static void addAll(Map<InetAddress, Local> out, NetworkInterface ni) {
        for (InterfaceAddress ia : ni.getInterfaceAddresses()) {
            InetAddress a = ia.getAddress();
            if (usable(a)) {
                out.putIfAbsent(a, new Local(a, ni.getName(), ia.getNetworkPrefixLength()));
            }
        }
    }

    /** Link-local IPv6 needs a scope a peer cannot use; loopback reaches only this machine. */
    private static boolean usable(InetAddress a) {
        return !a.isLoopbackAddress() && !a.isLinkLocalAddress() && !a.isAnyLocalAddress();
    }

    /** {@code a} with the interface and prefix it is on, where this machine has it. */
    private static Local local(InetAddress a) {
        try {
            NetworkInterface ni = NetworkInterface.getByInetAddress(a);
            if (ni != null) {
                for (InterfaceAddress ia : ni.getInterfaceAddresses()) {
                    if (ia.getAddress().equals(a)) {
                        return new Local(a, ni.getName(), ia.getNetworkPrefixLength());
                    }
                }
            }
        } catch (SocketException ignored) {
            // no interface: it is only a name to bind to
        }
        return new Local(a, null, 0);
    }

    /** An IP literal, or null; never a name lookup (a descriptor's or option's text is not a host name). */
    static InetAddress literal(String text) {
        try {
            return InetAddress.ofLiteral(text.strip());
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    List<Local> locals() {
        return locals;
    }

    /** Several addresses: then connections bind to the local address of their rail. */
    boolean multiRail() {
        return locals.size() > 1;
    }

    /** The tcp attribute to publish, or null with one address (the descriptor stays as it was before multi-rail). */
    String published() {
        if (!multiRail()) {
            return null;
        }
        List<String> text = new ArrayList<>();
        for (Local l : locals) {
            text.add(l.address().getHostAddress());
        }
        return String.join(",", text);
    }

    /**
     * The peer's data addresses: its {@link #ATTR_ADDRESSES} if it publishes them (checked: IP literals, at most
     * {@link #MAX_ADDRESSES}), else its host (a peer with one address, or one older than multi-rail). A loopback
     * address of another machine is left out: it would reach this machine.
     */
    static List<InetAddress> remotes(SegmentDescriptor peer, String localMachineId) {
        String text = peer.transportAttributes(TcpTransportProvider.ID).get(ATTR_ADDRESSES);
        if (text == null) {
            return List.of(hostOf(peer));
        }
        String[] items = text.split(",", -1);
        if (items.length > MAX_ADDRESSES) {
            throw malformed(peer, "publishes " + items.length + " tcp addresses; at most " + MAX_ADDRESSES);
        }
        List<InetAddress> out = new ArrayList<>();
        for (String item : items) {
            InetAddress a = literal(item);
            if (a == null) {
                throw malformed(peer, "publishes tcp address '" + item + "', not an IP address");
            }
            if (!out.contains(a) && !(a.isLoopbackAddress() && !peer.machineId().equals(localMachineId))) {
                out.add(a);
            }
        }
        if (out.isEmpty()) {
            throw malformed(peer, "publishes no tcp address reachable from another machine (" + text + ")");
        }
        return out;
    }

    private static InetAddress hostOf(SegmentDescriptor peer) {
        InetAddress a = literal(peer.host());
        if (a != null) {
            return a;
        }
        try {
            return InetAddress.getByName(peer.host());
        } catch (java.net.UnknownHostException e) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "tcp: host '" + peer.host() + "' of segment '"
                    + peer.name() + "' does not resolve", e);
        }
    }

    private static TransferException malformed(SegmentDescriptor peer, String what) {
        return new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "tcp: segment '" + peer.name() + "' " + what);
    }

    /**
     * The local addresses to try {@code remote} from: with one local address, none (the kernel picks, as before
     * multi-rail); else those on {@code remote}'s subnet, or, where none is, the kernel's choice (a routed peer).
     */
    List<Local> sourcesFor(InetAddress remote) {
        if (!multiRail()) {
            return java.util.Collections.singletonList(null);
        }
        List<Local> on = new ArrayList<>();
        for (Local l : locals) {
            if (l.address().getClass() == remote.getClass() && l.onLink(remote)) {
                on.add(l);
            }
        }
        return on.isEmpty() ? java.util.Collections.singletonList(null) : on;
    }

    static boolean sameSubnet(byte[] a, byte[] b, int prefix) {
        if (a.length != b.length || prefix > a.length * 8) {
            return false;
        }
        int full = prefix / 8;
        for (int i = 0; i < full; i++) {
            if (a[i] != b[i]) {
                return false;
            }
        }
        int rest = prefix % 8;
        if (rest == 0) {
            return true;
        }
        int mask = (0xFF << (8 - rest)) & 0xFF;
        return (a[full] & mask) == (b[full] & mask);
    }

    /** A rail's name in paths and logs: {@code <local interface>-><remote address>}, or the remote address alone. */
    static String railName(Local from, InetAddress to) {
        String remote = to instanceof Inet4Address ? to.getHostAddress() : "[" + to.getHostAddress() + "]";
        return from == null ? remote : from.label() + "->" + remote;
    }
}
