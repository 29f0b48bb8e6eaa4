package org.tent4j.spi;

import java.util.Map;
import java.util.Optional;

/**
 * A running instance of a transport inside one engine. Transports move slices; the runtime owns policy (selection,
 * slicing, retries, health). Every method has a default except those that only the transport can know.
 */
public interface Transport extends AutoCloseable {

    String id();

    /**
     * This instance's capabilities when they depend on its options (a wrapper reports its delegate's); empty means
     * the provider's {@link TransportProvider#capabilities()}.
     */
    default Optional<TransportCapabilities> capabilities() {
        return Optional.empty();
    }

    /**
     * Attributes the transport publishes for the whole segment (e.g. a data port). Called after {@code create}, and
     * again whenever the engine republishes its descriptor.
     */
    default Map<String, String> segmentAttributes() {
        return Map.of();
    }

    /**
     * A buffer was registered. Return what peers need to reach it through this transport (keys, handles, paths), or
     * empty if this transport cannot serve this buffer (then it is not listed for it in the descriptor).
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
     */
    default void unregisterBuffer(LocalBuffer buffer) {
    }

    /**
     * A file was registered ({@link org.tent4j.api.TransferEngine#registerFile}). Return what peers need to reach it
     * through this transport, or empty if this transport does not serve files (the default: files are invisible to
     * transports that move memory only).
     */
    default Optional<Map<String, String>> registerFile(LocalFile file) {
        return Optional.empty();
    }

    /** A file registered with {@link #registerFile} is being unregistered; once this returns, do not touch it again. */
    default void unregisterFile(LocalFile file) {
    }

    /** An allocator for engine-owned memory this transport can share with peers, if it has one. */
    default Optional<MemoryAllocator> allocator() {
        return Optional.empty();
    }

    /**
     * Why this transport cannot reach {@code peer}, decided from its descriptor alone without connecting (a missing
     * data port attribute, a fabric the peer is not on, a peer process this transport cannot map): empty if it may.
     * The runtime asks this while selecting, so that {@code explain} never names a transport that then cannot
     * connect. Must be cheap and must not block.
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
     * @throws org.tent4j.api.TransferException for a name that is this transport's but whose metadata is absent or
     *                                          wrong: UNKNOWN_SEGMENT or METADATA_UNAVAILABLE naming the key and field
     */
    default Optional<SegmentDescriptor> resolveSegment(String segmentName) {
        return Optional.empty();
    }

    /**
     * Opens a link to a peer. May block to connect. The runtime caches and reuses the result while it is open.
     *
     * @throws org.tent4j.api.TransferException PEER_UNREACHABLE naming the peer, or TRANSPORT_UNAVAILABLE
     */
    PeerConnection connect(SegmentDescriptor peer);

    /**
     * Closes every connection and listener and fails what is still in flight. When it returns, no thread of the
     * transport touches registered memory any more.
     */
    @Override
    void close();
}
