package org.tent4j.testkit.conformance;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

import org.tent4j.api.Location;
import org.tent4j.api.Permission;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.MemoryAllocator;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportProvider;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestTransportContext;

/**
 * One engine's worth of a transport without an engine: its context, the transport, memory allocated and registered
 * the way the engine does it, and the segment descriptor a peer would fetch.
 *
 * <p>Memory comes from the transport's own {@link MemoryAllocator} when it has one for host memory (shm can serve only
 * memory it allocated), else from a shared arena. Close order is the engine's: transport, then context, then memory,
 * so a transport that still touches registered memory after {@code close()} is caught here.
 */
final class TransportUnderTest implements AutoCloseable {
    static final String HOST = "127.0.0.1";

    final String segment;
    final String machineId;
    final String transportId;
    final TestTransportContext context;
    final Transport transport;
    private final Arena arena = Arena.ofShared();
    private final List<Region> regions = new CopyOnWriteArrayList<>();
    private final List<Runnable> releases = new CopyOnWriteArrayList<>();
    private final AtomicLong version = new AtomicLong();
    private volatile boolean transportClosed;

    TransportUnderTest(TransportProvider provider, String segment, String machineId, Map<String, String> options,
                       Duration transferTimeout) {
        this.segment = segment;
        this.machineId = machineId;
        this.transportId = provider.id();
        this.context = new TestTransportContext(segment, machineId, transportId, provider.options(), options,
                transferTimeout);
        try {
            this.transport = provider.create(context);
        } catch (RuntimeException e) {
            context.close();
            arena.close();
            throw e;
        }
    }

    /** Registers {@code size} bytes readable and writable by peers, with no guard zone after them. */
    Region allocate(long size, Permission permission) {
        return allocate(size, 0, permission);
    }

    /**
     * Allocates {@code size + guardAfter} bytes, fills them with {@code guard} bytes, and registers only the first
     * {@code size}: a transport that writes past a registered buffer changes the guard zone.
     */
    Region allocate(long size, long guardAfter, Permission permission) {
        long total = size + guardAfter;
        MemorySegment memory;
        Map<String, String> backing = Map.of();
        Optional<MemoryAllocator> allocator = transport.allocator().filter(a -> a.supports(Location.CPU));
        if (allocator.isPresent()) {
            MemoryAllocator.Allocation allocation = allocator.get().allocate(total, Location.CPU);
            memory = allocation.segment();
            backing = allocation.backing();
            releases.add(allocation.release());
        } else {
            memory = arena.allocate(total, 64);
        }
        memory.fill(TransportConformance.GUARD);
        TestLocalMemory.Buffer buffer = context.memory().register(memory.asSlice(0, size), permission, backing);
        Optional<Map<String, String>> attributes = transport.registerBuffer(buffer);
        if (attributes.isEmpty()) {
            throw new AssertionError("transport '" + transportId + "' declined (registerBuffer returned empty) "
                    + size + " bytes of host memory allocated " + (allocator.isPresent()
                    ? "by its own allocator()" : "from a shared Arena (it offers no allocator for cpu memory)")
                    + "; the kit cannot reach any buffer through it");
        }
        Region region = new Region(buffer, memory, buffer.describe(transportId, attributes.get()));
        regions.add(region);
        return region;
    }

    /** Unregisters like the engine does (transport first), keeping the memory mapped so stale peers can be tested. */
    void unregister(Region region) {
        regions.remove(region);
        transport.unregisterBuffer(region.buffer());
        context.memory().unregister(region.buffer());
    }

    /** What this side publishes now, as a peer would see it after fetching it. */
    SegmentDescriptor descriptor() {
        List<BufferDescriptor> buffers = new ArrayList<>();
        for (Region r : regions) {
            buffers.add(r.descriptor());
        }
        return SegmentDescriptor.builder().name(segment).machineId(machineId).host(HOST).controlPort(0)
                .transports(List.of(transportId))
                .transportAttributes(Map.of(transportId, transport.segmentAttributes())).buffers(buffers)
                .version(version.incrementAndGet()).build();
    }

    /** The descriptor as published from {@code machine} instead: for same-host checks. */
    SegmentDescriptor descriptorOnMachine(String machine) {
        SegmentDescriptor d = descriptor();
        return SegmentDescriptor.builder().name(d.name()).machineId(machine).host(d.host())
                .controlPort(d.controlPort()).transports(d.transports()).transportAttributes(d.transportAttributes())
                .buffers(d.buffers()).version(d.version()).build();
    }

    void closeTransport() {
        if (!transportClosed) {
            transportClosed = true;
            transport.close();
        }
    }

    boolean isTransportClosed() {
        return transportClosed;
    }

    @Override
    public void close() {
        AssertionError problem = null;
        try {
            closeTransport();
        } catch (RuntimeException e) {
            problem = new AssertionError("transport '" + transportId + "' of segment '" + segment
                    + "' threw from close(): " + e, e);
        }
        context.close();
        for (Runnable release : releases) {
            try {
                release.run();
            } catch (RuntimeException e) {
                problem = problem != null ? problem : new AssertionError("releasing memory from the allocator of '"
                        + transportId + "' after its transport closed threw " + e
                        + " (the engine releases allocations after closing transports, so this must work)", e);
            }
        }
        try {
            arena.close();
        } catch (IllegalStateException e) {
            problem = problem != null ? problem : new AssertionError("transport '" + transportId + "' of segment '"
                    + segment + "' still holds registered memory after close() returned (" + e.getMessage()
                    + "); close() must stop every thread that reads or writes registered memory", e);
        }
        if (problem != null) {
            throw problem;
        }
    }

    /**
     * A registered buffer and the memory around it.
     *
     * @param buffer     the registration (the first {@code buffer.length()} bytes of {@code memory})
     * @param memory     the whole allocation, guard zone included
     * @param descriptor how peers see the buffer
     */
    record Region(TestLocalMemory.Buffer buffer, MemorySegment memory, BufferDescriptor descriptor) {
        MemorySegment segment() {
            return buffer.segment();
        }

        long address() {
            return buffer.address();
        }

        long length() {
            return buffer.length();
        }

        /** The descriptor with another length or permission, as a lying or stale initiator would hold it. */
        BufferDescriptor forged(long length, Permission permission) {
            return BufferDescriptor.builder().address(descriptor.address()).length(length)
                    .location(descriptor.location()).permission(permission).transports(descriptor.transports())
                    .attributes(descriptor.attributes()).build();
        }
    }
}
