package org.tent4j.spi;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;

/**
 * The unit of work a transport moves: a contiguous range of local registered memory and a contiguous range of one
 * remote buffer. Slices are owned and recycled by the runtime, so reading them allocates nothing.
 *
 * <p>Contract: after {@link PeerConnection#post} the transport calls exactly one of {@link #complete()} or
 * {@link #fail} exactly once, from any thread, and does not touch the slice afterwards (it may be reused at once).
 * {@code complete()} for a WRITE means the bytes are visible in the target's memory; for a READ, in local memory.
 * Both may be called on a transport I/O thread; the runtime never blocks in them.
 */
public interface Slice {
    Opcode opcode();

    /** The local registered buffer this slice reads from (WRITE) or writes into (READ). */
    LocalBuffer localBuffer();

    /** Offset of the slice inside {@link #localBuffer()}. */
    long localOffset();

    /** The remote buffer this slice targets (already checked against the peer's descriptor). */
    BufferDescriptor remoteBuffer();

    /** Address in the peer's address space. */
    long remoteAddress();

    long length();

    /** The path of the connection to move this slice on, in {@code [0, pathCount())}. */
    default int path() {
        return 0;
    }

    /** Absolute {@link System#nanoTime()} by which the slice must be done; the transport fails it with TIMEOUT after. */
    long deadlineNanos();

    /** The bytes have landed. */
    void complete();

    /** The slice did not land. {@code message} names peer, address, length and what went wrong. */
    void fail(ErrorCode code, String message);
}
