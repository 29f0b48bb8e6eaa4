package org.tent4j.spi;

/** A transport's link to one peer segment; the runtime posts slices onto it. Thread-safe. */
public interface PeerConnection extends AutoCloseable {

    /**
     * Independent routes to this peer (TCP lanes, NICs, rails, devices). The runtime spreads slices over them by
     * predicted completion time, tracks each one's health, and says in {@link Slice#path()} which one to use.
     */
    default int pathCount() {
        return 1;
    }

    /** A short name of a path for logs and metrics, e.g. {@code lane-2} or {@code mlx5_0}. */
    default String pathName(int path) {
        return Integer.toString(path);
    }

    /**
     * Starts moving a slice on path {@link Slice#path()}. Must not block for the data to move (queue it, or hand it to a worker); completion is
     * reported through the slice. A slice that cannot even be started is failed through the slice, not thrown.
     */
    void post(Slice slice);

    /**
     * Tries to stop a posted slice. Returns {@code true} only if the slice will not move any more bytes and the
     * transport will not complete or fail it; the caller then owns the slice again. The runtime calls it, when the
     * transport's capabilities declare {@link TransportCapabilities#cancellation() cancellation}, for every slice
     * still posted when its task ends (a sibling failed, the task or its batch was canceled, the batch closed), so
     * the task can be reported without waiting for bytes nobody wants. Must not block, and must not complete or fail
     * the slice from inside this call.
     */
    default boolean cancel(Slice slice) {
        return false;
    }

    /** The peer published a new descriptor (buffers added or removed). */
    default void descriptorChanged(SegmentDescriptor descriptor) {
    }

    /** Whether slices can still be posted; a closed or broken connection is dropped and reopened by the runtime. */
    boolean isOpen();

    /** Fails every slice still in flight and releases the link. */
    @Override
    void close();
}
