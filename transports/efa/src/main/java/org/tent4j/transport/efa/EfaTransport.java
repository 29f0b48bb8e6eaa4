package org.tent4j.transport.efa;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
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
import org.tent4j.spi.TimeSource;
import org.tent4j.spi.Transport;

/**
 * One engine's libfabric transport: a {@link Fabric} (fabric, domain, AV, CQ, RDM endpoints) opened for the configured
 * provider, one {@link FabricProgress} thread, and the memory regions of the engine's buffers.
 *
 * <p>Registration: every host buffer is registered ({@code FI_MR_LOCAL} providers need a descriptor for the local side
 * of every operation). {@code READ_WRITE} buffers get {@code FI_REMOTE_READ|FI_REMOTE_WRITE}, {@code READ_ONLY}
 * buffers {@code FI_REMOTE_READ} only, so the provider itself refuses a peer's WRITE. {@code LOCAL_ONLY} buffers get
 * no remote access and their key is not published: a peer has nothing to address them with.
 */
final class EfaTransport implements Transport {
    private static final Logger LOG = LoggerFactory.getLogger(EfaTransport.class);

    private final String segmentName;
    private final Fabric fabric;
    private final FabricInfo info;
    private final MrMode mrMode;
    private final FabricProgress progress;
    /** The engine's clock, handed to what checks slice deadlines. */
    private final TimeSource clock;
    private final Map<String, String> segmentAttributes;
    private final AtomicLong nextKey = new AtomicLong(1);
    /** Copy-on-write; registrations are rare, lookups on every post must not allocate. */
    private volatile LocalRegion[] regions = new LocalRegion[0];
    /** fi_addr_t per remote endpoint, by the peer's published {@code addr}. */
    private final Map<String, long[]> peerAddresses = new ConcurrentHashMap<>();
    private final List<EfaPeerConnection> connections = new ArrayList<>();
    private volatile boolean closed;

    /** A registered buffer: its memory region and whether peers were given its key. */
    record LocalRegion(LocalBuffer buffer, Fabric.MemoryRegion region, boolean published) {
    }

