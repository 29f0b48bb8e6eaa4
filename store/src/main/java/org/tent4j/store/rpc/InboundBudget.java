package org.tent4j.store.rpc;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One process-wide byte budget for messages the master has received in part and not yet handed to a handler.
 *
 * <p>Why here and not in HTTP/2 flow control: gRPC's deframer ({@code io.grpc.internal.MessageDeframer}) moves a
 * message's bytes out of the stream's flow-controlled buffer into its own buffer as they arrive, returning the window
 * to the peer each time, and keeps them there until the whole message (up to the declared length, at most
 * {@link MasterServer#MAX_MESSAGE_BYTES}) is in. The window therefore bounds only bytes no handler has asked for; a
 * peer that declares 64 MiB and sends it slowly on many streams makes the master hold all of it. The deframer
 * reports each piece it takes ({@link ServerStreamTracer#inboundWireSize}), the end of each message
 * ({@link ServerStreamTracer#inboundMessageRead}, just before the handler gets it) and the stream's end
 * ({@link ServerStreamTracer#streamClosed}, also when the connection dies): exactly the life of a partial message.
 *
 * <p>Refusal: the exception thrown from {@code inboundWireSize} leaves the deframer the way an over-size message
 * does: gRPC sends the status in trailers, resets the stream and frees what it held. Only that stream ends; the
 * connection and its other calls go on.
 *
 * <p>Each stream's partial message may hold {@link #FREE_BYTES} without charge, so a small call (the common case,
 * and every call an honest client needs to keep working) goes through even while others have spent the budget.
 * What the budget does not cover is computed, not chosen by a peer: per stream, that allowance plus one flow-control
 * window ({@link MasterServer#FLOW_CONTROL_WINDOW}) of bytes the handler has not asked for yet.
 */
final class InboundBudget extends ServerStreamTracer.Factory {
    private static final Logger LOG = LoggerFactory.getLogger(InboundBudget.class);
    /** What each stream's current partial message may hold without charge. */
    static final long FREE_BYTES = 16 << 10;
    /**
     * Charged per piece the deframer takes, besides its bytes: each is a retained buffer (at least a 64-byte pooled
     * one) and a few small objects, so a peer sending one-byte DATA frames pays for what it makes the master keep.
     */
    static final long PIECE_COST = 256;

    private final long limit;
    private final AtomicLong held = new AtomicLong();
    private final LongAdder refused;

    InboundBudget(long limit, RpcStats stats) {
        if (limit < 1) {
            throw new IllegalArgumentException("inbound bytes budget must be >= 1: " + limit);
        }
        this.limit = limit;
        this.refused = stats.inboundRefused;
        stats.inboundBudget = limit;
        stats.inboundHeld = held::get;
    }

    @Override
    public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
        return new Stream(fullMethodName);
    }

    long held() {
        return held.get();
    }

    long refused() {
        return refused.sum();
    }

    private boolean charge(long bytes) {
        while (true) {
            long now = held.get();
            if (now + bytes > limit) {
                return false;
            }
            if (held.compareAndSet(now, now + bytes)) {
                return true;
            }
        }
    }

    /** The cost of one stream's message in progress; the deframer's thread and the stream's end both reach it. */
    private final class Stream extends ServerStreamTracer {
        private final String method;
        // guarded by this
        private long partial;
        private long charged;

        Stream(String method) {
            this.method = method;
        }

        @Override
        public void inboundWireSize(long bytes) {
            long after;
            synchronized (this) {
                partial += bytes + PIECE_COST;
                long due = Math.max(0, partial - FREE_BYTES) - charged;
                if (due <= 0 || charge(due)) {
                    charged += Math.max(0, due);
                    return;
                }
                after = partial;
                endMessage();
            }
            refused.increment();
            long total = refused.sum();
            if (Long.bitCount(total) == 1) {
                LOG.warn("refused a {} message at {} bytes: the inbound bytes budget ({} bytes) is spent by partly "
                        + "received messages ({} refused so far)", method, after, limit, total);
            }
            throw Status.RESOURCE_EXHAUSTED.withDescription("the store master's inbound bytes budget (" + limit
                    + " bytes, --inbound-bytes-budget) is spent by partly received messages (" + held.get()
                    + " bytes held): " + method + " message refused at " + after + " bytes").asRuntimeException();
        }

        @Override
        public synchronized void inboundMessageRead(int seqNo, long optionalWireSize, long optionalUncompressedSize) {
            endMessage();
        }

        @Override
        public synchronized void streamClosed(Status status) {
            endMessage();
        }

        private void endMessage() {
            held.addAndGet(-charged);
            charged = 0;
            partial = 0;
        }
    }
}
