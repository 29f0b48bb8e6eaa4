package org.tent4j.metadata.etcd;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.concurrent.TimeUnit;

import io.etcd.jetcd.Client;
import io.grpc.ManagedChannel;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Cuts gRPC's reconnect backoff short once etcd is back. gRPC waits up to two minutes between connection attempts after
 * a long outage, so a store would stay unavailable long after etcd recovered; jetcd offers no way to reach its
 * channel, so it is taken reflectively. If that fails (another jetcd version), recovery just follows gRPC's backoff.
 */
final class ChannelReconnect {
    private static final Logger LOG = LoggerFactory.getLogger(ChannelReconnect.class);
    private static final long MIN_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    private final ManagedChannel channel;
    private long lastReset;

    private ChannelReconnect(ManagedChannel channel) {
        this.channel = channel;
    }

    static ChannelReconnect of(Client client, String uri) {
        try {
            Field f = client.getClass().getDeclaredField("connectionManager");
            f.setAccessible(true);
            Object manager = f.get(client);
            Method getChannel = manager.getClass().getDeclaredMethod("getChannel");
            getChannel.setAccessible(true);
            return new ChannelReconnect((ManagedChannel) getChannel.invoke(manager));
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.debug("{}: cannot reach jetcd's gRPC channel ({}); reconnects follow gRPC's backoff", uri,
                    e.toString());
            return new ChannelReconnect(null);
        }
    }

    /** Makes the channel try to connect now instead of after its backoff; at most twice a second. */
    void resetBackoff() {
        if (channel == null) {
            return;
        }
        synchronized (this) {
            long now = System.nanoTime();
            if (lastReset != 0 && now - lastReset < MIN_INTERVAL_NANOS) {
                return;
            }
            lastReset = now;
        }
        channel.resetConnectBackoff();
    }
}
