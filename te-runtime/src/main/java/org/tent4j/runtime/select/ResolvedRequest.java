package org.tent4j.runtime.select;

import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferRequest;
import org.tent4j.runtime.memory.RegisteredBuffer;
import org.tent4j.runtime.peers.RemoteSegment;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.SegmentDescriptor;

/**
 * A request that passed validation, with everything selection and slicing need: the local registration holding it,
 * the target segment with the descriptor it was checked against, and the target buffer.
 */
public record ResolvedRequest(TransferRequest request, RegisteredBuffer local, RemoteSegment segment, SegmentDescriptor descriptor,
                       BufferDescriptor remote, MemoryKind localKind, MemoryKind remoteKind, boolean sameHost) {
}
