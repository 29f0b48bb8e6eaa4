package org.tent4j.api;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Moves bytes between this process's registered memory and segments of other engines. The application says what to
 * move; the engine chooses the transport, slices large requests, and reports per-task status.
 *
 * <p>All methods are thread-safe. Close the engine to release its memory, connections and threads.
 */
public interface TransferEngine extends AutoCloseable {

    /**
     * Builds an engine with the runtime found on the class path (module {@code te-runtime}).
     *
     * @param config the engine's settings, checked by the runtime before anything starts
     * @return a started engine; the caller closes it
     * @throws TransferException INTERNAL when no runtime is on the class path
     * @throws ConfigException naming the key when {@code config} holds an unknown or malformed setting
     */
    static TransferEngine create(EngineConfig config) {
        for (EngineFactory factory : ServiceLoader.load(EngineFactory.class)) {
            return factory.create(config);
        }
        throw new TransferException(ErrorCode.INTERNAL,
                "no tent4j runtime on the class path: add org.tent4j:te-runtime");
    }

    /**
     * Builds an engine with {@link EngineConfig#defaults()}.
     *
     * @return a started engine; the caller closes it
     */
    static TransferEngine create() {
        return create(EngineConfig.defaults());
    }

    /**
     * This engine's segment name; peers open it with this name.
     *
     * @return the name, fixed for the engine's life
     */
    String segmentName();

    /**
     * The engine's own segment, usable as the target of loopback requests.
     *
     * @return a handle the caller need not close
     */
    SegmentHandle localSegment();

    /**
     * Registers memory the caller owns so it can be the local side of requests and, unless {@link Permission#LOCAL_ONLY},
     * be addressed by peers. The caller must keep it alive until {@link #unregister}. Overlapping an existing
     * registration is rejected.
     *
     * @param memory     off-heap memory the caller owns; a heap or empty segment is rejected (INVALID_ARGUMENT)
     * @param location   where the memory lives (host NUMA node or device), so transports pick a path near it
     * @param permission what peers may do with it
     * @return the registration, to name in requests and to pass to {@link #unregister}
     */
    RegisteredMemory register(MemorySegment memory, Location location, Permission permission);

    /**
     * Allocates and registers memory owned by the engine. Host memory comes from a transport that can share it with
     * other processes on this host (shared memory) when one is enabled, so same-host peers can reach it directly.
     *
     * @param size       bytes, &gt; 0 (INVALID_ARGUMENT otherwise)
     * @param location   where to allocate it
     * @param permission what peers may do with it
     * @return the registration; its memory lives until {@link #unregister} or the engine's close
     */
    RegisteredMemory allocate(long size, Location location, Permission permission);

    /**
     * Removes a registration (and frees engine-allocated memory). New requests on it fail at once; slices already
     * posted on it are waited for (up to {@code transfer.timeout}) and every transport must confirm peers can no
     * longer reach it. When that cannot be guaranteed it throws {@link ErrorCode#TIMEOUT} naming what still holds the
     * memory, which then stays allocated (and must stay alive if the caller owns it); calling it again retries.
     *
     * @param memory a registration of this engine
     */
    void unregister(RegisteredMemory memory);

    /**
     * The registration of this engine that holds all of {@code range} (memory registered with {@link #register} or
     * {@link #allocate} and not yet unregistered), so a caller can check its memory before acting on it: a request
     * whose local side is not registered fails with {@link ErrorCode#ADDRESS_NOT_REGISTERED}. The engine can always
     * read and write its own registered memory; {@link RegisteredMemory#permission()} says what peers may do with it.
     *
     * @param range the memory to look up
     * @return the registration, or empty when no single registration holds the whole range (none touches it, or it
     *         runs past the end of one)
     * @throws UnsupportedOperationException when this engine does not track registrations (the runtime's does)
     */
    default Optional<RegisteredMemory> findRegistration(MemorySegment range) {
        throw new UnsupportedOperationException("this engine (" + getClass().getName() + ") does not look up registrations");
    }

