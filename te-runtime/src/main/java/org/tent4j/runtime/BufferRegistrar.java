package org.tent4j.runtime;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MemoryAllocator;

/**
 * Registers application and engine-allocated memory: adds it to {@link Registrations}, offers it to every running
 * transport (each says what peers need to reach it, or that it cannot serve it), and republishes the descriptor.
 * Unregistering withdraws it from the transports before its memory may be released.
 */
final class BufferRegistrar {
    private static final Logger log = LoggerFactory.getLogger(BufferRegistrar.class);

    private final EngineState state;
    private final Registrations registrations;
    private final TransportRegistry transports;
    private final DescriptorPublisher publisher;
    private final AtomicInteger ids = new AtomicInteger();

    BufferRegistrar(EngineState state, Registrations registrations, TransportRegistry transports, DescriptorPublisher publisher) {
        this.state = state;
        this.registrations = registrations;
        this.transports = transports;
        this.publisher = publisher;
    }

    RegisteredMemory register(MemorySegment memory, Location location, Permission permission, Map<String, String> backing,
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
        b.transportMask = mask;
        b.transportAttributes = Map.copyOf(attrs);
        publisher.republish();
        return b;
    }

    /** Memory from the first transport (in preference order) that can allocate at {@code location}, else the JVM's. */
    RegisteredMemory allocate(long size, Location location, Permission permission) {
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

    void unregister(RegisteredMemory memory) {
        if (!(memory instanceof RegisteredBuffer b) || !registrations.remove(b)) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "memory " + memory + " is not registered with engine '"
                    + state.segmentName() + "'");
        }
        withdraw(b);
        b.release();
        if (!state.isClosed()) {
            publisher.republish();
        }
    }

    private void withdraw(RegisteredBuffer b) {
        for (TransportSlot s : transports.slots()) {
            if (b.registeredWith(s.index())) {
                try {
                    s.transport().unregisterBuffer(b);
                } catch (RuntimeException e) {
                    log.warn("transport '{}' failed to unregister {}: {}", s.id(), b, e.getMessage());
                }
            }
        }
    }

    /** At close, after the transports closed (so none touches memory any more): releases every registration. */
    void releaseAll() {
        for (RegisteredBuffer b : registrations.all()) {
            registrations.remove(b);
            b.release();
        }
    }
}
