package org.tent4j.transport.tcp;

import java.time.Duration;
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
    private final ConcurrentHashMap<LocalBuffer, Pin> pins = new ConcurrentHashMap<>();

    /** A buffer's pin count; one per registered buffer, not per request. */
    static final class Pin {
        final LocalBuffer buffer;
        private final AtomicInteger holders = new AtomicInteger();
        private volatile boolean retired;

        Pin(LocalBuffer buffer) {
            this.buffer = buffer;
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
    Pin acquire(LocalBuffer buffer, LocalMemory memory, long address, long length) {
        Pin pin = pins.get(buffer);
        if (pin == null) {
            pin = pins.computeIfAbsent(buffer, Pin::new);
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
        Pin pin = pins.computeIfAbsent(buffer, Pin::new);
        pin.retired = true;
        boolean idle = awaitIdle(pin, patience);
        if (!idle) {
            breakHolders.run();
            idle = awaitIdle(pin, patience);
        }
        return idle;
    }

    /** Forgets idle pins of buffers the engine no longer knows; retired pins stay until then so late requests fail. */
    void purge(LocalMemory memory) {
        for (Pin pin : pins.values()) {
            LocalBuffer b = pin.buffer;
            if (pin.idle() && memory.find(b.address(), Math.max(1, b.length())) != b) {
                pins.remove(b, pin);
            }
        }
    }

    int size() {
        return pins.size();
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
