package org.tent4j.runtime.memory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.EngineState;
import org.tent4j.runtime.plugins.TransportRegistry;
import org.tent4j.runtime.plugins.TransportSlot;
import org.tent4j.spi.MemoryAllocator;

/**
 * Registers application and engine-allocated memory: adds it to {@link Registrations}, offers it to every running
 * transport (each says what peers need to reach it, or that it cannot serve it), and republishes the descriptor.
 * Unregistering withdraws it from the transports before its memory may be released.
 */
public final class BufferRegistrar {
    private static final Logger log = LoggerFactory.getLogger(BufferRegistrar.class);

    private final EngineState state;
    private final Registrations registrations;
    private final TransportRegistry transports;
    private final DescriptorPublisher publisher;
    private final AtomicInteger ids = new AtomicInteger();
    /** Unregistered, but not yet freed because something might still touch them. */
    private final Set<RegisteredBuffer> unreleased = ConcurrentHashMap.newKeySet();
    private final long fenceTimeoutNanos;

    public BufferRegistrar(EngineState state, Registrations registrations, TransportRegistry transports, DescriptorPublisher publisher,
                    long fenceTimeoutNanos) {
        this.fenceTimeoutNanos = fenceTimeoutNanos;
        this.state = state;
        this.registrations = registrations;
        this.transports = transports;
        this.publisher = publisher;
    }

    public RegisteredMemory register(MemorySegment memory, Location location, Permission permission, Map<String, String> backing,
                              Runnable release) {
        state.ensureOpen();
        if (!memory.isNative()) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "only off-heap (native) memory can be registered; got a heap segment of "
                    + memory.byteSize() + " bytes");
        }
        if (memory.byteSize() <= 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "cannot register an empty segment at 0x" + Long.toHexString(memory.address()));
        }
        RegisteredBuffer b = new RegisteredBuffer(ids.incrementAndGet(), memory, location, permission, backing, release);
        registrations.add(b);
        Map<String, Map<String, String>> attrs = new LinkedHashMap<>();
        long mask = 0;
        for (TransportSlot s : transports.slots()) {
            try {
                Optional<Map<String, String>> a = s.transport().registerBuffer(b);
                if (a.isPresent()) {
                    mask |= 1L << s.index();
                    attrs.put(s.id(), a.get());
                }
            } catch (RuntimeException e) {
                log.warn("transport '{}' could not register {}: {}", s.id(), b, e.getMessage());
            }
        }
        b.registered(mask, Map.copyOf(attrs));
        publisher.republish();
        return b;
    }

    /** Memory from the first transport (in preference order) that can allocate at {@code location}, else the JVM's. */
    public RegisteredMemory allocate(long size, Location location, Permission permission) {
        state.ensureOpen();
        if (size <= 0) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "allocation size must be > 0, got " + size);
        }
        for (int idx : transports.preference()) {
            Optional<MemoryAllocator> a = transports.slot(idx).transport().allocator();
            if (a.isPresent() && a.get().supports(location)) {
                MemoryAllocator.Allocation m = a.get().allocate(size, location);
                Location where = location.isAny() ? Location.CPU : location;
                try {
                    return register(m.segment(), where, permission, m.backing(), m.release());
                } catch (RuntimeException e) {
                    m.release().run();
                    throw e;
                }
            }
        }
        if (location.kindOrCpu() != MemoryKind.CPU) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "no transport or platform can allocate memory at " + location);
        }
        Arena arena = Arena.ofShared();
        MemorySegment seg = arena.allocate(size, 4096);
        try {
            return register(seg, location.isAny() ? Location.CPU : location, permission, Map.of(), arena::close);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Withdraws a registration and then frees engine-allocated memory, but only once nothing can touch it: new
     * requests on it fail at once; slices of this engine already posted on it are waited for (up to
     * {@code transfer.timeout}); every transport must confirm it fenced off peers' access. If either cannot be
     * guaranteed, the call fails naming what still holds the memory, the memory stays allocated, and calling
     * unregister again retries.
     */
    public void unregister(RegisteredMemory memory) {
        if (!(memory instanceof RegisteredBuffer b) || !(registrations.remove(b) || unreleased.contains(b))) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "memory " + memory + " is not registered with engine '"
                    + state.segmentName() + "'");
        }
        unreleased.add(b);
        if (!state.isClosed()) {
            publisher.republish();
        }
        List<String> holders = withdraw(b);
        long inFlight;
        try {
            inFlight = b.retire(fenceTimeoutNanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferException(ErrorCode.CANCELED, "interrupted while unregistering " + b + "; its memory stays allocated");
        }
        if (inFlight > 0) {
            holders.add(inFlight + " slice(s) of this engine still posted on it after " + fenceTimeoutNanos / 1_000_000 + " ms");
        }
        if (!holders.isEmpty()) {
            throw new TransferException(ErrorCode.TIMEOUT, "cannot unregister " + b + " safely: " + String.join("; ", holders)
                    + ". It no longer accepts requests; its memory stays allocated; call unregister again to retry");
        }
        unreleased.remove(b);
        b.release();
    }

    /** Asks every transport that served {@code b} to let go of it; returns those that could not confirm. */
    private List<String> withdraw(RegisteredBuffer b) {
        List<String> failed = new ArrayList<>();
        for (TransportSlot s : transports.slots()) {
            if (b.registeredWith(s.index()) && !b.withdrawnFrom(s.index())) {
                try {
                    s.transport().unregisterBuffer(b);
                    b.markWithdrawn(s.index());
                } catch (RuntimeException e) {
                    log.warn("transport '{}' could not release {}: {}", s.id(), b, e.getMessage());
                    failed.add("transport '" + s.id() + "' could not fence it off: " + e.getMessage());
                }
            }
        }
        return failed;
    }

    /**
     * At close, after the transports closed (each promised that none of its threads touches memory any more): frees
     * every registration, except one a transport that failed to close may still touch, or one a slice is still
     * posted on. Those are left allocated (a leak, logged) rather than freed under a transport's feet.
     */
    public void releaseAll(long transportsNotClosedMask) {
        List<RegisteredBuffer> all = new ArrayList<>(List.of(registrations.all()));
        all.addAll(unreleased);
        for (RegisteredBuffer b : all) {
            registrations.remove(b);
            unreleased.remove(b);
            if ((b.transportMask() & transportsNotClosedMask) != 0 || b.pins() > 0) {
                log.error("{} left allocated at close: {}", b, b.pins() > 0 ? b.pins() + " slice(s) still posted on it"
                        : "a transport serving it failed to close");
                continue;
            }
            b.release();
        }
    }
}
