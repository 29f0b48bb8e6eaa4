package org.tent4j.api;

/** An opened segment: the local engine's own, or a peer's. Obtained from {@link TransferEngine#openSegment}. */
public interface SegmentHandle {
    /**
     * The segment's name as it was opened (in peer-to-peer mode, {@code host:port} of the peer's control plane).
     *
     * @return the name
     */
    String name();

    /**
     * A small number, unique within this engine while the segment is open.
     *
     * @return the id
     */
    int id();

    /**
     * Whether this handle is the engine's own segment.
     *
     * @return {@code true} for {@link TransferEngine#localSegment()}
     */

    boolean isLocal();
}
