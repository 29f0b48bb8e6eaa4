package org.tent4j.store.rpc;

import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Filter;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * grpc-netty logs every message its deframer refuses (over the size limit, over the inbound byte budget) at WARNING
 * with a whole stack trace, through java.util.logging and outside the store's logging: a peer that sends such messages
 * at will fills the master's output. This lets through the 1st, 2nd, 4th, 8th, ... of them, as the store's own refusal
 * logs do; {@link InboundBudget} and the call's status carry the rest.
 */
final class GrpcLogLimit {
    // java.util.logging holds its loggers weakly: the configured one must stay referenced or the filter goes with it
    private static final Logger STREAM = Logger.getLogger("io.grpc.netty.NettyServerStream");
    private static final AtomicLong SEEN = new AtomicLong();
    private static final Filter POWERS_OF_TWO = r -> r.getLevel().intValue() < Level.WARNING.intValue()
            || Long.bitCount(SEEN.incrementAndGet()) == 1;

    private GrpcLogLimit() {
    }

    /** Installs the filter; installing it again changes nothing. */
    static void install() {
        STREAM.setFilter(POWERS_OF_TWO);
    }

    /** How many WARNING-or-worse records the stream logger was asked to log. */
    static long seen() {
        return SEEN.get();
    }
}
