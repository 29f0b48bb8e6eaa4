package org.tent4j.spi;

import java.util.Map;
import java.util.Optional;

/**
 * A running instance of a transport inside one engine. Transports move slices; the runtime owns policy (selection,
 * slicing, retries, health). Every method has a default except those that only the transport can know.
 *
 * <p>Threads: the runtime may call different methods at once (a registration on an application thread while a
 * connector thread connects and slices are posted), so an implementation is thread-safe.
 * A method that throws a {@link RuntimeException} is a failure of this transport only: the runtime logs it, names the
 * transport in the error it reports, and goes on with the other transports. Exceptions that name a cause use
 * {@link org.tent4j.api.TransferException} with an {@link org.tent4j.api.ErrorCode}.
 *
 * <p>Lifetime: created by {@link TransportProvider#create} when the engine starts, closed once by the engine's close.
 * Registered memory belongs to the application or the engine, never to the transport: a transport reads and writes it
 * only between {@link #registerBuffer} and the return of {@link #unregisterBuffer} (or {@link #close}).
 */
public interface Transport extends AutoCloseable {

    /**
     * The transport's id, as its provider's {@link TransportProvider#id()}.
     *
     * @return the id, e.g. {@code tcp}
     */
    String id();

    /**
     * This instance's capabilities when they depend on its options (a wrapper reports its delegate's); empty means
     * the provider's {@link TransportProvider#capabilities()}. Asked once, after {@code create}.
     *
     * @return the capabilities, or empty for the provider's
     */
    default Optional<TransportCapabilities> capabilities() {
        return Optional.empty();
    }

    /**
     * Attributes the transport publishes for the whole segment (e.g. a data port). Called after {@code create}, and
     * again whenever the engine republishes its descriptor (a registration came or went). Must not block.

     *
     * @return attribute name to value, published under this transport's id; values peers must treat as hostile
     */
    default Map<String, String> segmentAttributes() {
        return Map.of();
    }

    /**
     * A buffer was registered. Return what peers need to reach it through this transport (keys, handles, paths), or
     * empty if this transport cannot serve this buffer (then it is not listed for it in the descriptor).
     *
     * <p>Called on the application thread inside {@link org.tent4j.api.TransferEngine#register} or
     * {@link org.tent4j.api.TransferEngine#allocate}, before the registration is published. May block briefly (pinning
     * memory with a NIC). A throw is logged and means the same as empty: the registration goes ahead without this
     * transport.
     *
     * @param buffer the new registration; the transport may keep the reference until {@link #unregisterBuffer}
     * @return the attributes peers need, published with the buffer; or empty
     */
    default Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
        return Optional.of(Map.of());
    }

    /**
     * A buffer is being unregistered; release what {@link #registerBuffer} set up. May block until no I/O touches the
     * buffer: once this returns the transport must never touch its memory again. The buffer is already gone from
     * {@link LocalMemory}, so new peer requests for it fail. If the transport cannot guarantee that in bounded time
     * (a peer's access still pending), it must throw rather than return: the runtime then keeps the memory allocated
     * and fails {@code unregister} naming this transport; a later {@code unregister} asks again.
     *
     * <p>Called on the application thread inside {@link org.tent4j.api.TransferEngine#unregister}, only for a buffer
     * this transport accepted; after it returned normally it is not called again for that buffer.
     *
     * @param buffer a buffer this transport accepted in {@link #registerBuffer}
     */
    default void unregisterBuffer(LocalBuffer buffer) {
    }

    /**
     * A file was registered ({@link org.tent4j.api.TransferEngine#registerFile}). Return what peers need to reach it
     * through this transport, or empty if this transport does not serve files (the default: files are invisible to
     * transports that move memory only). Called on the application thread inside
     * {@link org.tent4j.api.TransferEngine#registerFile}; may block to open the file.
     *
     * @param file the new file registration; the transport owns no part of it and must not close its channel
     * @return the attributes peers need, published with the file; or empty
     */
    default Optional<Map<String, String>> registerFile(LocalFile file) {
        return Optional.empty();
    }

    /**
     * A file registered with {@link #registerFile} is being unregistered; once this returns, do not touch it again.
     *
     * @param file a file this transport accepted in {@link #registerFile}
     */
    default void unregisterFile(LocalFile file) {
    }

    /**
     * An allocator for engine-owned memory this transport can share with peers, if it has one. The runtime asks the
     * transports in preference order on {@link org.tent4j.api.TransferEngine#allocate}.
     *
     * @return the allocator, or empty (the default)
     */
    default Optional<MemoryAllocator> allocator() {
        return Optional.empty();
    }

    /**
     * Why this transport cannot reach {@code peer}, decided from its descriptor alone without connecting (a missing
     * data port attribute, a fabric the peer is not on, a peer process this transport cannot map): empty if it may.
     * The runtime asks this while selecting, so that {@code explain} never names a transport that then cannot
     * connect. Must be cheap and must not block.
     *
     * @param peer the peer's descriptor, as published: every attribute in it is hostile until checked
     * @return the reason, naming the peer and what is missing; empty if this transport may reach it
     */
    default Optional<String> unreachableReason(SegmentDescriptor peer) {
        return Optional.empty();
    }

    /**
     * A segment that the engine's own directory does not know, named in this transport's protocol's own terms (a
     * Mooncake segment name kept in Mooncake's keys): the descriptor this transport reaches it at, or empty if the name
     * is none of its business (the default). The runtime asks the transports in preference order after its directory
     * answered UNKNOWN_SEGMENT, and only then; the first answer wins, and the segment opens as any other (its name,
     * and addresses as the foreign engine publishes them). Such a segment is not watched: it is resolved again when a
     * transfer finds it gone. May block on the foreign metadata store.
     *
     * @param segmentName the name a request opened
     * @return the segment's descriptor, or empty
     * @throws org.tent4j.api.TransferException for a name that is this transport's but whose metadata is absent or
     *                                          wrong: UNKNOWN_SEGMENT or METADATA_UNAVAILABLE naming the key and field
     */
    default Optional<SegmentDescriptor> resolveSegment(String segmentName) {
        return Optional.empty();
    }

    /**
     * Opens a link to a peer. May block to connect. The runtime caches and reuses the result while it is open.
     *
     * <p>Called on an engine connector thread, never on an application thread, once per (peer, transport) until the

     * connection reports {@link PeerConnection#isOpen()} false; slices for the peer wait meanwhile. A
     * {@link org.tent4j.api.TransferException} is reported as it is; any other exception as PEER_UNREACHABLE naming the
     * transport and the segment. Must honour {@link TransportContext#transferTimeout()} rather than block forever.
     *
     * @param peer the peer's descriptor; its attributes are hostile until checked
     * @return an open connection the runtime owns and closes
     * @throws org.tent4j.api.TransferException PEER_UNREACHABLE naming the peer, or TRANSPORT_UNAVAILABLE
     */
    PeerConnection connect(SegmentDescriptor peer);

    /**
     * Closes every connection and listener and fails what is still in flight. When it returns, no thread of the
     * transport touches registered memory any more. Called once, by the engine's close, after the runtime stopped
     * posting; may block for in-flight I/O to stop. A throw is logged, and the engine then leaves registered memory
     * allocated (leaked, logged) rather than freeing it under this transport's threads.
     */

    @Override
    void close();
}
