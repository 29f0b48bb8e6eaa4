package org.tent4j.testkit.net;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A link of a {@link TestNetwork}: a veth pair between two hosts, or a bridge (in a namespace of its own) that joins
 * more. Its faults are set on the hosts' ends: {@link #down()} takes their interfaces down (connects fail at once),
 * {@link #drop} and {@link #loss} discard packets in the receiving host's input hook (nftables; the sender sees
 * silence, never a reset or an error), {@link #rate} shapes every host's egress ({@code tc tbf}).
 */
public final class Link {
    private final TestNetwork network;
    private final String name;
    private final Map<Host, String> addresses;
    private final String bridgeNamespace;
    private final Set<List<Host>> drops = new HashSet<>();
    private int lossPercent;

    Link(TestNetwork network, String name, Map<Host, String> addresses, String bridgeNamespace) {
        this.network = network;
        this.name = name;
        this.addresses = addresses;
        this.bridgeNamespace = bridgeNamespace;
    }

    /**
     * Its name, which is also the name of each host's interface on it.
     *
     * @return the name
     */
    public String name() {
        return name;
    }

    /**
     * The hosts it joins.
     *
     * @return the hosts
     */
    public List<Host> hosts() {
        return List.copyOf(addresses.keySet());
    }

    /**
     * The namespace of its bridge, or null for a veth pair between two hosts.
     *
     * @return the namespace, or {@code null}
     */
    public String bridgeNamespace() {
        return bridgeNamespace;
    }

    /**
     * {@code host}'s address on this link.
     *
     * @param host a host on this link
     * @return its IPv4 address here
     */
    public String address(Host host) {
        String a = addresses.get(host);
        if (a == null) {
            throw new IllegalArgumentException(host + " is not on link " + name);
        }
        return a;
    }

    /** Takes every host's interface on this link down: their routes over it go, so connects fail at once. */
    public void down() {
        for (Host h : addresses.keySet()) {
            network.setLink(h, name, false);
        }
    }

    /** Brings every host's interface on this link back up. */
    public void up() {
        for (Host h : addresses.keySet()) {
            network.setLink(h, name, true);
        }
    }

    /**
     * Silently drops every packet {@code from} sends {@code to} on this link until {@link #heal()}.
     *
     * @param from the sending host
     * @param to   the receiving host
     */
    public void drop(Host from, Host to) {
        address(from);
        address(to);
        synchronized (this) {
            drops.add(List.of(from, to));
        }
        network.applyFilter(to);
    }

    /** Silently drops every packet between every two hosts on this link, both ways, until {@link #heal()}. */
    public void partition() {
        synchronized (this) {
            for (Host a : addresses.keySet()) {
                for (Host b : addresses.keySet()) {
                    if (a != b) {
                        drops.add(List.of(a, b));
                    }
                }
            }
        }
        applyAll();
    }

    /**
     * Drops {@code percent} of the packets arriving on this link at every host, at random; 0 stops it.
     *
     * @param percent 0 to 100
     */
    public void loss(int percent) {
        if (percent < 0 || percent > 100) {
            throw new IllegalArgumentException("loss is a percentage: " + percent);
        }
        synchronized (this) {
            lossPercent = percent;
        }
        applyAll();
    }

    /** Removes this link's drops and loss (not its rate, not a {@link #down()}). */
    public void heal() {
        synchronized (this) {
            drops.clear();
            lossPercent = 0;
        }
        applyAll();
    }

    /**
     * Limits every host's sending on this link to {@code bitsPerSecond} ({@code tc tbf}); 0 removes the limit.
     *
     * @param bitsPerSecond the rate
     */
    public void rate(long bitsPerSecond) {
        for (Host h : addresses.keySet()) {
            network.setRate(h, name, bitsPerSecond);
        }
    }

    private void applyAll() {
        for (Host h : addresses.keySet()) {
            network.applyFilter(h);
        }
    }

    /** The nftables input rules that this link's faults put in {@code host}. */
    synchronized String inputRules(Host host) {
        List<String> rules = new ArrayList<>();
        for (List<Host> d : drops) {
            if (d.get(1) == host) {
                rules.add("iifname \"" + name + "\" ip saddr " + address(d.get(0)) + " drop");
            }
        }
        if (lossPercent > 0 && addresses.containsKey(host)) {
            rules.add("iifname \"" + name + "\"" + (lossPercent == 100 ? "" : " numgen random mod 100 < " + lossPercent) + " drop");
        }
        StringBuilder s = new StringBuilder();
        for (String r : rules) {
            s.append("  ").append(r).append('\n');
        }
        return s.toString();
    }

    @Override
    public String toString() {
        return name + " " + addresses.values();
    }
}
