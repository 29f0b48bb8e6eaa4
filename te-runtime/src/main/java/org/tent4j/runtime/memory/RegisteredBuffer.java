package org.tent4j.runtime.memory;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.spi.LocalBuffer;

/** One registration: what the application holds ({@link RegisteredMemory}) and what transports see ({@link LocalBuffer}). */
public final class RegisteredBuffer implements RegisteredMemory, LocalBuffer {
    private final int id;
    private final MemorySegment segment;
    private final long address;
    private final long length;
    private final Location location;
    private final Permission permission;
    private final Map<String, String> backing;
    private final Runnable release;
    /** Bit i set: transport with index i registered this buffer. Written once before the buffer is published. */
    private long transportMask;
    /** What each transport published for this buffer, by transport id. */
    private Map<String, Map<String, String>> transportAttributes = Map.of();
    /**
     * Slices of this engine's tasks posted on this buffer and not yet settled: a transport may be touching it. An
     * adder, since every submitting and completing thread updates it and only unregister reads it.
     */
    private final LongAdder pins = new LongAdder();
    /** Bit i set: transport i confirmed it let go of this buffer (unregister retries only the others). */
    private long withdrawnMask;
    /** Set by unregister: no new slice may be posted on it. */
    private volatile boolean retired;

    RegisteredBuffer(int id, MemorySegment segment, Location location, Permission permission,
                     Map<String, String> backing, Runnable release) {
        this.id = id;
        this.segment = segment;
        this.address = segment.address();
        this.length = segment.byteSize();
        this.location = location;
        this.permission = permission;
        this.backing = backing;
        this.release = release;
    }

    @Override public int id() { return id; }
    @Override public MemorySegment segment() { return segment; }
    @Override public long address() { return address; }
    @Override public long length() { return length; }
    @Override public Location location() { return location; }
    @Override public Permission permission() { return permission; }
    @Override public Map<String, String> backing() { return backing; }
    @Override public boolean engineAllocated() { return release != null; }

    synchronized boolean withdrawnFrom(int transportIndex) {
        return (withdrawnMask & (1L << transportIndex)) != 0;
    }

    synchronized void markWithdrawn(int transportIndex) {
        withdrawnMask |= 1L << transportIndex;
    }

    /** Records which transports registered this buffer and what they published; called once, before it is published. */
    void registered(long mask, Map<String, Map<String, String>> attributes) {
        this.transportMask = mask;
        this.transportAttributes = attributes;
    }

    long transportMask() {
        return transportMask;
    }

    Map<String, Map<String, String>> transportAttributes() {
        return transportAttributes;
    }

    public boolean registeredWith(int transportIndex) {
        return (transportMask & (1L << transportIndex)) != 0;
    }

    /**
     * Marks a slice about to be handed to a transport; false if the buffer is being unregistered (then nothing was
     * pinned). Pin first, then check: unregister retires first, then counts, so one of them sees the other.
     */
    public boolean pin() {
        pins.increment();
        if (retired) {
            unpin();
            return false;
        }
        return true;
    }

    /** Whether unregister has begun: no slice may be posted on it any more. */
    public boolean retired() {
        return retired;
    }

    /** A slice on this buffer settled: its transport no longer touches it. */
    public void unpin() {
        pins.decrement();
        if (retired) {
            synchronized (this) {
                notifyAll();
            }
        }
    }

    /** Exact only when no slice is being pinned at the same time (after {@link #retire}, or at close). */
    long pins() {
        return pins.sum();
    }

    /** Refuses new slices and waits up to {@code timeoutNanos} for the posted ones to settle; returns those left. */
    long retire(long timeoutNanos) throws InterruptedException {
        retired = true;
        long end = System.nanoTime() + timeoutNanos;
        synchronized (this) {
            for (long left = timeoutNanos; pins.sum() > 0 && left > 0; left = end - System.nanoTime()) {
                java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }
        return pins.sum();
    }

    void release() {
        if (release != null) {
            release.run();
        }
    }

    @Override
    public String toString() {
        return "buffer#" + id + "[0x" + Long.toHexString(address) + ", +" + length + ", " + location + ", " + permission + "]";
    }
}
