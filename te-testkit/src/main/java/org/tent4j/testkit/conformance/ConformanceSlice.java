package org.tent4j.testkit.conformance;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.Slice;

/**
 * A slice as the runtime would post it, on a chosen path, that records every settlement. The first settlement
 * completes {@link #result()}; later ones are kept (with the thread that made them) so a test can say precisely how
 * the exactly-once contract was broken rather than hang or pass by accident.
 */
public final class ConformanceSlice implements Slice {
    private final Opcode opcode;
    private final LocalBuffer local;
    private final long localOffset;
    private final BufferDescriptor remote;
    private final long remoteAddress;
    private final long length;
    private final int path;
    private final long deadlineNanos;
    private final AtomicInteger settlements = new AtomicInteger();
    private final List<String> settledBy = new ArrayList<>();
    private final CompletableFuture<Outcome> result = new CompletableFuture<>();

    /**
     * A slice that records how the transport settles it.
     *
     * @param opcode        READ or WRITE
     * @param local         the local registered buffer
     * @param localOffset   offset of the slice in it
     * @param remote        the target buffer, as the peer published it
     * @param remoteAddress address in the peer's address space
     * @param length        bytes
     * @param path          the connection path to use
     * @param deadlineNanos absolute {@link System#nanoTime()} deadline
     */
    public ConformanceSlice(Opcode opcode, LocalBuffer local, long localOffset, BufferDescriptor remote,
                            long remoteAddress, long length, int path, long deadlineNanos) {
        this.opcode = opcode;
        this.local = local;
        this.localOffset = localOffset;
        this.remote = remote;
        this.remoteAddress = remoteAddress;
        this.length = length;
        this.path = path;
        this.deadlineNanos = deadlineNanos;
    }

    @Override public Opcode opcode() { return opcode; }
    @Override public LocalBuffer localBuffer() { return local; }
    @Override public long localOffset() { return localOffset; }
    @Override public BufferDescriptor remoteBuffer() { return remote; }
    @Override public long remoteAddress() { return remoteAddress; }
    @Override public long length() { return length; }
    @Override public int path() { return path; }
    @Override public long deadlineNanos() { return deadlineNanos; }

    @Override
    public void complete() {
        settle(Outcome.COMPLETED, "complete()");
    }

    @Override
    public void fail(ErrorCode code, String message) {
        // a null code would read as success to a careless caller; report it as the transport bug it is
        Outcome outcome = code == null
                ? new Outcome(ErrorCode.INTERNAL, "transport called fail() with a null ErrorCode: " + message)
                : new Outcome(code, message);
        settle(outcome, "fail(" + code + ", " + message + ")");
    }

    private void settle(Outcome outcome, String how) {
        settlements.incrementAndGet();
        synchronized (settledBy) {
            settledBy.add(how + " on thread '" + Thread.currentThread().getName() + "'");
        }
        result.complete(outcome);
    }

    /**
     * Completes with the first settlement.
     *
     * @return the future; it never completes exceptionally
     */
    public CompletableFuture<Outcome> result() {
        return result;
    }

    /**
     * How many times the transport settled this slice; the contract says exactly 1.
     *
     * @return the count so far
     */
    public int settlements() {
        return settlements.get();
    }

    /**
     * Each settlement, in order, with its thread: for failure messages.
     *
     * @return one entry per settlement, or "never settled"
     */
    public String settlementHistory() {
        synchronized (settledBy) {
            return settledBy.isEmpty() ? "never settled" : String.join("; then ", settledBy);
        }
    }

    @Override
    public String toString() {
        return opcode + " of " + length + " bytes on path " + path + ": local buffer " + local.id() + " offset "
                + localOffset + ", remote 0x" + Long.toHexString(remoteAddress) + " in buffer [0x"
                + Long.toHexString(remote.address()) + ", +" + remote.length() + ")";
    }

    /**
     * How a slice settled.
     *
     * @param code    {@code null} when it completed
     * @param message the transport's message on failure
     */
    public record Outcome(ErrorCode code, String message) {
        static final Outcome COMPLETED = new Outcome(null, null);

        /**
         * Whether the slice completed.
         *
         * @return {@code true} when {@code code} is {@code null}
         */
        public boolean completed() {
            return code == null;
        }

        @Override
        public String toString() {
            return code == null ? "completed" : "failed with " + code + ": " + message;
        }
    }
}
