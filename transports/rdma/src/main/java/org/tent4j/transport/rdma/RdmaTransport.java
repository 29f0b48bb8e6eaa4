package org.tent4j.transport.rdma;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Permission;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TimeSource;
import org.tent4j.spi.TransportContext;

/**
 * RDMA RC one-sided READ/WRITE over libibverbs. Per device: a verbs context, PD, CQ and completion poller
 * ({@link RdmaDevice}). Every host buffer is registered on every device, and its rkeys are published in device order.
 * {@link #connect} creates RC QPs and exchanges them with the peer over the control plane ({@code rdma.connect},
 * {@link HandshakeMessage}); this transport serves the same service for peers connecting to it.
 */
final class RdmaTransport implements Transport {
    static final String ID = "rdma";
    static final String CONNECT_SERVICE = "rdma.connect";
    /** Target-side QP sets kept per connecting segment; older ones are destroyed beyond this (crashed initiators). */
    static final int MAX_ACCEPTED_PER_PEER = 64;
    private static final Logger LOG = LoggerFactory.getLogger(RdmaTransport.class);
    private static final Duration DISCONNECT_TIMEOUT = Duration.ofSeconds(2);

    private final TransportContext context;
    private final RdmaOptions options;
    private final List<RdmaDevice> devices = new ArrayList<>();
    private final Map<LocalBuffer, LocalRegistration> registrations = new ConcurrentHashMap<>();
    private volatile RangeTable<LocalRegistration> localTable = RangeTable.empty();
    private final Set<RdmaPeerConnection> connections = ConcurrentHashMap.newKeySet();
    /** QPs created for initiators, keyed by caller segment and connection id; guarded by itself. */
    private final LinkedHashMap<String, Accepted> accepted = new LinkedHashMap<>();
    private final AtomicLong connectionIds = new AtomicLong(ThreadLocalRandom.current().nextLong() & 0xFFFF_FFFFL);
    private volatile boolean closed;

    /** A host buffer registered on every device. */
    record LocalRegistration(LocalBuffer buffer, long address, long length, RdmaDevice.MemoryRegion[] regions) {
        int lkey(int device) {
            return regions[device].lkey();
        }
    }

    private record Accepted(String caller, long connectionId, List<QueuePair> qps) {
    }

    private RdmaTransport(TransportContext context, RdmaOptions options) {
        this.context = context;
        this.options = options;
    }

    /** Opens the devices the options allow; each device's poller runs {@code periodic} on its sweeps. */
    @FunctionalInterface
    interface DeviceOpener {
        /** @throws TransferException TRANSPORT_UNAVAILABLE naming why no device could be used */
        List<RdmaDevice> open(RdmaOptions options, Runnable periodic);
    }

    /**
     * Opens every allowed device with an active port and starts serving {@code rdma.connect}.
     *
     * @throws TransferException TRANSPORT_UNAVAILABLE naming why no device could be used
     */
    /** The engine's clock, which slice deadlines are in. */
    TimeSource clock() {
        return context.clock();
    }

    static RdmaTransport open(TransportContext context, RdmaOptions options, VerbsLibrary verbs) {
        return open(context, options, (o, periodic) -> openDevices(verbs, o, context.clock(), periodic));
    }

    static RdmaTransport open(TransportContext context, RdmaOptions options, DeviceOpener opener) {
        RdmaTransport t = new RdmaTransport(context, options);
        t.devices.addAll(opener.open(options, t::sweep));
        try {
            for (int i = 0; i < t.devices.size(); i++) {
                if (t.devices.get(i).index() != i) {
                    throw new IllegalStateException("device " + t.devices.get(i) + " opened with index "
                            + t.devices.get(i).index() + " at position " + i);
                }
            }
            context.controlPlane().serve(CONNECT_SERVICE, t::onHandshake);
        } catch (RuntimeException e) {
            t.devices.forEach(RdmaDevice::close);
            throw e;
        }
        return t;
    }