    /**
     * @param maxOpBytes largest single fi_write / fi_read; longer slices are moved as consecutive chunks. The
     *                   provider's {@code max_msg_size} in production; tests pass less to exercise chunking.
     * @param clock      the engine's clock, which slice deadlines are in
     */
    EfaTransport(String segmentName, LibFabric lib, FabricInfo info, int endpointCount, int cqSize,
                 Duration progressInterval, long maxOpBytes, TimeSource clock) {
        this.segmentName = segmentName;
        this.clock = clock;
        this.info = info;
        this.mrMode = new MrMode(info.mrMode);
        if ((info.txOpFlags & FiAbi.FI_DELIVERY_COMPLETE) == 0) {
            // without it a WRITE could be reported complete before its bytes are visible at the target
            info.close();
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "efa transport: provider '" + info.provider
                    + "' did not grant FI_DELIVERY_COMPLETE as the default transmit flag");
        }
        if (mrMode.unsupported() != 0) {
            info.close();
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "efa transport: provider '" + info.provider
                    + "' requires mr_mode " + FiAbi.mrModeNames(mrMode.unsupported())
                    + ", which this transport does not implement");
        }
        try {
            this.fabric = new Fabric(lib, info, endpointCount, cqSize);
        } catch (Fabric.FabricException e) {
            info.close();
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "efa transport for segment '" + segmentName
                    + "': " + e.getMessage(), e);
        }
        this.progress = new FabricProgress(fabric, segmentName, cqSize, maxOpBytes, progressInterval, clock);
        byte[][] names = new byte[endpointCount][];
        for (int i = 0; i < endpointCount; i++) {
            names[i] = fabric.name(i);
        }
        this.segmentAttributes = EfaAttributes.segment(info.provider, names, info.mrMode);
        progress.start();
        LOG.info("efa transport for segment '{}': {} ({} endpoint(s), {} operation slots, libfabric {})",
                segmentName, info, endpointCount, cqSize, LibFabric.versionString(lib.libraryVersion()));
    }

    @Override
    public String id() {
        return EfaTransportProvider.ID;
    }

    FabricInfo fabricInfo() {
        return info;
    }

    String providerName() {
        return info.provider;
    }

    MrMode mrMode() {
        return mrMode;
    }

    FabricProgress progress() {
        return progress;
    }

    @Override
    public Map<String, String> segmentAttributes() {
        return segmentAttributes;
    }

    @Override
    public Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
        ensureOpen();
        if (buffer.location().kindOrCpu() != MemoryKind.CPU) {
            // FI_HMEM registration is not implemented; another transport has to serve device memory
            return Optional.empty();
        }
        Permission permission = buffer.permission();
        long access = FiAbi.FI_READ | FiAbi.FI_WRITE;
        if (permission == Permission.READ_ONLY) {
            access |= FiAbi.FI_REMOTE_READ;
        } else if (permission == Permission.READ_WRITE) {
            access |= FiAbi.FI_REMOTE_READ | FiAbi.FI_REMOTE_WRITE;
        }
        long requested = mrMode.requestedKey(nextKey.getAndIncrement());
        Fabric.MemoryRegion region;
        try {
            region = fabric.register(buffer.segment(), access, requested);
        } catch (Fabric.FabricException e) {
            throw new TransferException(FabricErrors.code(e.rc), "efa transport of segment '" + segmentName
                    + "' could not register buffer " + buffer.id() + " [0x" + Long.toHexString(buffer.address())
                    + ", +" + buffer.length() + ") with " + info.provider + ": " + e.getMessage(), e);
        }
        boolean published = permission != Permission.LOCAL_ONLY;
        synchronized (this) {
            LocalRegion[] now = regions;
            LocalRegion[] next = Arrays.copyOf(now, now.length + 1);
            next[now.length] = new LocalRegion(buffer, region, published);
            regions = next;
        }
        if (!published) {
            return Optional.of(Map.of());
        }
        long key = mrMode.providerKeys() ? region.key() : requested;
        return Optional.of(EfaAttributes.buffer(key, mrMode.publishedBase(buffer.address())));
    }

    @Override
    public void unregisterBuffer(LocalBuffer buffer) {
        LocalRegion removed = null;
        synchronized (this) {
            LocalRegion[] now = regions;
            for (int i = 0; i < now.length; i++) {
                if (now[i].buffer() == buffer) {
                    removed = now[i];
                    LocalRegion[] next = new LocalRegion[now.length - 1];
                    System.arraycopy(now, 0, next, 0, i);
                    System.arraycopy(now, i + 1, next, i, now.length - i - 1);
                    regions = next;
                    break;
                }
            }
        }
        if (removed != null) {
            int rc = fabric.close(removed.region());
            if (rc != 0) {
                LOG.warn("efa: closing the memory region of buffer {} failed: {}", buffer.id(),
                        fabric.lib().describe("fi_close(mr)", rc));
            }
        }
    }

    /** The region of {@code buffer}, or {@code null} if it is not registered here. Allocation-free. */
    LocalRegion localRegion(LocalBuffer buffer) {
        for (LocalRegion r : regions) {
            if (r.buffer() == buffer) {
                return r;
            }
        }
        return null;
    }

    @Override
    public PeerConnection connect(SegmentDescriptor peer) {
        ensureOpen();
        Map<String, String> attrs = peer.transportAttributes(EfaTransportProvider.ID);
        String addr = attrs.get(EfaAttributes.ADDR);
        if (addr == null) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "segment '" + peer.name()
                    + "' publishes no efa endpoint address");
        }
        String peerProvider = attrs.get(EfaAttributes.PROVIDER);
        if (peerProvider != null && !peerProvider.equals(info.provider)) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "segment '" + peer.name()
                    + "' runs the efa transport over provider '" + peerProvider + "', this engine over '"
                    + info.provider + "'");
        }
        long[] fiAddrs;
        try {
            fiAddrs = peerAddresses.computeIfAbsent(addr, this::insert);
        } catch (IllegalArgumentException e) {
            throw new TransferException(ErrorCode.PROTOCOL, "segment '" + peer.name()
                    + "' published a malformed efa address: " + e.getMessage(), e);
        } catch (Fabric.FabricException e) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "efa: cannot add segment '" + peer.name()
                    + "' to the address vector: " + e.getMessage(), e);
        }
        EfaPeerConnection c = new EfaPeerConnection(this, progress, peer.name(), fiAddrs, fabric.endpointCount(),
                clock);
        synchronized (connections) {
            connections.add(c);
        }
        return c;
    }

    void forget(EfaPeerConnection c) {
        synchronized (connections) {
            connections.remove(c);
        }
    }

    private long[] insert(String addr) {
        byte[][] names = EfaAttributes.addresses(addr);
        long[] out = new long[names.length];
        for (int i = 0; i < names.length; i++) {
            out[i] = fabric.insertAddress(names[i]);
        }
        return out;
    }

    private void ensureOpen() {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "the efa transport of segment '" + segmentName
                    + "' is closed");
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        progress.stop();
        List<EfaPeerConnection> cs;
        synchronized (connections) {
            cs = List.copyOf(connections);
            connections.clear();
        }
        for (EfaPeerConnection c : cs) {
            c.close();
        }
        regions = new LocalRegion[0];
        // endpoints first, then the regions still registered, then the rest
        fabric.close();
        progress.freeContexts();
        info.close();
    }
}
