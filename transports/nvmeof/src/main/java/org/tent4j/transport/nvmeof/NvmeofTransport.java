package org.tent4j.transport.nvmeof;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.TransferException;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.LocalFile;
import org.tent4j.spi.MemoryPath;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;

/**
 * File segments of this engine and of same-host peers: each path of the transport is an io_uring with its own thread
 * ({@link RingWorker}), or, where io_uring is unavailable, a thread doing positional FileChannel I/O
 * ({@link ChannelWorker}). GPU memory moves through cuFile (GDS) when libcufile loads ({@link CuFileIo}).
 */
final class NvmeofTransport implements Transport {
    private static final Logger log = LoggerFactory.getLogger(NvmeofTransport.class);
    private static final long UNREGISTER_WAIT_MILLIS = 30_000;

    private final TransportContext context;
    private final RingWorker[] rings;
    private final ChannelWorker[] channels;
    private final CuFileIo gds;
    private final boolean direct;
    private final List<Path> peerRoots;
    private final Map<Long, OpenFile> ownFiles = new ConcurrentHashMap<>();
    /** {@link #ownFiles} sorted by base, for allocation-free lookups on the loopback path. */
    private volatile OpenFile[] ownSorted = new OpenFile[0];
    private final Set<FileConnection> connections = ConcurrentHashMap.newKeySet();
    private final TransportCapabilities capabilities;
    private volatile boolean open = true;

    NvmeofTransport(TransportContext context, boolean useUring, int paths, int depth, boolean direct, int alignment,
                    int bounceSize, int bounces, List<Path> peerRoots, CuFileIo gds) throws IOException {
        this.context = context;
        this.direct = direct;
        this.peerRoots = List.copyOf(peerRoots);
        this.gds = gds;
        String engine = context.segmentName();
        if (useUring) {
            rings = new RingWorker[paths];
            channels = null;
            try {
                for (int i = 0; i < paths; i++) {
                    rings[i] = new RingWorker(i, engine, depth, Math.max(1024, depth * 8), alignment, bounceSize, bounces,
                            context.clock());
                }
            } catch (IOException | RuntimeException e) {
                for (RingWorker r : rings) {
                    if (r != null) {
                        r.start();
                        r.close();
                    }
                }
                throw e;
            }
            for (RingWorker r : rings) {
                r.start();
            }
        } else {
            rings = null;
            channels = new ChannelWorker[paths];
            for (int i = 0; i < paths; i++) {
                channels[i] = new ChannelWorker(i, engine, Math.max(1024, depth * 8));
                channels[i].start();
            }
        }
        Set<MemoryPath> memoryPaths = new java.util.HashSet<>(NvmeofTransportProvider.CAPABILITIES.memoryPaths());
        if (gds != null) {
            memoryPaths.add(MemoryPath.of(MemoryKind.CUDA, MemoryKind.FILE));
        }
        this.capabilities = NvmeofTransportProvider.CAPABILITIES.toBuilder().memoryPaths(memoryPaths).build();
        log.info("nvmeof for segment '{}': {} x {}{}", engine, paths, useUring ? "io_uring (depth " + depth + ", O_DIRECT "
                + direct + ")" : "FileChannel", gds != null ? ", GDS through " + gds.library() : "");
    }

    @Override
    public String id() {
        return NvmeofTransportProvider.ID;
    }

    @Override
    public Optional<TransportCapabilities> capabilities() {
        return Optional.of(capabilities);
    }

    int paths() {
        return rings != null ? rings.length : channels.length;
    }

    String pathName(int path) {
        return (rings != null ? "ring-" : "channel-") + path;
    }

    boolean isOpen() {
        return open;
    }

    List<Path> peerRoots() {
        return peerRoots;
    }

    boolean peerFileAllowed(Path p) {
        for (Path root : peerRoots) {
            if (p.startsWith(root)) {
                return true;
            }
        }
        return false;
    }

    OpenFile open(Path path, long base, long length) throws IOException {
        return rings != null ? OpenFile.openNative(path, base, length, direct, rings.length)
                : OpenFile.openChannel(path, base, length, channels.length);
    }