    private static List<RdmaDevice> openDevices(VerbsLibrary verbs, RdmaOptions options, TimeSource clock,
                                                Runnable periodic) {
        VerbsLibrary.DeviceList list = verbs.getDeviceList();
        if (list.failed()) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "rdma: " + DeviceProbe.noDevices(verbs,
                    list));
        }
        List<RdmaDevice> devices = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        List<String> found = new ArrayList<>();
        try {
            for (int i = 0; i < list.count(); i++) {
                String name = verbs.deviceName(list.device(i));
                found.add(name);
                if (!options.allows(name)) {
                    continue;
                }
                try {
                    devices.add(RdmaDevice.open(verbs, list.device(i), name, devices.size(), options, clock,
                            periodic));
                } catch (VerbsException e) {
                    problems.add(e.getMessage());
                    LOG.warn("rdma: not using {}: {}", name, e.getMessage());
                }
            }
        } finally {
            verbs.freeDeviceList(list);
        }
        for (String wanted : options.devices()) {
            if (!found.contains(wanted)) {
                problems.add(wanted + " not found (devices: " + String.join(", ", found) + ")");
            }
        }
        if (devices.isEmpty()) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "rdma: no usable device"
                    + (found.isEmpty() ? ": ibv_get_device_list returned an empty list" : ": " + String.join("; ",
                    problems)));
        }
        return devices;
    }

    @Override
    public String id() {
        return ID;
    }

    /**
     * The provider's capabilities with the slice size bounded by the smallest port {@code max_msg_sz} of the devices
     * in use, so the runtime never slices bigger than one work request can carry.
     */
    @Override
    public Optional<TransportCapabilities> capabilities() {
        long max = RdmaTransportProvider.MAX_SLICE_SIZE;
        for (RdmaDevice d : devices) {
            if (d.maxMessageSize() > 0) {
                max = Math.min(max, d.maxMessageSize());
            }
        }
        return Optional.of(TransportCapabilities.builder()
                .memoryPaths(options.gpuDirect() ? GPU_DIRECT_PATHS : TransportCapabilities.hostOnly())
                .maxSliceSize(max).rank(RdmaTransportProvider.RANK).build());
    }

    @Override
    public Map<String, String> segmentAttributes() {
        return RdmaAttributes.encodeSegment(devices.stream().map(RdmaDevice::address).toList());
    }

    /** Memory-region access for a buffer: local write always (READ lands in it), remote access per permission. */
    static int accessFlags(Permission permission) {
        return switch (permission) {
            case LOCAL_ONLY -> Verbs.IBV_ACCESS_LOCAL_WRITE;
            case READ_ONLY -> Verbs.IBV_ACCESS_LOCAL_WRITE | Verbs.IBV_ACCESS_REMOTE_READ;
            case READ_WRITE -> Verbs.IBV_ACCESS_LOCAL_WRITE | Verbs.IBV_ACCESS_REMOTE_READ
                    | Verbs.IBV_ACCESS_REMOTE_WRITE;
        };
    }

    /** Host and device memory in any combination: with peer memory a NIC reads and writes GPU memory directly. */
    private static final java.util.Set<org.tent4j.spi.MemoryPath> GPU_DIRECT_PATHS = gpuDirectPaths();

    private static java.util.Set<org.tent4j.spi.MemoryPath> gpuDirectPaths() {
        java.util.Set<org.tent4j.spi.MemoryPath> paths = new java.util.HashSet<>();
        List<MemoryKind> kinds = List.of(MemoryKind.CPU, MemoryKind.CUDA, MemoryKind.ROCM);
        for (MemoryKind a : kinds) {
            for (MemoryKind b : kinds) {
                paths.add(org.tent4j.spi.MemoryPath.of(a, b));
            }
        }
        return java.util.Set.copyOf(paths);
    }

    @Override
    public Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
        boolean device = buffer.location().kindOrCpu() != MemoryKind.CPU;
        if (device && (!options.gpuDirect() || buffer.location().kindOrCpu() == MemoryKind.NPU)) {
            return Optional.empty();
        }
        int access = accessFlags(buffer.permission());
        RdmaDevice.MemoryRegion[] regions = new RdmaDevice.MemoryRegion[devices.size()];
        int[] rkeys = new int[devices.size()];
        try {
            for (RdmaDevice d : devices) {
                regions[d.index()] = d.register(buffer.address(), buffer.length(), access);
                rkeys[d.index()] = regions[d.index()].rkey();
            }
        } catch (VerbsException e) {
            for (RdmaDevice d : devices) {
                if (regions[d.index()] != null) {
                    RdmaDevice.quietly(() -> d.deregister(regions[d.index()]));
                }
            }
            LOG.warn("rdma: not serving buffer 0x{} +{} at {}: {}{}", Long.toHexString(buffer.address()), buffer.length(),
                    buffer.location(), e.getMessage(), e.errno() == 12 ? " (check the locked-memory limit, ulimit -l)"
                            : device ? " (device memory needs the kernel's peer-memory module: nvidia-peermem or amdgpu)" : "");
            return Optional.empty();
        }
        LocalRegistration reg = new LocalRegistration(buffer, buffer.address(), buffer.length(), regions);
        synchronized (registrations) {
            registrations.put(buffer, reg);
            localTable = RangeTable.of(List.copyOf(registrations.values()), LocalRegistration::address,
                    LocalRegistration::length);
        }
        return Optional.of(RdmaAttributes.encodeBuffer(devices.stream().map(RdmaDevice::name).toList(), rkeys));
    }

    @Override
    public void unregisterBuffer(LocalBuffer buffer) {
        LocalRegistration reg;
        synchronized (registrations) {
            reg = registrations.remove(buffer);
            if (reg == null) {
                return;
            }
            localTable = RangeTable.of(List.copyOf(registrations.values()), LocalRegistration::address,
                    LocalRegistration::length);
        }
        for (RdmaDevice d : devices) {
            RdmaDevice.quietly(() -> d.deregister(reg.regions()[d.index()]));
        }
    }

    /** The registration holding a local range, or null. Allocation-free. */
    LocalRegistration localRegistration(long address, long length) {
        return localTable.find(address, length);
    }

    @Override
    public PeerConnection connect(SegmentDescriptor peer) {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "rdma transport is closed; cannot connect to '"
                    + peer.name() + "'");
        }
        Map<String, String> attributes = peer.transportAttributes(ID);
        if (attributes.isEmpty()) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "peer '" + peer.name()
                    + "' publishes no rdma devices (it does not run the rdma transport)");
        }
        List<RdmaAttributes.DeviceAddress> remote = RdmaAttributes.decodeSegment(peer.name(), attributes);
        long id = connectionIds.incrementAndGet();
        List<QueuePair> qps = new ArrayList<>();
        boolean handshaken = false;
        try {
            List<HandshakeMessage.Endpoint> request = new ArrayList<>();
            for (RdmaDevice d : devices) {
                for (int q = 0; q < options.qpsPerPeer(); q++) {
                    // spread each device's QPs over the peer's devices
                    int r = (d.index() * options.qpsPerPeer() + q) % remote.size();
                    QueuePair qp = d.createQueuePair(r);
                    qps.add(qp);
                    request.add(qp.endpoint(r));
                }
            }
            byte[] replyBytes = context.controlPlane().call(peer, CONNECT_SERVICE,
                    new HandshakeMessage(HandshakeMessage.Type.CONNECT, id, request).encode(),
                    context.transferTimeout());
            handshaken = true;
            HandshakeMessage reply = HandshakeMessage.decode(replyBytes);
            checkReply(peer, id, qps, reply);
            for (int k = 0; k < qps.size(); k++) {
                QueuePair qp = qps.get(k);
                qp.connect(reply.endpoints().get(k), peer.name(), remote.get(qp.remoteDevice()).name());
            }
            RdmaPeerConnection c = new RdmaPeerConnection(this, peer, remote, id, qps);
            connections.add(c);
            if (closed) {
                c.close(ErrorCode.ENGINE_CLOSED, "rdma transport closed");
                throw new TransferException(ErrorCode.ENGINE_CLOSED, "rdma transport closed while connecting to '"
                        + peer.name() + "'");
            }
            LOG.debug("rdma: connected to '{}' with {} QPs (connection {})", peer.name(), qps.size(),
                    Long.toHexString(id));
            return c;
        } catch (RuntimeException e) {
            qps.forEach(QueuePair::destroy);
            if (handshaken) {
                sendDisconnect(peer, id);
            }
            if (e instanceof TransferException te) {
                throw te;
            }
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "rdma: cannot connect to '" + peer.name() + "': "
                    + e.getMessage(), e);
        }
    }

    private static void checkReply(SegmentDescriptor peer, long id, List<QueuePair> qps, HandshakeMessage reply) {
        String bad = null;
        if (reply.type() != HandshakeMessage.Type.ACCEPT) {
            bad = "answered " + reply.type() + " instead of ACCEPT";
        } else if (reply.connectionId() != id) {
            bad = "answered connection " + Long.toHexString(reply.connectionId()) + " instead of "
                    + Long.toHexString(id);
        } else if (reply.endpoints().size() != qps.size()) {
            bad = "answered " + reply.endpoints().size() + " QPs for " + qps.size();
        } else {
            for (int k = 0; k < qps.size() && bad == null; k++) {
                HandshakeMessage.Endpoint e = reply.endpoints().get(k);
                if (e.senderDevice() != qps.get(k).remoteDevice()
                        || e.receiverDevice() != qps.get(k).device().index()) {
                    bad = "paired QP " + k + " with devices " + e.senderDevice() + "->" + e.receiverDevice()
                            + " instead of " + qps.get(k).remoteDevice() + "->" + qps.get(k).device().index();
                }
            }
        }
        if (bad != null) {
            throw new TransferException(ErrorCode.PROTOCOL, "rdma handshake with '" + peer.name() + "': peer " + bad);
        }
    }

    /** Target side of {@code rdma.connect}. */
    private byte[] onHandshake(String caller, byte[] requestBytes) {
        HandshakeMessage request = HandshakeMessage.decode(requestBytes);
        return switch (request.type()) {
            case CONNECT -> accept(caller, request);
            case DISCONNECT -> {
                drop(caller, request.connectionId());
                yield new byte[0];
            }
            case ACCEPT -> throw new TransferException(ErrorCode.PROTOCOL, "rdma handshake: '" + caller
                    + "' sent ACCEPT as a request");
        };
    }

    private byte[] accept(String caller, HandshakeMessage request) {
        if (closed) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "rdma transport is closing");
        }
        List<QueuePair> qps = new ArrayList<>();
        try {
            List<HandshakeMessage.Endpoint> reply = new ArrayList<>();
            for (HandshakeMessage.Endpoint e : request.endpoints()) {
                if (e.receiverDevice() >= devices.size()) {
                    throw new TransferException(ErrorCode.PROTOCOL, "rdma handshake: '" + caller + "' asks for device "
                            + e.receiverDevice() + " but this engine publishes " + devices.size());
                }
                QueuePair qp = devices.get(e.receiverDevice()).createQueuePair(e.senderDevice());
                qps.add(qp);
                qp.connect(e, caller, "device " + e.senderDevice());
                reply.add(qp.endpoint(e.senderDevice()));
            }
            remember(new Accepted(caller, request.connectionId(), List.copyOf(qps)));
            return new HandshakeMessage(HandshakeMessage.Type.ACCEPT, request.connectionId(), reply).encode();
        } catch (RuntimeException e) {
            qps.forEach(QueuePair::destroy);
            throw e;
        }
    }

    private void remember(Accepted a) {
        List<Accepted> evicted = new ArrayList<>();
        synchronized (accepted) {
            Accepted previous = accepted.put(key(a.caller(), a.connectionId()), a);
            if (previous != null) {
                evicted.add(previous);
            }
            long fromCaller = accepted.values().stream().filter(x -> x.caller().equals(a.caller())).count();
            for (Iterator<Accepted> it = accepted.values().iterator(); it.hasNext() && fromCaller
                    > MAX_ACCEPTED_PER_PEER; ) {
                Accepted x = it.next();
                if (x.caller().equals(a.caller())) {
                    it.remove();
                    evicted.add(x);
                    fromCaller--;
                }
            }
        }
        for (Accepted x : evicted) {
            x.qps().forEach(QueuePair::destroy);
        }
    }

    private void drop(String caller, long connectionId) {
        Accepted a;
        synchronized (accepted) {
            a = accepted.remove(key(caller, connectionId));
        }
        if (a != null) {
            a.qps().forEach(QueuePair::destroy);
        }
    }

    private static String key(String caller, long connectionId) {
        return caller + '\u0000' + connectionId;
    }

    /** Tells the peer to destroy its side of a connection; best effort, off the caller's thread. */
    void sendDisconnect(SegmentDescriptor peer, long connectionId) {
        byte[] message = new HandshakeMessage(HandshakeMessage.Type.DISCONNECT, connectionId, List.of()).encode();
        Runnable send = () -> {
            try {
                context.controlPlane().call(peer, CONNECT_SERVICE, message, DISCONNECT_TIMEOUT);
            } catch (RuntimeException e) {
                LOG.debug("rdma: disconnect of {} from '{}' not delivered: {}", Long.toHexString(connectionId),
                        peer.name(), e.getMessage());
            }
        };
        try {
            context.workers().execute(send);
        } catch (RejectedExecutionException e) {
            LOG.debug("rdma: disconnect from '{}' skipped, engine workers stopped", peer.name());
        }
    }

    void forget(RdmaPeerConnection c) {
        connections.remove(c);
    }

    /** Poller hook: moves queued slices of every connection along and expires stale ones. */
    private void sweep() {
        for (RdmaPeerConnection c : connections) {
            c.sweep();
        }
    }

    List<RdmaDevice> devices() {
        return List.copyOf(devices);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (RdmaPeerConnection c : List.copyOf(connections)) {
            c.close(ErrorCode.ENGINE_CLOSED, "rdma transport closed");
        }
        List<Accepted> all;
        synchronized (accepted) {
            all = new ArrayList<>(accepted.values());
            accepted.clear();
        }
        all.forEach(a -> a.qps().forEach(QueuePair::destroy));
        synchronized (registrations) {
            for (LocalRegistration r : registrations.values()) {
                for (RdmaDevice d : devices) {
                    RdmaDevice.quietly(() -> d.deregister(r.regions()[d.index()]));
                }
            }
            registrations.clear();
            localTable = RangeTable.empty();
        }
        devices.forEach(RdmaDevice::close);
    }
}
