package org.tent4j.transport.efa;

import java.lang.foreign.MemorySegment;

import org.tent4j.spi.Slice;

/**
 * One operation the transport can have in flight, preallocated. Its {@link #context} (64 bytes, an {@code
 * fi_context2}, which providers asking for {@code FI_CONTEXT}/{@code FI_CONTEXT2} may scribble on) is the {@code void
 * *context} of the fi_write/fi_read, so a completion maps back to the slot by address arithmetic and nothing is
 * allocated per slice.
 *
 * <p>A caller thread fills a free slot ({@link EfaPeerConnection#prepare}) and hands it to the progress thread through
 * a queue; from then on only the progress thread touches it, until it is released to the free list.
 */
final class OpSlot {
    /** In the free list. */
    static final int FREE = 0;
    /** Prepared by a caller, waiting in the submission queue. */
    static final int READY = 1;
    /** The provider said -FI_EAGAIN; waiting in the retry queue. */
    static final int QUEUED = 2;
    /** Posted; the provider owns {@link #context} until the completion arrives. */
    static final int POSTED = 3;
    /** Posted, but the slice was already failed (deadline, close); released when the completion arrives. */
    static final int ABANDONED = 4;

    final int index;
    final MemorySegment context;

    volatile int state = FREE;

    Slice slice;
    EfaPeerConnection connection;
    boolean write;
    int endpoint;
    long fiAddr;
    long localAddress;
    MemorySegment desc = MemorySegment.NULL;
    long rmaAddress;
    long key;
    long length;
    long deadlineNanos;
    /** Bytes already moved by earlier chunks (only when a slice is longer than the provider's max_msg_size). */
    long done;
    /** Length of the chunk now posted. */
    long chunk;

    OpSlot(int index, MemorySegment context) {
        this.index = index;
        this.context = context;
    }

    void clear() {
        slice = null;
        connection = null;
        desc = MemorySegment.NULL;
        done = 0;
        chunk = 0;
        state = FREE;
    }
}
