package org.tent4j.spi.platform;

import java.lang.foreign.MemorySegment;

/** An ordered queue of asynchronous device operations. */
public interface DeviceStream extends AutoCloseable {

    /** Enqueues a copy; it runs after everything enqueued before it. */
    void copyAsync(MemorySegment dst, MemorySegment src, long length);

    /** Waits for everything enqueued so far. */
    void synchronize();

    @Override
    void close();
}
