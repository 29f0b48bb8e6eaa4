package org.tent4j.transport.shm;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.MemoryAllocator;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportContext;

/**
 * The shm transport of one engine. It can serve only memory its own {@link ShmAllocator} made (a file peers map by
 * path); as the initiator it copies between any local registered buffer and a peer's mapped file.
 */
final class ShmTransport implements Transport {
    private static final Logger LOG = LoggerFactory.getLogger(ShmTransport.class);

    /** Published offset of a registered buffer inside its file, for buffers that are a part of an allocation. */
    static final String OFFSET = "offset";

    /** Directories whose page size this JVM has logged: once each, not once per engine. */
    private static final Set<Path> LOGGED_PAGES = ConcurrentHashMap.newKeySet();

    private final TransportContext context;
    private final ShmDirectory directory;
    private final Prefaulter prefaulter;
    private final ShmAllocator allocator;
    private final long copyThreshold;
    private final int copyParallelism;
    private final Set<ShmPeerConnection> connections = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    ShmTransport(TransportContext context, ShmDirectory directory, long copyThreshold, int copyParallelism,
                 long prefaultLimit) {
        this.context = context;
        this.directory = directory;
        boolean inMemory = directory.inMemory(); // asks the file system: once
        this.prefaulter = new Prefaulter(inMemory ? prefaultLimit : 0, context.segmentName());
        this.allocator = new ShmAllocator(directory, prefaulter, context.segmentName());
        this.copyThreshold = copyThreshold;
        this.copyParallelism = copyParallelism;
        directory.sweepStaleFiles();
        if (inMemory && LOGGED_PAGES.add(directory.path())) {
            HugePages pages = HugePages.of(directory.path());
            if (pages.huge()) {
                LOG.info("shm segments in {} get huge pages ({})", directory.path(), pages.reason());
            } else {
                LOG.info("shm segments in {} get 4 KiB pages ({}): each process faults on its first write to each page "
                        + "of a peer's segment, 14-17 us apiece on a VM with shadow page tables; a tmpfs mounted "
                        + "huge=within_size gives 2 MiB pages (docs/STORE.md, \"Huge pages\")", directory.path(), pages.reason());
            }
        }
        LOG.debug("shm transport for segment '{}' in {} (inline copies up to {} bytes, {} copy worker(s) per peer)",
                context.segmentName(), directory.path(), copyThreshold, copyParallelism);
    }

    @Override
    public String id() {
        return ShmTransportProvider.ID;
    }

    @Override
    public Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
        String path = buffer.backing().get(ShmAllocator.PATH);
        ShmAllocator.ShmFile file = allocator.find(path);
        if (file == null || file.isReleased()) {
            return Optional.empty(); // memory shm did not allocate: peers have no file to map
        }
        long offset = buffer.address() - file.segment.address();
        if (offset < 0 || offset > file.size - buffer.length()) {
            LOG.warn("buffer {} claims shm file {} but [0x{}, +{}) is not inside its mapping; not publishing it for shm",
                    buffer.id(), path, Long.toHexString(buffer.address()), buffer.length());
            return Optional.empty();
        }
        return Optional.of(Map.of(ShmAllocator.PATH, path, ShmAllocator.SIZE, Long.toString(buffer.length()),
                OFFSET, Long.toString(offset)));
    }

    @Override
    public Optional<MemoryAllocator> allocator() {
        return Optional.of(allocator);
    }

    @Override
    public PeerConnection connect(SegmentDescriptor peer) {
        if (closed) {
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "shm transport of segment '" + context.segmentName()
                    + "' is closed; cannot connect to segment '" + peer.name() + "'");
        }
        if (!context.machineId().equals(peer.machineId())) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "shm cannot reach segment '" + peer.name()
                    + "': it is on machine '" + peer.machineId() + "' and this engine ('" + context.segmentName()
                    + "') is on machine '" + context.machineId() + "'; shm needs both on one machine");
        }
        for (org.tent4j.spi.BufferDescriptor b : peer.buffers()) {
            String path = b.attributes(ShmTransportProvider.ID).get(ShmAllocator.PATH);
            if (path != null && deadFiles.contains(path)) {
                throw new TransferException(ErrorCode.PEER_UNREACHABLE, "shm cannot reach segment '" + peer.name()
                        + "': the process owning " + path + " is gone");
            }
        }
        ShmPeerConnection connection = new ShmPeerConnection(this, peer, context.workers(), context.clock(),
                copyThreshold, copyParallelism);
        connections.add(connection);
        if (closed) { // close() ran concurrently and may have missed it
            connection.close();
            throw new TransferException(ErrorCode.ENGINE_CLOSED, "shm transport of segment '" + context.segmentName()
                    + "' closed while connecting to segment '" + peer.name() + "'");
        }
        return connection;
    }

    /**
     * Files whose owner was seen gone. A peer's descriptor stays cached after it dies, so without this every reconnect
     * would map the orphaned memory again and let slices "complete" into it before the next liveness check.
     */
    private final java.util.Set<String> deadFiles = java.util.concurrent.ConcurrentHashMap.newKeySet();

    void ownerGone(String path) {
        if (path != null) {
            deadFiles.add(path);
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (ShmPeerConnection c : connections) {
            c.close();
        }
        allocator.closeAll();
        prefaulter.close();
        LOG.debug("closed shm transport of segment '{}'", context.segmentName());
    }

    void connectionClosed(ShmPeerConnection connection) {
        connections.remove(connection);
    }

    ShmDirectory directory() {
        return directory;
    }

    Prefaulter prefaulter() {
        return prefaulter;
    }

    String machineId() {
        return context.machineId();
    }

    int openConnectionCount() {
        return connections.size();
    }
}
