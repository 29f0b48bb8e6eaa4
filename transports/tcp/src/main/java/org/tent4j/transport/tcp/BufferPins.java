package org.tent4j.transport.tcp;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.LocalMemory;

/**
 * Target-side reference counts on registered buffers, so that {@link TcpTransport#unregisterBuffer} can wait until no
 * socket reads into or writes from a buffer any more: the engine may free the memory once that call returns, and a
 * native read into freed memory would corrupt the process rather than fail a request.
 *
 * <p>A request pins its buffer after the access check and then checks again that the buffer is still registered;
 * a pin is dropped when Netty releases the {@link MemoryRegionBufs region buffer} that carries it. That covers both
 * orders in which an engine may unregister (remove from {@link LocalMemory} first, or call the transport first).
 */
final class BufferPins {
    /** Keyed by identity: a registration is one object for its life, and value hashing may allocate. */
    private final ConcurrentHashMap<Key, Pin> pins = new ConcurrentHashMap<>();
    /** Retired pins not yet forgotten; the periodic purge looks only at these. */
    private final Set<Pin> retired = ConcurrentHashMap.newKeySet();

    /** A buffer's pin count; one per registered buffer, not per request. */
    static final class Pin {
        final LocalBuffer buffer;
        private final Key key;
        private final AtomicInteger holders = new AtomicInteger();
        private volatile boolean retired;

        private Pin(Key key) {
            this.key = key;
            this.buffer = key.buffer;
        }

        void release() {
            holders.decrementAndGet();
        }

        boolean idle() {
            return holders.get() == 0;
        }
    }

    /**
     * Pins {@code buffer} for one access of {@code [address, address + length)}; {@code null} if the buffer is being
     * or has been unregistered (the caller answers ADDRESS_NOT_REGISTERED). Allocation-free once the buffer has a pin.
     */
    Pin acquire(LocalBuffer buffer, Pin hint, LocalMemory memory, long address, long length) {
        Pin pin = hint != null && hint.buffer == buffer ? hint : pins.computeIfAbsent(new Key(buffer), Pin::new);
        pin.holders.incrementAndGet();
        if (pin.retired || memory.find(address, length) != buffer) {
            pin.release();
            return null;
        }
        return pin;
    }

    /**
     * Stops new pins on {@code buffer} and waits up to {@code patience} for the current ones to go; if they do not,
     * runs {@code breakHolders} (closes the connections that may hold them) and waits once more.
     *
     * @return whether the buffer is idle
     */
    boolean retire(LocalBuffer buffer, Duration patience, Runnable breakHolders) {
        Pin pin = pins.computeIfAbsent(new Key(buffer), Pin::new);
        pin.retired = true;
        retired.add(pin);
        boolean idle = awaitIdle(pin, patience);
        if (!idle) {
            breakHolders.run();
            idle = awaitIdle(pin, patience);
        }
        return idle;
    }

    /**
     * Forgets retired pins once the engine no longer finds their buffer; until then they stay, so that a request that
     * passed its access check just before the buffer went still finds the pin retired.
     */
    void purge(LocalMemory memory) {
        if (retired.isEmpty()) {
            return;
        }
        for (Pin pin : retired) {
            LocalBuffer b = pin.buffer;
            if (pin.idle() && memory.find(b.address(), Math.max(1, b.length())) != b) {
                pins.remove(pin.key, pin);
                retired.remove(pin);
            }
        }
    }

    /** How many accesses hold {@code buffer} right now (for tests and diagnostics). */
    int holders(LocalBuffer buffer) {
        Pin pin = pins.get(new Key(buffer));
        return pin == null ? 0 : pin.holders.get();
    }

    private record Key(LocalBuffer buffer) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && k.buffer == buffer;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(buffer);
        }
    }

    private static boolean awaitIdle(Pin pin, Duration patience) {
        long deadline = System.nanoTime() + patience.toNanos();
        long pause = TimeUnit.MICROSECONDS.toNanos(100);
        while (!pin.idle()) {
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            // unregistering is rare and short; a growing sleep keeps this off the CPU without a condition variable
            LockSupport.parkNanos(pause);
            pause = Math.min(pause * 2, TimeUnit.MILLISECONDS.toNanos(10));
        }
        return true;
    }
}
