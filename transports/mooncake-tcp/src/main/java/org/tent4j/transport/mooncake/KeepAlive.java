package org.tent4j.transport.mooncake;

import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.channels.NetworkChannel;
import java.time.Duration;

import jdk.net.ExtendedSocketOptions;
import org.tent4j.api.ConfigException;
import org.tent4j.spi.OptionValues;

/**
 * TCP keep-alive on the wire's connections, both sides: a peer that went silent (a link down, packets dropped, no
 * reset) is noticed on an idle connection after {@code idle + interval x count}, instead of when the next request
 * waits out its deadline on a connection that is long dead.
 */
record KeepAlive(int idleSeconds, int intervalSeconds, int count) {
    static KeepAlive of(OptionValues o) {
        return new KeepAlive(seconds(o, "keepalive_idle"), seconds(o, "keepalive_interval"), count(o));
    }

    private static int seconds(OptionValues o, String key) {
        Duration d = o.getDuration(key);
        if (d.isNegative() || d.isZero() || d.toNanos() % 1_000_000_000L != 0 || d.toSeconds() > 32_767) {
            throw new ConfigException("transports.mooncake-tcp." + key, "must be whole seconds in [1s, 32767s] (the "
                    + "kernel counts keep-alive in seconds), got " + d);
        }
        return (int) d.toSeconds();
    }

    private static int count(OptionValues o) {
        int n = o.getInt("keepalive_count");
        if (n < 1 || n > 127) {
            throw new ConfigException("transports.mooncake-tcp.keepalive_count", "must be in [1, 127], got " + n);
        }
        return n;
    }

    /** Turns keep-alive on for {@code ch} with these timings (where the platform lets a socket choose them). */
    void apply(NetworkChannel ch) throws IOException {
        ch.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
        if (ch.supportedOptions().contains(ExtendedSocketOptions.TCP_KEEPIDLE)) {
            ch.setOption(ExtendedSocketOptions.TCP_KEEPIDLE, idleSeconds);
            ch.setOption(ExtendedSocketOptions.TCP_KEEPINTERVAL, intervalSeconds);
            ch.setOption(ExtendedSocketOptions.TCP_KEEPCOUNT, count);
        }
    }
}
