package org.tent4j.spi;

import java.util.function.DoubleSupplier;

/**
 * Where a transport reports its own metrics (retransmits, handshakes, queue depths). The engine backs it with its
 * registry and publishes each meter as {@code tent4j_transport_<name>} labelled with the engine's segment and the
 * transport's id, plus the given tags. Create meters once, up front: a {@link Counter} costs nothing to increment.
 */
public interface TransportMetrics {
    /** Drops everything: for harnesses that have no registry. */
    TransportMetrics NONE = new TransportMetrics() {
        @Override
        public Counter counter(String name, String description, String... tags) {
            return n -> { };
        }

        @Override
        public void gauge(String name, String description, DoubleSupplier value, String... tags) {
        }
    };

    /** A monotonically increasing count. */
    @FunctionalInterface
    interface Counter {
        /**
         * Adds to the count; never blocks, safe from any thread.
         *
         * @param amount &gt;= 0
         */
        void increment(long amount);

        /** Adds one. */
        default void increment() {
            increment(1);
        }
    }

    /**
     * A counter; create it once (at {@code create} or connect), not per slice.
     *
     * @param name        lower case words joined by {@code _} or {@code .}, e.g. {@code handshakes}
     * @param description one line for the metric's help text
     * @param tags        key, value, key, value…
     * @return the counter
     */
    Counter counter(String name, String description, String... tags);

    /**
     * A value read whenever metrics are scraped; {@code value} must be cheap and must not block.
     *
     * @param name        lower case words joined by {@code _} or {@code .}
     * @param description one line for the metric's help text
     * @param value       read on the scraping thread
     * @param tags        key, value, key, value…
     */
    void gauge(String name, String description, DoubleSupplier value, String... tags);

}
