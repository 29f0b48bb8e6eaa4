package org.tent4j.testkit.transport;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.Slice;

/**
 * A slice for driving a transport directly. {@link #result()} completes normally on {@link #complete()} and
 * exceptionally with a {@link TransferException} on {@link #fail}; a second completion is recorded in
 * {@link #completions()} so tests can assert the exactly-once contract.
 */
public final class TestSlice implements Slice {
    private final Opcode opcode;
    private final LocalBuffer local;
    private final long localOffset;
    private final BufferDescriptor remote;
    private final long remoteAddress;
    private final long length;
    private final long deadlineNanos;
    private volatile int path;
    private final CompletableFuture<Void> result = new CompletableFuture<>();
    private final AtomicInteger completions = new AtomicInteger();

    /**
     * A slice on path 0.
     *
     * @param opcode        READ or WRITE
     * @param local         the local registered buffer
     * @param localOffset   offset of the slice in it
     * @param remote        the target buffer, as the peer published it
     * @param remoteAddress address in the peer's address space
     * @param length        bytes
     * @param deadlineNanos absolute {@link System#nanoTime()} deadline
     */
    public TestSlice(Opcode opcode, LocalBuffer local, long localOffset, BufferDescriptor remote, long remoteAddress,
                     long length, long deadlineNanos) {
        this.opcode = opcode;
        this.local = local;
        this.localOffset = localOffset;
        this.remote = remote;
        this.remoteAddress = remoteAddress;
        this.length = length;
        this.deadlineNanos = deadlineNanos;
    }

    @Override public Opcode opcode() { return opcode; }
    @Override public LocalBuffer localBuffer() { return local; }
    @Override public long localOffset() { return localOffset; }
    @Override public BufferDescriptor remoteBuffer() { return remote; }
    @Override public long remoteAddress() { return remoteAddress; }
    @Override public long length() { return length; }
    @Override public long deadlineNanos() { return deadlineNanos; }
    @Override public int path() { return path; }

    /**
     * Posts the slice on another path than 0, as the runtime says which path to use.
     *
     * @param p the path's index in its connection
     * @return this slice
     */
    public TestSlice onPath(int p) {
        this.path = p;
        return this;
    }

    @Override
    public void complete() {
        completions.incrementAndGet();
        result.complete(null);
    }

    @Override
    public void fail(ErrorCode code, String message) {
        completions.incrementAndGet();
        result.completeExceptionally(new TransferException(code, message));
    }

    /**
     * Completes normally on {@link #complete()} and exceptionally with a {@link TransferException} on {@link #fail}.
     *
     * @return the future of the first settlement
     */
    public CompletableFuture<Void> result() {
        return result;
    }

    /**
     * How many times the transport settled the slice; the contract says exactly once.
     *
     * @return the count so far
     */
    public int completions() {
        return completions.get();
    }
}
