package org.tent4j.spi.platform;

import java.lang.foreign.MemorySegment;

/** An ordered queue of asynchronous device operations. */
public interface DeviceStream extends AutoCloseable {

    /**
     * Enqueues a copy; it runs after everything enqueued before it. Returns at once: both segments must stay valid
     * until {@link #synchronize()} returns.
     *
     * @param dst    where the bytes go
     * @param src    where they come from
     * @param length bytes, within both segments
     */

    void copyAsync(MemorySegment dst, MemorySegment src, long length);

    /** Waits for everything enqueued so far. */
    void synchronize();

    @Override
    void close();
}
