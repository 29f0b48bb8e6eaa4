package org.tent4j.transport.nvlink;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.MemoryAllocator;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.platform.DeviceInfo;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DeviceStream;

/**
 * One engine's nvlink transport. The initiator does all the work: it maps the peer's exported device memory into this
 * process (once per remote buffer, cached on the connection) and copies with a device stream; the peer's CPU is not
 * involved. So the initiator enforces the peer's published permission itself, and exporters publish handles only for
 * buffers peers may touch.
 *
 * <p>Slices wait in a bounded queue of preallocated jobs and are copied by up to {@code lanes} lanes, each a task on
 * the engine's workers that owns one stream per device it has used; posting allocates nothing.
 */
final class NvlinkTransport implements Transport {
    private static final Logger LOG = LoggerFactory.getLogger(NvlinkTransport.class);
    static final String PID = "pid";
    static final String PLATFORMS = "platforms";

    private final TransportContext context;
    private final long pid = ProcessHandle.current().pid();
    private final boolean sameProcessDirect;
    /** Open platforms by index; the index names a platform in lanes' stream tables. */
    private final List<DevicePlatform> platforms = new ArrayList<>();
    private final List<String> platformIds = new ArrayList<>();
    private final Map<MemoryKind, Integer> platformByKind = new EnumMap<>(MemoryKind.class);
    private final ArrayBlockingQueue<Job> freeJobs;
    private final ArrayBlockingQueue<Job> pendingJobs;
    private final ArrayBlockingQueue<Lane> idleLanes;
    private final List<Lane> lanes = new ArrayList<>();
    private final Set<NvlinkConnection> connections = ConcurrentHashMap.newKeySet();
    private final int queueDepth;
    private volatile boolean closed;

    /** A slice waiting for a lane, with the connection it was posted on; recycled through {@link #freeJobs}. */
    private static final class Job {
        NvlinkConnection connection;
        Slice slice;
    }

    /**
     * @param opened      the engine's device platforms ({@link TransportContext#devicePlatforms()}); the engine owns
     *                    and closes them, this transport only uses them
     * @param platformIds the platform id peers know each memory kind by ({@code cuda}, {@code rocm}, {@code ascend})
     */
    NvlinkTransport(TransportContext context, List<DevicePlatform> opened, Map<MemoryKind, String> platformIds) {
        this.context = context;
        this.sameProcessDirect = context.options().getBoolean(NvlinkTransportProvider.SAME_PROCESS_DIRECT.name());
        int laneCount = Math.max(1, context.options().getInt(NvlinkTransportProvider.LANES.name()));
        this.queueDepth = Math.max(1, context.options().getInt(NvlinkTransportProvider.QUEUE_DEPTH.name()));
        for (DevicePlatform platform : opened) {
            if (platformByKind.putIfAbsent(platform.memoryKind(), platforms.size()) == null) {
                platforms.add(platform);
                this.platformIds.add(platformIds.getOrDefault(platform.memoryKind(), platform.memoryKind().prefix()));
            }
        }
        freeJobs = new ArrayBlockingQueue<>(queueDepth);
        pendingJobs = new ArrayBlockingQueue<>(queueDepth);
        for (int i = 0; i < queueDepth; i++) {
            freeJobs.add(new Job());
        }
        idleLanes = new ArrayBlockingQueue<>(laneCount);
        for (int i = 0; i < laneCount; i++) {
            Lane lane = new Lane(i);
            lanes.add(lane);
            idleLanes.add(lane);
        }
        LOG.debug("nvlink transport for '{}': platforms {}, {} lanes, queue depth {}", context.segmentName(),
                platformIds, laneCount, queueDepth);
    }

    @Override
    public String id() {
        return NvlinkTransportProvider.ID;
    }

    /** The paths of the platforms this transport opened, narrower than the provider's when a platform module is unusable. */
    @Override
    public Optional<TransportCapabilities> capabilities() {
        return Optional.of(NvlinkTransportProvider.capabilities(platformByKind.keySet()));
    }

    @Override
    public Map<String, String> segmentAttributes() {
        return Map.of(PID, Long.toString(pid), PLATFORMS, String.join(",", platformIds));
    }

    /** The index of the platform serving {@code kind}, or -1. */
    int platformIndex(MemoryKind kind) {
        Integer i = platformByKind.get(kind);
        return i == null ? -1 : i;
    }

    DevicePlatform platform(int index) {
        return platforms.get(index);
    }

    String platformId(int index) {
        return platformIds.get(index);
    }

