package org.tent4j.transport.tcp;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

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
        /** Threads in {@link #awaitIdle}; written under this pin's monitor. */
        private volatile int waiters;

        private Pin(Key key) {
            this.key = key;
            this.buffer = key.buffer;
        }

        void release() {
            // a waiter registers before it checks the count, so one of the two sees the other
            if (holders.decrementAndGet() == 0 && waiters > 0) {
                synchronized (this) {
                    notifyAll();
                }
            }
        }

        /**
         * Waits until no access holds this buffer, woken by the release that ends the last one (an answer's bytes can
         * reach its reader before the socket write that sent them returns and releases the view).
         */
        synchronized boolean awaitIdle(Duration patience) {
            long deadline = System.nanoTime() + patience.toNanos();
            waiters++;
            try {
                while (!idle()) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                }
                return true;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return idle();
            } finally {
                waiters--;
            }
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
        if (pin.retired) {
            return null; // once retired, a request does not even count itself in for a moment
        }
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
        boolean idle = pin.awaitIdle(patience);
        if (!idle) {
            breakHolders.run();
            idle = pin.awaitIdle(patience);
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

    /** Accesses holding any buffer now: 0 whenever no request is being served, so one that stays above is a leak. */
    long held() {
        long n = 0;
        for (Pin p : pins.values()) {
            n += p.holders.get();
        }
        return n;
    }

    /** How many accesses hold {@code buffer} right now (for tests and diagnostics). */
    int holders(LocalBuffer buffer) {
        Pin pin = pins.get(new Key(buffer));
        return pin == null ? 0 : pin.holders.get();
    }

    /**
     * Waits up to {@code patience} for the accesses holding {@code buffer} to end; how many still hold it. An answer's
     * bytes can reach its reader before the write that sent them returns, so a peer that saw its answer may still
     * find the buffer held for a moment.
     */
    int awaitReleased(LocalBuffer buffer, Duration patience) {
        Pin pin = pins.get(new Key(buffer));
        if (pin == null) {
            return 0;
        }
        pin.awaitIdle(patience);
        return pin.holders.get();
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
}