    /**
     * Registers a regular file or block device as part of this engine's segment, so requests (this engine's and, unless
     * {@link Permission#LOCAL_ONLY}, peers') can read and write it by offset: see {@link RegisteredFile#address()}.
     * A transport that serves files (e.g. {@code nvmeof}) moves the bytes; the file is never mapped into memory.
     *
     * @param path       the file; created when missing (then {@code size} must be &gt; 0)
     * @param size       bytes to register; 0 registers the file's current size. A regular file shorter than
     *                   {@code size} is extended (sparse); a block device must be at least that large.
     * @param permission which requests may address the file ({@link RegisteredFile#permission()}); not LOCAL_ONLY
     * @return the registration, whose {@link RegisteredFile#address()} requests use as the file's offset 0
     * @throws TransferException INVALID_ARGUMENT naming the path when it is not a regular file or block device,
     *                           cannot be opened, created or extended, is already registered, or when no running
     *                           transport serves files
     */
    default RegisteredFile registerFile(Path path, long size, Permission permission) {
        throw new TransferException(ErrorCode.INVALID_ARGUMENT, "this engine (" + getClass().getName()
                + ") does not support file segments; cannot register " + path);
    }

    /**
     * Removes a file registration; the file itself stays. In-flight requests on it may fail.
     *
     * @param file a registration of this engine
     * @throws TransferException INVALID_ARGUMENT when {@code file} is not registered with this engine
     */
    default void unregisterFile(RegisteredFile file) {
        throw new TransferException(ErrorCode.INVALID_ARGUMENT, "file " + file + " is not registered with this engine");
    }

    /**
     * Opens a segment by name and fetches its descriptor.
     *
     * @param name the segment's name, as its engine's {@link #segmentName()} says
     * @return a handle to name the segment in requests
     * @throws TransferException {@link ErrorCode#UNKNOWN_SEGMENT} naming the segment if no such segment is known
     */
    SegmentHandle openSegment(String name);

    /**
     * Forgets the segment: its cached descriptor is dropped and a later request on this handle fails.
     *
     * @param segment a handle from {@link #openSegment(String)} or {@link #openSegment(byte[])}
     */
    void closeSegment(SegmentHandle segment);

    /**
     * The segment's buffers and transports, from its (cached) descriptor.
     *
     * @param segment an open segment
     * @return a snapshot; it does not follow later changes
     */
    SegmentInfo segmentInfo(SegmentHandle segment);

    /**
     * A new batch holding up to {@code capacity} tasks.
     *
     * @param capacity the most tasks the batch holds, &gt; 0
     * @return the batch; the caller closes it
     */
    Batch allocateBatch(int capacity);

