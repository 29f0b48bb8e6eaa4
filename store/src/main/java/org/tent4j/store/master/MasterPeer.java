package org.tent4j.store.master;

import java.util.ArrayList;
import java.util.List;

/**
 * One master of a group: its id, the host:port its Raft server listens on, and the host:port of its store RPC (null
 * when not named), which a follower names to clients as the leader's.
 */
public record MasterPeer(String id, String address, String rpc) {
    public MasterPeer(String id, String address) {
        this(id, address, null);
    }

    /**
     * Parses {@code --peers}: {@code id1=host:port,id2=host:port}, each address optionally followed by
     * {@code /rpcPort} (the store RPC on the same host). A malformed item or address is refused naming it, and so is a
     * peer named twice (by id or by address).
     */
    public static List<MasterPeer> parse(String spec) {
        List<MasterPeer> peers = new ArrayList<>();
        for (String item : spec.split(",")) {
            int eq = item.indexOf('=');
            if (eq <= 0 || eq == item.length() - 1) {
                throw new IllegalArgumentException("--peers: '" + item + "' is not id=host:port");
            }
            String id = item.substring(0, eq).trim();
            String address = item.substring(eq + 1).trim();
            String rpc = null;
            int slash = address.indexOf('/');
            if (slash >= 0) {
                String rpcPort = address.substring(slash + 1);
                address = address.substring(0, slash);
                rpc = address.substring(0, address.lastIndexOf(':') + 1) + rpcPort;
                port(rpc);
            }
            port(address);
            String a = address;
            if (peers.stream().anyMatch(p -> p.id().equals(id) || p.address().equals(a))) {
                throw new IllegalArgumentException("--peers names " + id + " (" + address + ") twice");
            }
            peers.add(new MasterPeer(id, address, rpc));
        }
        return peers;
    }

    /** The port of {@code host:port}, refused naming the address when it has none. */
    static int port(String address) {
        int colon = address.lastIndexOf(':');
        try {
            if (colon <= 0) {
                throw new IllegalArgumentException(address);
            }
            return Integer.parseInt(address.substring(colon + 1));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("peer address '" + address + "' is not host:port");
        }
    }
}