    /** The engine's own file holding {@code [address, address + length)}, or {@code null}. Allocation-free. */
    OpenFile ownFile(long address, long length) {
        OpenFile[] a = ownSorted;
        int lo = 0;
        int hi = a.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            OpenFile f = a[mid];
            if (address < f.base) {
                hi = mid - 1;
            } else if (address - f.base >= f.length) {
                lo = mid + 1;
            } else {
                return length >= 0 && address - f.base <= f.length - length ? f : null;
            }
        }
        return null;
    }

    private synchronized void resortOwn() {
        OpenFile[] a = ownFiles.values().toArray(new OpenFile[0]);
        java.util.Arrays.sort(a, java.util.Comparator.comparingLong(f -> f.base));
        ownSorted = a;
    }

    @Override
    public Optional<Map<String, String>> registerBuffer(LocalBuffer buffer) {
        MemoryKind kind = buffer.location().kindOrCpu();
        if (kind == MemoryKind.CPU) {
            return Optional.of(Map.of());
        }
        if (kind == MemoryKind.CUDA && gds != null) {
            gds.registerBuffer(buffer);
            return Optional.of(Map.of());
        }
        return Optional.empty();
    }

    @Override
    public void unregisterBuffer(LocalBuffer buffer) {
        if (gds != null && buffer.location().kindOrCpu() == MemoryKind.CUDA) {
            gds.unregisterBuffer(buffer);
        }
    }

    @Override
    public Optional<Map<String, String>> registerFile(LocalFile file) {
        OpenFile f;
        try {
            f = open(file.path(), file.address(), file.length());
        } catch (IOException e) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "nvmeof cannot open " + file.path() + ": " + e.getMessage(), e);
        }
        if (f.directRefused != null && direct && rings != null) {
            log.info("nvmeof: {} without O_DIRECT (buffered I/O): {}", file.path(), f.directRefused);
        }
        ownFiles.put(file.address(), f);
        resortOwn();
        Map<String, String> attrs = new java.util.LinkedHashMap<>();
        attrs.put("path", file.path().toString());
        if (f.dev >= 0) {
            attrs.put("dev", Long.toString(f.dev));
            attrs.put("ino", Long.toString(f.ino));
        }
        return Optional.of(Map.copyOf(attrs));
    }

    @Override
    public void unregisterFile(LocalFile file) {
        OpenFile f = ownFiles.remove(file.address());
        resortOwn();
        if (f != null) {
            if (gds != null) {
                gds.forget(f);
            }
            f.close(UNREGISTER_WAIT_MILLIS);
        }
    }

    @Override
    public PeerConnection connect(SegmentDescriptor peer) {
        if (!open) {
            throw new TransferException(ErrorCode.TRANSPORT_UNAVAILABLE, "nvmeof transport is closed");
        }
        boolean own = peer.name().equals(context.segmentName()) && peer.machineId().equals(context.machineId());
        if (!own && !peer.machineId().equals(context.machineId())) {
            throw new TransferException(ErrorCode.PEER_UNREACHABLE, "nvmeof reaches files of this host only; segment '"
                    + peer.name() + "' is on machine " + peer.machineId());
        }
        FileConnection c = new FileConnection(this, peer, own, context.clock());
        connections.add(c);
        return c;
    }

    /** Hands a slice (with a reference on its file) to the path it names, or to cuFile for GPU memory. */
    void submit(Slice s, OpenFile f) {
        if (gds != null && s.localBuffer().location().kindOrCpu() == MemoryKind.CUDA) {
            gds.submit(s, f, context.workers());
            return;
        }
        int path = s.path();
        if (rings != null) {
            rings[Math.floorMod(path, rings.length)].post(s, f);
        } else {
            channels[Math.floorMod(path, channels.length)].post(s, f);
        }
    }

    /** The I/O threads, for tests that check none outlives {@link #close()}. */
    List<Thread> threads() {
        List<Thread> out = new ArrayList<>();
        if (rings != null) {
            for (RingWorker r : rings) {
                out.add(r.thread());
            }
        } else {
            for (ChannelWorker c : channels) {
                out.add(c.thread());
            }
        }
        return out;
    }

    @Override
    public void close() {
        if (!open) {
            return;
        }
        open = false;
        for (FileConnection c : connections) {
            c.close();
        }
        if (rings != null) {
            for (RingWorker r : rings) {
                r.close();
            }
        } else {
            for (ChannelWorker c : channels) {
                c.close();
            }
        }
        for (OpenFile f : ownFiles.values()) {
            if (gds != null) {
                gds.forget(f);
            }
            f.close(0);
        }
        ownFiles.clear();
        if (gds != null) {
            gds.close();
        }
    }
}
