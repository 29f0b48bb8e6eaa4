package org.tent4j.api;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import org.tent4j.spi.EngineFactory;

/**
 * Moves bytes between this process's registered memory and segments of other engines. The application says what to
 * move; the engine chooses the transport, slices large requests, and reports per-task status.
 *
 * <p>All methods are thread-safe. Close the engine to release its memory, connections and threads.
 */
public interface TransferEngine extends AutoCloseable {

    /** Builds an engine with the runtime found on the class path (module {@code te-runtime}). */
    static TransferEngine create(EngineConfig config) {
        for (EngineFactory factory : ServiceLoader.load(EngineFactory.class)) {
            return factory.create(config);
        }
        throw new TransferException(ErrorCode.INTERNAL,
                "no tent4j runtime on the class path: add org.tent4j:te-runtime");
    }

    static TransferEngine create() {
        return create(EngineConfig.defaults());
    }

    /** This engine's segment name; peers open it with this name. */
    String segmentName();

    /** The engine's own segment, usable as the target of loopback requests. */
    SegmentHandle localSegment();

    /**
     * Registers memory the caller owns so it can be the local side of requests and, unless {@link Permission#LOCAL_ONLY},
     * be addressed by peers. The caller must keep it alive until {@link #unregister}. Overlapping an existing
     * registration is rejected.
     */
    RegisteredMemory register(MemorySegment memory, Location location, Permission permission);

    /**
     * Allocates and registers memory owned by the engine. Host memory comes from a transport that can share it with
     * other processes on this host (shared memory) when one is enabled, so same-host peers can reach it directly.
     */
    RegisteredMemory allocate(long size, Location location, Permission permission);

    /**
     * Removes a registration (and frees engine-allocated memory). New requests on it fail at once; slices already
     * posted on it are waited for (up to {@code transfer.timeout}) and every transport must confirm peers can no
     * longer reach it. When that cannot be guaranteed it throws {@link ErrorCode#TIMEOUT} naming what still holds the
     * memory, which then stays allocated (and must stay alive if the caller owns it); calling it again retries.
     */
    void unregister(RegisteredMemory memory);

    /**
     * Opens a segment by name and fetches its descriptor.
     *
     * @throws TransferException {@link ErrorCode#UNKNOWN_SEGMENT} naming the segment if no such segment is known
     */
    SegmentHandle openSegment(String name);

    void closeSegment(SegmentHandle segment);

    /** The segment's buffers and transports, from its (cached) descriptor. */
    SegmentInfo segmentInfo(SegmentHandle segment);

    /** A new batch holding up to {@code capacity} tasks. */
    Batch allocateBatch(int capacity);

    /** Submits one request; the future completes with its terminal status (never exceptionally). */
    CompletableFuture<TransferStatus> submit(TransferRequest request);

    /** How the engine would carry {@code request} (policy, transport choice with reasons, slicing); moves nothing. */
    TransferPlan explain(TransferRequest request);

    /** Submits one request and waits for its terminal status. */
    default TransferStatus transfer(TransferRequest request) {
        return submit(request).join();
    }

    /** Sends a notification on its own to the owner of {@code target}; completes when the peer has accepted it. */
    CompletableFuture<Void> sendNotification(SegmentHandle target, String message);

    /** Takes every notification received so far. */
    List<Notification> drainNotifications();

    /** Waits up to {@code timeout} for the next notification; {@code null} if none came. */
    Notification awaitNotification(Duration timeout) throws InterruptedException;

    /** Also delivers every received notification to {@code listener} (on an engine thread; keep it short). */
    void onNotification(Consumer<Notification> listener);

    /** Every transport plugin found, with its availability and whether this engine runs it. */
    List<TransportInfo> transports();

    @Override
    void close();
}