    @Override
    public Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
        MemoryKind kind = buffer.location().kindOrCpu();
        if (kind == MemoryKind.CPU) {
            // host memory is reachable only by peers in this process, and as the local side of a copy
            return Optional.of(Map.of());
        }
        int index = platformIndex(kind);
        if (index < 0) {
            return Optional.empty();
        }
        if (buffer.permission() == Permission.LOCAL_ONLY) {
            // peers map exported handles without asking this engine, so a buffer they may not touch is never exported
            return Optional.of(Map.of());
        }
        DevicePlatform platform = platforms.get(index);
        int device = buffer.location().index();
        try {
            byte[] handle = platform.exportIpcHandle(buffer.segment());
            return Optional.of(new IpcAttributes(handle, platformIds.get(index), device, pciBusId(platform, device)).encode());
        } catch (TransferException e) {
            LOG.warn("nvlink cannot export buffer {} [0x{}, +{}) on {}: {}; peers will use another transport for it",
                    buffer.id(), Long.toHexString(buffer.address()), buffer.length(), buffer.location(), e.getMessage());
            return Optional.empty();
        }
    }

    private static String pciBusId(DevicePlatform platform, int device) {
        for (DeviceInfo d : platform.devices()) {
            if (d.ordinal() == device) {
                return d.pciBusId();
            }
        }
        return "";
    }

    /** The local ordinal of the exporter's device: by PCI bus id when both know it, else the exporter's ordinal. */
    static int localOrdinal(DevicePlatform platform, IpcAttributes remote) {
        if (!remote.pciBusId().isEmpty()) {
            for (DeviceInfo d : platform.devices()) {
                if (d.pciBusId().equalsIgnoreCase(remote.pciBusId())) {
                    return d.ordinal();
                }
            }
        }
        return remote.device();
    }

    @Override
    public Optional<MemoryAllocator> allocator() {
        return Optional.of(new DeviceAllocator());
    }

    /** Device memory for engine-owned buffers, zeroed as the SPI requires. */
    private final class DeviceAllocator implements MemoryAllocator {
        private static final long ZERO_CHUNK = 1 << 20;

        @Override
        public boolean supports(Location location) {
            if (location.isAny() || !location.kind().isDevice()) {
                return false;
            }
            int index = platformIndex(location.kind());
            return index >= 0 && location.index() < platforms.get(index).devices().size();
        }

        @Override
        public Allocation allocate(long size, Location location) {
            if (!supports(location)) {
                throw new TransferException(ErrorCode.INVALID_ARGUMENT, "nvlink cannot allocate at " + location
                        + " (platforms: " + platformIds + ")");
            }
            int index = platformIndex(location.kind());
            DevicePlatform platform = platforms.get(index);
            MemorySegment memory = platform.allocate(location.index(), size);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment zeros = arena.allocate(Math.min(size, ZERO_CHUNK));
                for (long off = 0; off < size; off += zeros.byteSize()) {
                    long n = Math.min(zeros.byteSize(), size - off);
                    platform.copy(memory.asSlice(off, n), zeros, n);
                }
            } catch (RuntimeException e) {
                platform.free(memory);
                throw e;
            }
            return Allocation.builder(memory, () -> platform.free(memory)).backing(Map.of(
                    IpcAttributes.PLATFORM, platformIds.get(index),
                    IpcAttributes.DEVICE, Integer.toString(location.index()))).build();
        }
    }

    @Override
    public PeerConnection connect(SegmentDescriptor peer) {
        ensureOpen();
        if (!context.machineId().equals(peer.machineId())) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "nvlink needs both segments on one machine:"
                    + " segment '" + peer.name() + "' is on machine '" + peer.machineId() + "', this engine on '"
                    + context.machineId() + "'");
        }
        if (!peer.transports().contains(NvlinkTransportProvider.ID)) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "segment '" + peer.name()
                    + "' does not run nvlink (it runs " + peer.transports() + ")");
        }
        String peerPid = peer.transportAttributes(NvlinkTransportProvider.ID).get(PID);
        boolean sameProcess = peerPid != null && peerPid.equals(Long.toString(pid));
        NvlinkConnection c = new NvlinkConnection(this, peer, sameProcess && sameProcessDirect, context.clock());
        connections.add(c);
        return c;
    }

    void forget(NvlinkConnection connection) {
        connections.remove(connection);
    }

    /** Queues a slice for a lane. Never blocks: a full queue fails the slice as TOO_MANY_REQUESTS. */
    void submit(NvlinkConnection connection, Slice slice) {
        if (closed) {
            slice.fail(ErrorCode.ENGINE_CLOSED, "nvlink transport of '" + context.segmentName() + "' is closed");
            return;
        }
        Job job = freeJobs.poll();
        if (job == null) {
            slice.fail(ErrorCode.TOO_MANY_REQUESTS, "nvlink queue full: " + queueDepth + " slices wait for a lane"
                    + " (transports.nvlink.queue_depth)");
            return;
        }
        job.connection = connection;
        job.slice = slice;
        pendingJobs.add(job);
        wakeLane();
    }

    private void wakeLane() {
        Lane lane = idleLanes.poll();
        if (lane != null) {
            try {
                context.workers().execute(lane);
            } catch (RejectedExecutionException e) {
                idleLanes.add(lane);
                failPending(ErrorCode.ENGINE_CLOSED, "nvlink: the engine's workers refused work (" + e.getMessage() + ")");
            }
        }
    }

    private void failPending(ErrorCode code, String message) {
        Job job;
        while ((job = pendingJobs.poll()) != null) {
            Slice s = job.slice;
            job.connection = null;
            job.slice = null;
            freeJobs.add(job);
            s.fail(code, message);
        }
    }

    /**
     * A copy lane: while slices wait it takes them one by one and copies each on a stream of its own, so lanes never
     * share a stream; when the queue is empty it goes back to the idle set.
     */
    final class Lane implements Runnable {
        private final int number;
        /** Streams by platform index, then device ordinal; made on first use by this lane's thread of the moment. */
        private final DeviceStream[][] streams = new DeviceStream[platforms.size()][];

        Lane(int number) {
            this.number = number;
        }

        @Override
        public void run() {
            for (;;) {
                Job job;
                while ((job = pendingJobs.poll()) != null) {
                    NvlinkConnection connection = job.connection;
                    Slice slice = job.slice;
                    job.connection = null;
                    job.slice = null;
                    freeJobs.add(job);
                    connection.copy(slice, this);
                }
                idleLanes.add(this);
                // a slice queued after the last poll but before this lane went idle must not be stranded
                if (pendingJobs.isEmpty()) {
                    return;
                }
                Lane next = idleLanes.poll();
                if (next == null) {
                    return;
                }
                if (next != this) {
                    try {
                        context.workers().execute(next);
                    } catch (RejectedExecutionException e) {
                        idleLanes.add(next);
                        failPending(ErrorCode.ENGINE_CLOSED, "nvlink: the engine's workers refused work");
                    }
                    return;
                }
            }
        }

        DeviceStream stream(int platformIndex, int device) {
            DeviceStream[] byDevice = streams[platformIndex];
            if (byDevice == null || device >= byDevice.length) {
                DeviceStream[] grown = new DeviceStream[Math.max(device + 1,
                        platforms.get(platformIndex).devices().size())];
                if (byDevice != null) {
                    System.arraycopy(byDevice, 0, grown, 0, byDevice.length);
                }
                streams[platformIndex] = byDevice = grown;
            }
            DeviceStream s = byDevice[device];
            if (s == null) {
                s = platforms.get(platformIndex).createStream(device);
                byDevice[device] = s;
            }
            return s;
        }

        void closeStreams() {
            for (DeviceStream[] byDevice : streams) {
                if (byDevice == null) {
                    continue;
                }
                for (DeviceStream s : byDevice) {
                    if (s != null) {
                        try {
                            s.close();
                        } catch (RuntimeException e) {
                            LOG.warn("nvlink lane {}: closing a stream failed: {}", number, e.getMessage());
                        }
                    }
                }
            }
        }
    }

    boolean isClosed() {
        return closed;
    }

    String segmentName() {
        return context.segmentName();
    }

    private void ensureOpen() {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "nvlink transport of '" + context.segmentName()
                    + "' is closed");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        failPending(ErrorCode.ENGINE_CLOSED, "nvlink transport of '" + context.segmentName() + "' closed");
        // a lane mid-copy still uses its streams and mappings; wait for every lane to go idle before releasing them
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (idleLanes.size() < lanes.size() && System.nanoTime() < deadline) {
            failPending(ErrorCode.ENGINE_CLOSED, "nvlink transport of '" + context.segmentName() + "' closed");
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        if (idleLanes.size() < lanes.size()) {
            LOG.warn("nvlink: {} lane(s) still copying after 30 s; releasing streams and mappings anyway",
                    lanes.size() - idleLanes.size());
        }
        for (NvlinkConnection c : List.copyOf(connections)) {
            c.close();
        }
        for (Lane lane : lanes) {
            lane.closeStreams();
        }
        // the platforms are the engine's: it closes them after every transport
    }

}