    /**
     * Checks {@code requests} once and returns them as a {@link PreparedTransfer} to post again and again (NIXL's
     * prepare-once, post-many). Unlike {@link Batch#submit}, a request that fails validation throws here, naming its
     * index and what was wrong. The engine's own implementation pools its per-request state, so posts allocate nothing.
     *
     * @param requests the requests, in the order their statuses are reported; relative deadlines only
     * @return the prepared transfer; the caller closes it
     * @throws TransferException {@link ErrorCode#INVALID_ARGUMENT} for an empty list or a request with an absolute
     *                           deadline; the validation codes of a batch submit for a bad request
     */
    default PreparedTransfer prepare(List<TransferRequest> requests) {
        if (requests.isEmpty()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "prepare needs at least one request");
        }
        return new BatchPreparedTransfer(this, requests);
    }

    /**
     * Submits one request; the future completes with its terminal status (never exceptionally).
     *
     * @param request what to move
     * @return completes on an engine thread with a terminal status; a refused request completes FAILED naming why
     */
    CompletableFuture<TransferStatus> submit(TransferRequest request);

    /**
     * How the engine would carry {@code request} (policy, transport choice with reasons, slicing); moves nothing.
     *
     * @param request the request to plan
     * @return the plan the engine would follow now
     */
    TransferPlan explain(TransferRequest request);

    /**
     * Submits one request and waits for its terminal status.
     *
     * @param request what to move
     * @return the terminal status, as {@link #submit} reports it
     */
    default TransferStatus transfer(TransferRequest request) {
        return submit(request).join();
    }

    /**
     * Sends a notification on its own to the owner of {@code target}; completes when the peer has accepted it.
     *
     * @param target  the segment whose engine receives it
     * @param message the text, delivered as is
     * @return completes when the peer accepted it, exceptionally with a {@link TransferException} naming the peer
     */
    CompletableFuture<Void> sendNotification(SegmentHandle target, String message);

    /**
     * Takes every notification received so far.
     *
     * @return the notifications in arrival order; empty if none; each is returned once
     */
    List<Notification> drainNotifications();

    /**
     * Waits up to {@code timeout} for the next notification; {@code null} if none came.
     *
     * @param timeout how long to wait
     * @return the next notification, or {@code null} if none came in time
     * @throws InterruptedException when the waiting thread is interrupted
     */
    Notification awaitNotification(Duration timeout) throws InterruptedException;

    /**
     * Also delivers every received notification to {@code listener} (on an engine thread; keep it short).
     *
     * @param listener called once per notification; it must not block
     */
    void onNotification(Consumer<Notification> listener);

    /**
     * Every transport plugin found, with its availability and whether this engine runs it.
     *
     * @return one entry per provider on the class path
     */
    List<TransportInfo> transports();

    // ------------------------------------------------ metadata blobs and key/value access
    // For consumers that exchange metadata themselves (NIXL-style agents): an engine's descriptor as a blob, blobs served
    // on the control plane, and namespaced keys in the metadata stores. Defaults refuse, so other implementations keep
    // compiling; the runtime implements all of them.

    /** The label under which every engine offers its own {@link #segmentBlob()} to {@link #fetchBlob}. */
    String SEGMENT_BLOB = "segment";

    /**
     * This engine's segment descriptor (buffers, transports, their keys) as a versioned, self-describing blob. A peer
     * opens it with {@link #openSegment(byte[])} without any metadata store. Each call reflects current registrations.
     *
     * @return a fresh copy the caller owns
     */
    default byte[] segmentBlob() {
        throw new UnsupportedOperationException(getClass().getName() + " has no segment blobs");
    }

    /**
     * Opens the segment a peer's {@link #segmentBlob()} describes, caching that descriptor as if it had been fetched.
     * If the segment is already open the newer of the two descriptors is kept. {@link #closeSegment} invalidates it.
     *
     * @param blob a peer's {@link #segmentBlob()}
     * @return a handle to the segment it describes
     * @throws TransferException INVALID_ARGUMENT naming what is wrong with a malformed blob or an unknown blob version
     */
    default SegmentHandle openSegment(byte[] blob) {
        throw new UnsupportedOperationException(getClass().getName() + " has no segment blobs");
    }

    /**
     * Offers a blob under {@code label} ({@code [A-Za-z0-9._-]}, 1 to 64 characters) on this engine's control plane,
     * for peers calling {@link #fetchBlob}; {@code blob} is asked on each fetch (at most
     * {@link MetadataNamespace#MAX_VALUE} bytes). Replaces an earlier offer under the label; {@code null} withdraws it.
     * The label {@link #SEGMENT_BLOB} is the engine's own.
     *
     * @param label the label peers fetch it by
     * @param blob  asked on an engine thread at each fetch; it must not block; {@code null} withdraws the offer
     */
    default void offerBlob(String label, Supplier<byte[]> blob) {
        throw new UnsupportedOperationException(getClass().getName() + " offers no blobs");
    }

    /**
     * {@code host:port} of this engine's control plane, where peers {@link #fetchBlob} from it.
     *
     * @return the endpoint, fixed for the engine's life
     */
    default String controlEndpoint() {
        throw new UnsupportedOperationException(getClass().getName() + " has no control plane");
    }

    /**
     * Fetches the blob the engine whose control plane listens at {@code host:port} offers under {@code label}, straight
     * from it (no metadata store).
     *
     * @param host    the peer's control host
     * @param port    the peer's control port
     * @param label   what it offers the blob under
     * @param timeout how long to wait for the answer
     * @return the blob, owned by the caller
     * @throws TransferException PEER_UNREACHABLE or TIMEOUT naming the peer, or UNKNOWN_SEGMENT when it offers nothing
     *                           under {@code label}
     */
    default byte[] fetchBlob(String host, int port, String label, Duration timeout) {
        throw new UnsupportedOperationException(getClass().getName() + " fetches no blobs");
    }

    /**
     * Key/value access to the configured metadata stores under {@code namespace} ({@code [A-Za-z0-9._-]}, 1 to 64
     * characters), kept apart from the engine's own keys.
     *
     * @param namespace the namespace's name
     * @return access to keys under it
     * @throws TransferException METADATA_UNAVAILABLE when the engine runs without a store ({@code metadata.uri=p2p})
     */
    default MetadataNamespace metadataNamespace(String namespace) {
        throw new UnsupportedOperationException(getClass().getName() + " has no metadata namespaces");
    }

    /**
     * Closes every transport, connection and thread, fails what is still in flight and frees engine-allocated memory.
     * Memory a transport may still touch (one failed to close) is left allocated rather than freed under it.
     */
    @Override
    void close();

}
