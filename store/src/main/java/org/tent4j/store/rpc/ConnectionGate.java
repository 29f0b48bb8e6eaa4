package org.tent4j.store.rpc;

import java.net.SocketAddress;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The master's connection limits, applied to each connection as it is accepted, before gRPC sees it (a handler on the
 * listening channel). Without a token or TLS every connection counts against {@code maxConnections} at once and those
 * beyond are closed at accept. With one, a connection first holds one of {@code unprovenSlots} slots of its own until
 * it carries a call that passes {@link AuthInterceptor} (the TLS handshake and the token); only then does it count
 * against {@code maxConnections}. When the slots are full the oldest unproven connection is closed, so a flood of
 * connections that never authenticate costs honest clients at most a reconnect and can never lock them out.
 */
@ChannelHandler.Sharable
final class ConnectionGate extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionGate.class);

    private final int maxConnections;
    private final int unprovenSlots;
    private final boolean proving;
    private final Set<Channel> admitted = ConcurrentHashMap.newKeySet();
    // guarded by this: the oldest first
    private final ArrayDeque<Channel> waiting = new ArrayDeque<>();
    private final Map<SocketAddress, Channel> unproven = new ConcurrentHashMap<>();
    private final LongAdder refused;
    private final LongAdder evicted;

    ConnectionGate(int maxConnections, int unprovenSlots, boolean proving, RpcStats stats) {
        if (maxConnections < 1 || unprovenSlots < 1) {
            throw new IllegalArgumentException("connection limits must be >= 1: max " + maxConnections
                    + ", unproven " + unprovenSlots);
        }
        this.maxConnections = maxConnections;
        this.unprovenSlots = unprovenSlots;
        this.proving = proving;
        this.refused = stats.connectionsRefused;
        this.evicted = stats.unprovenEvicted;
        stats.connections = admitted::size;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        Channel child = (Channel) msg;
        if (!proving) {
            if (!admit(child)) {
                // not registered yet: the acceptor's own way of dropping a child it cannot take
                child.unsafe().closeForcibly();
                return;
            }
        } else {
            SocketAddress remote = child.remoteAddress();
            synchronized (this) {
                waiting.add(child);
                unproven.put(remote, child);
                while (waiting.size() > unprovenSlots) {
                    Channel oldest = waiting.poll();
                    unproven.remove(oldest.remoteAddress(), oldest);
                    evicted.increment();
                    oldest.close();
                }
            }
            child.closeFuture().addListener(f -> {
                synchronized (this) {
                    waiting.remove(child);
                }
                unproven.remove(remote, child);
            });
        }
        ctx.fireChannelRead(child);
    }

    private synchronized boolean admit(Channel ch) {
        if (admitted.size() >= maxConnections) {
            refused.increment();
            if (Long.bitCount(refused.sum()) == 1) {
                LOG.warn("refused a connection from {}: {} connections open, the limit ({} refused so far)",
                        ch.remoteAddress(), admitted.size(), refused.sum());
            }
            return false;
        }
        admitted.add(ch);
        ch.closeFuture().addListener(f -> admitted.remove(ch));
        return true;
    }

    /** The connection from {@code remote} carried an authenticated call: it counts against the limit from now on. */
    void proven(SocketAddress remote) {
        if (unproven.isEmpty() || remote == null) {
            return; // the common case: a connection that proved itself long ago
        }
        Channel ch = unproven.remove(remote);
        if (ch == null) {
            return;
        }
        synchronized (this) {
            waiting.remove(ch);
        }
        if (!admit(ch)) {
            ch.close();
        }
    }

    /** Connections closed at accept or after proving themselves because {@code maxConnections} were open. */
    long refused() {
        return refused.sum();
    }

    /** Unproven connections closed to make room for newer ones. */
    long evicted() {
        return evicted.sum();
    }

    int open() {
        return admitted.size();
    }

    synchronized int unproven() {
        return waiting.size();
    }
}
