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
    /**
     * Which way the bytes go.
     *
     * @return READ (remote to local) or WRITE (local to remote)
     */
    Opcode opcode();

    /**
     * The local registered buffer this slice reads from (WRITE) or writes into (READ).
     *
     * @return the buffer, registered at least until the slice is completed or failed
     */
    LocalBuffer localBuffer();

    /**
     * Offset of the slice inside {@link #localBuffer()}.
     *
     * @return bytes from the buffer's start; {@code localOffset() + length()} is within the buffer
     */
    long localOffset();

    /**
     * The remote buffer this slice targets (already checked against the peer's descriptor).
     *
     * @return the buffer as the peer published it, with this transport's attributes for it
     */
    BufferDescriptor remoteBuffer();

    /**
     * Address in the peer's address space.
     *
     * @return an address inside {@link #remoteBuffer()}, with the whole length inside it too
     */
    long remoteAddress();

    /**
     * Bytes to move.
     *
     * @return &gt; 0 and at most the transport's {@link TransportCapabilities#maxSliceSize()}
     */
    long length();

    /**
     * The path of the connection to move this slice on, in {@code [0, pathCount())}.
     *
     * @return the path index
     */
    default int path() {
        return 0;
    }

    /**
     * Absolute {@link System#nanoTime()} by which the slice must be done; the transport fails it with TIMEOUT after.
     *
     * @return the deadline, in the engine's {@link TransportContext#clock()}
     */
    long deadlineNanos();

    /** The bytes have landed. Called once; the slice must not be touched afterwards. */
    void complete();

    /**
     * The slice did not land. {@code message} names peer, address, length and what went wrong. Called once; the slice
     * must not be touched afterwards. The runtime retries a {@link ErrorCode#retryable() retryable} code on another
     * path or transport while the task's deadline allows.
     *
     * @param code    why: PEER_FAILED for a broken link, TIMEOUT past the deadline, PROTOCOL for a peer's bad answer,
     *                PERMISSION_DENIED or OUT_OF_BOUNDS when the peer refused the access
     * @param message what went wrong, naming peer, address and length
     */
    void fail(ErrorCode code, String message);

}
