package org.tent4j.transport.netty;

import java.time.Duration;

import io.netty.channel.ChannelOption;
import io.netty.channel.socket.nio.NioChannelOption;
import jdk.net.ExtendedSocketOptions;

import org.tent4j.api.ConfigException;

/**
 * TCP keep-alive of a connection, so that a peer that went silent (a link down, a partition: no reset ever comes) is
 * noticed without traffic of ours: after {@code idle} without traffic the kernel probes the peer every {@code interval}
 * and closes the connection once {@code count} probes went unanswered. Where the channel type offers
 * {@code TCP_USER_TIMEOUT} (epoll, io_uring) data left unacknowledged for as long ({@code idle + interval * count}) closes
 * it too: keep-alive probes only an idle connection, and without that bound a peer's answers sent into the silence are
 * retransmitted for about 15 minutes, holding whatever they pin. An {@code idle} of 0 turns both off.
 */
public record KeepAlive(Duration idle, Duration interval, int count) {
    /** The socket options of one channel type; {@code userTimeout} is {@code null} where the type has none. */
    public record Keys(ChannelOption<Integer> idle, ChannelOption<Integer> interval, ChannelOption<Integer> count,
                       ChannelOption<Integer> userTimeout) {
        /** NIO channels: the JDK's extended socket options, which have no user timeout. */
        public static final Keys NIO = new Keys(NioChannelOption.of(ExtendedSocketOptions.TCP_KEEPIDLE),
                NioChannelOption.of(ExtendedSocketOptions.TCP_KEEPINTERVAL),
                NioChannelOption.of(ExtendedSocketOptions.TCP_KEEPCOUNT), null);
    }

    /** Sets one option on a bootstrap's channels: {@code Bootstrap::option} or {@code ServerBootstrap::childOption}. */
    public interface Setter {
        <T> Object set(ChannelOption<T> option, T value);
    }

    /**
     * Reads and checks the settings; the keys are named in errors. The kernel counts in whole seconds, so a duration
     * must be 0 (idle only) or whole seconds of at least 1.
     */
    public static KeepAlive of(String idleKey, Duration idle, String intervalKey, Duration interval, String countKey,
                               int count) {
        if (idle.isNegative() || idle.toNanos() % 1_000_000_000L != 0) {
            throw new ConfigException(idleKey, "must be 0 (off) or whole seconds, got " + idle);
        }
        if (interval.compareTo(Duration.ofSeconds(1)) < 0 || interval.toNanos() % 1_000_000_000L != 0) {
            throw new ConfigException(intervalKey, "must be whole seconds of at least 1s, got " + interval);
        }
        if (count < 1 || count > 127) {
            throw new ConfigException(countKey, "must be in [1, 127], got " + count);
        }
        if (idle.toSeconds() > 32767 || interval.toSeconds() > 32767) {
            throw new ConfigException(idle.toSeconds() > 32767 ? idleKey : intervalKey, "must be at most 32767s");
        }
        return new KeepAlive(idle, interval, count);
    }

    public boolean on() {
        return idle.isPositive();
    }

    /** How long a silent peer goes unnoticed at most: {@code idle + interval * count}. */
    public Duration detection() {
        return idle.plus(interval.multipliedBy(count));
    }

    /** Configures the channels a bootstrap makes, through {@code setter}, with the options of their type. */
    public void configure(Keys keys, Setter setter) {
        setter.set(ChannelOption.SO_KEEPALIVE, on());
        if (!on()) {
            return;
        }
        setter.set(keys.idle(), (int) idle.toSeconds());
        setter.set(keys.interval(), (int) interval.toSeconds());
        setter.set(keys.count(), count);
        if (keys.userTimeout() != null) {
            setter.set(keys.userTimeout(), (int) Math.min(Integer.MAX_VALUE, detection().toMillis()));
        }
    }
}
