package org.tent4j.spi;

/**
 * A transport's link to one peer segment; the runtime posts slices onto it. Thread-safe.
 *
 * <p>Owned by the runtime from {@link Transport#connect} on: it closes it when the peer's segment closes, when
 * {@link #isOpen()} turns false, or when the engine closes. Each method is called on runtime threads: an application
 * thread that submits, an engine worker, or a thread of a transport that completed an earlier slice.
 */
public interface PeerConnection extends AutoCloseable {

    /**
     * Independent routes to this peer (TCP lanes, NICs, rails, devices). The runtime spreads slices over them by
     * predicted completion time, tracks each one's health, and says in {@link Slice#path()} which one to use.
     * Asked right after {@link Transport#connect}, and again each time the connection reports more paths through the
     * listener of {@link #onPathsAdded}; it never shrinks (a path that stops working fails its slices instead).
     *
     * @return the number of paths, &gt;= 1 (a smaller value counts as 1)
     */
    default int pathCount() {
        return 1;
    }

    /**
     * A short name of a path for logs and metrics, e.g. {@code lane-2} or {@code mlx5_0}.
     *
     * @param path a path in {@code [0, pathCount())}
     * @return the name, stable for the connection's life
     */
    default String pathName(int path) {
        return Integer.toString(path);
    }

    /**
     * Registers what to call when this open connection gained paths (a rail that did not connect at first answers
     * again): the transport appends them, so {@link #pathCount()} grows and existing paths keep their index and name,
     * and then runs {@code added}; the runtime reads the new count and starts spreading slices over the new paths by
     * their measured speed, while slices in flight on the old ones go on. Called by the runtime once, right after
     * {@link Transport#connect}. {@code added} does not block and may be run from any thread, once per growth.
     *
     * <p>The default ignores it: the connection's paths stay as {@code pathCount()} said at first. A transport that
     * finds a new path on a connection nobody listens on may instead report the connection closed
     * ({@link #isOpen()} false), so that it is reopened with the path.
     *
     * @param added run after paths were appended
     */
    default void onPathsAdded(Runnable added) {
    }

    /**
     * Starts moving a slice on path {@link Slice#path()}. Must not block for the data to move (queue it, or hand it to a worker); completion is
     * reported through the slice. A slice that cannot even be started is failed through the slice, not thrown.
     *
     * <p>Unless the capabilities declare {@link TransportCapabilities#concurrentPosts() concurrentPosts}, the runtime
     * posts for one connection from one thread at a time. It has checked the slice against the peer's descriptor and
     * pinned its local buffer, which stays registered until the slice is completed or failed. If this method throws
     * anyway, the runtime fails the slice with INTERNAL naming the transport, so the transport must then not complete
     * or fail it as well. {@link Slice#complete()} or {@link Slice#fail} may be called from inside {@code post} (a
     * slice failed at once) or later from any thread.
     *
     * @param slice the slice; the transport holds it until it completes or fails it
     */
    void post(Slice slice);


    /**
     * Tries to stop a posted slice. Returns {@code true} only if the slice will not move any more bytes and the
     * transport will not complete or fail it; the caller then owns the slice again. The runtime calls it, when the
     * transport's capabilities declare {@link TransportCapabilities#cancellation() cancellation}, for every slice
     * still posted when its task ends (a sibling failed, the task or its batch was canceled, the batch closed), so
     * the task can be reported without waiting for bytes nobody wants. Must not block, and must not complete or fail
     * the slice from inside this call.
     *
     * @param slice a slice posted on this connection
     * @return whether the transport gave the slice back without touching its memory again
     */
    default boolean cancel(Slice slice) {
        return false;
    }

    /**
     * The peer published a new descriptor (buffers added or removed). Called on the thread that delivers metadata
     * changes; must not block. Slices already posted keep the buffers they were checked against.
     *
     * @param descriptor the peer's new descriptor; hostile until checked
     */
    default void descriptorChanged(SegmentDescriptor descriptor) {
    }

    /**
     * Whether slices can still be posted; a closed or broken connection is dropped and reopened by the runtime.
     * Asked before posting, so it must be cheap and must not block.
     *
     * @return {@code false} once the link is closed or broken
     */
    boolean isOpen();

    /**
     * Fails every slice still in flight (naming the peer and the reason) and releases the link. May block briefly
     * for the link's threads to stop; a second call does nothing.

     */

    @Override
    void close();
}
