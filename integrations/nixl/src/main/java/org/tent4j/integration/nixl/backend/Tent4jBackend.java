package org.tent4j.integration.nixl.backend;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.Batch;
import org.tent4j.api.BufferInfo;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Notification;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredFile;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.integration.nixl.Descriptor;
import org.tent4j.integration.nixl.MemoryType;
import org.tent4j.integration.nixl.NixlException;
import org.tent4j.integration.nixl.NixlStatus;
import org.tent4j.integration.nixl.spi.Backend;
import org.tent4j.integration.nixl.spi.BackendContext;
import org.tent4j.integration.nixl.spi.BackendNotification;
import org.tent4j.integration.nixl.spi.Progress;
import org.tent4j.integration.nixl.spi.Span;

/**
 * Requests become engine {@link TransferRequest}s once, at prepare; each post submits them as one {@link Batch}, with
 * the notification sent by the engine after all of them completed. The connection info is the engine's segment blob,
 * so a peer needs no metadata store to reach this one; memory regions carry no public data (the blob lists them).
 *
 * <p>FILE and BLK regions are NIXL-style: {@code devId} is an open file descriptor of this process and {@code address}
 * an offset in it. The descriptor is resolved to its path through {@code /proc/self/fd/<devId>} (Linux), and the file
 * is registered with {@link TransferEngine#registerFile} once, at its size when its first region came, and shared by
 * every region of it (the engine registers a path once), so peers can address the whole file at the engine level; the
 * agent still only lets transfers reach registered regions. A region must lie inside that size (a FILE is never
 * extended: size it first). Its public data is the file's base in the engine's segment plus the path (for errors),
 * so a peer turns offset {@code o} into the engine address {@code base + o}. A file is only ever a target: the local side of a transfer is memory.
 *
 * <p>Notifications travel as engine notifications whose text is {@code nixl1 <agent> <base64 message>}, so the
 * receiver learns the sending agent (not just its segment).
 */
final class Tent4jBackend implements Backend {
    private static final Logger log = LoggerFactory.getLogger(Tent4jBackend.class);
    private static final String PREFIX = "nixl1 ";
    /** Base64 of this fits the engine's notification limit with room for the agent name. */
    static final int MAX_NOTIFICATION = 32 * 1024;

    private final String agent;
    private final TransferEngine engine;
    private final String transport;
    private final Duration timeout;
    private final MemoryKind vramKind;
    private final Map<String, SegmentHandle> peers = new ConcurrentHashMap<>();
    /** Files with registered regions, by path, and how many regions use each; guarded by itself. */
    private final Map<Path, SharedFile> files = new java.util.HashMap<>();

    private static final class SharedFile {
        final RegisteredFile file;
        int regions;

        SharedFile(RegisteredFile file) {
            this.file = file;
        }
    }

    Tent4jBackend(BackendContext context) {
        this.agent = context.agentName();
        this.engine = context.engine();
        this.transport = context.options().string("transport");
        this.timeout = context.options().duration("timeout");
        String kind = context.options().string("vram_kind");
        try {
            this.vramKind = MemoryKind.valueOf(kind.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("option 'vram_kind': no device platform '" + kind + "' (cuda, rocm, npu)");
        }
        if (!vramKind.isDevice()) {
            throw new IllegalArgumentException("option 'vram_kind': '" + kind + "' is not device memory (cuda, rocm, npu)");
        }
        if (!transport.isEmpty() && engine.transports().stream().noneMatch(t -> t.id().equals(transport) && t.enabled())) {
            throw new IllegalArgumentException("option 'transport': the engine does not run transport '" + transport + "' (it runs "
                    + engine.transports().stream().filter(t -> t.enabled()).map(t -> t.id()).toList() + ")");
        }
    }

    /**
     * A transfer target: descriptor address {@code descAddress} is engine address {@code engineAddress}; {@code what}
     * names it in errors.
     */
    private record RemoteRegion(SegmentHandle segment, long descAddress, long engineAddress, long length, String what) {
        long engineAddressOf(long address, long len) {
            if (address < descAddress || address - descAddress > length - len) {
                throw new NixlException(NixlStatus.INVALID_PARAM, what + ": offset " + address + " length " + len
                        + " is outside the registered " + descAddress + "+" + length);
            }
            return engineAddress + (address - descAddress);
        }
    }

    private record FileRegion(RegisteredFile file, Descriptor region, MemoryType type) {
        String what() {
            return type + " fd " + region.devId() + " (" + file.path() + ")";
        }
    }

    /** Public data of a file region: its base in the segment, then the path's length and UTF-8 bytes. */
    private static final int MAX_PATH_BYTES = 4096;

    private static final class Request {
        final List<TransferRequest> requests;
        final SegmentHandle target;
        volatile Batch batch;
        /** The last post's notification: sent once the data landed, done when the peer accepted it; null if none. */
        volatile CompletableFuture<Void> notified;
        volatile long finishedNanos;

        Request(List<TransferRequest> requests, SegmentHandle target) {
            this.requests = requests;
            this.target = target;
        }
    }

    @Override
    public Object register(Descriptor region, MemoryType type) {
        if (type == MemoryType.FILE || type == MemoryType.BLK) {
            return registerFile(region, type);
        }
        Location location = type == MemoryType.DRAM ? Location.cpu(region.devId()) : Location.device(vramKind, region.devId());
        try {
            return engine.register(MemorySegment.ofAddress(region.address()).reinterpret(region.length()), location, Permission.READ_WRITE);
        } catch (TransferException e) {
            throw new NixlException(NixlStatus.BACKEND, "tent4j cannot register " + type + " " + region + ": " + e.getMessage(), e);
        }
    }

    private FileRegion registerFile(Descriptor region, MemoryType type) {
        String fd = type + " fd " + region.devId();
        if (region.devId() < 0) {
            throw new NixlException(NixlStatus.INVALID_PARAM, fd + ": devId must be an open file descriptor of this process");
        }
        Path path;
        long size;
        try {
            path = Files.readSymbolicLink(Path.of("/proc/self/fd", Integer.toString(region.devId())));
            if (!path.isAbsolute()) {
                // sockets, pipes and anonymous inodes read as "socket:[123]" and the like
                throw new NixlException(NixlStatus.INVALID_PARAM, fd + " is " + path + ", not a file");
            }
            int mode = (Integer) Files.getAttribute(path, "unix:mode");
            int format = mode & 0170000;
            if (type == MemoryType.FILE && format != 0100000) {
                throw new NixlException(NixlStatus.INVALID_PARAM, fd + " (" + path + ") is not a regular file");
            }
            if (type == MemoryType.BLK && format != 0060000) {
                throw new NixlException(NixlStatus.INVALID_PARAM, fd + " (" + path + ") is not a block device");
            }
            size = type == MemoryType.FILE ? Files.size(path) : blockDeviceSize(path);
        } catch (NoSuchFileException e) {
            throw new NixlException(NixlStatus.INVALID_PARAM, fd + ": no such open file descriptor in this process, or its file was removed ("
                    + e.getFile() + ")", e);
        } catch (IOException | UnsupportedOperationException e) {
            throw new NixlException(NixlStatus.INVALID_PARAM, fd + ": cannot resolve it through /proc/self/fd: " + e, e);
        }
        synchronized (files) {
            SharedFile shared = files.get(path);
            long end = shared == null ? size : shared.file.length();
            if (region.end() < 0 || region.end() > end) {
                throw new NixlException(NixlStatus.INVALID_PARAM, fd + " (" + path + "): offset " + region.address() + " length " + region.length()
                        + " runs past its end (" + end + " bytes" + (shared == null ? "" : " when its first region was registered")
                        + ")" + (type == MemoryType.FILE ? "; size the file first" : ""));
            }
            if (shared == null) {
                try {
                    shared = new SharedFile(engine.registerFile(path, size, Permission.READ_WRITE));
                } catch (TransferException e) {
                    throw new NixlException(NixlStatus.BACKEND, "tent4j cannot register " + fd + " (" + path + "): " + e.getMessage(), e);
                }
                files.put(path, shared);
            }
            shared.regions++;
            return new FileRegion(shared.file, region, type);
        }
    }

    /** A block device's size is the end of its data, not what {@code stat} says. */
    private static long blockDeviceSize(Path device) throws IOException {
        try (var ch = java.nio.channels.FileChannel.open(device, java.nio.file.StandardOpenOption.READ)) {
            return ch.size();
        }
    }

    @Override
    public void deregister(Object region) {
        if (region instanceof FileRegion f) {
            synchronized (files) {
                SharedFile shared = files.get(f.file().path());
                if (shared != null && --shared.regions == 0) {
                    files.remove(f.file().path());
                    engine.unregisterFile(f.file());
                }
            }
        } else {
            engine.unregister((RegisteredMemory) region);
        }
    }

    @Override
    public byte[] connectionInfo() {
        return engine.segmentBlob();
    }

    @Override
    public byte[] publicData(Object region) {
        if (!(region instanceof FileRegion f)) {
            return new byte[0];
        }
        byte[] path = f.file().path().toString().getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(12 + path.length).putLong(f.file().address()).putInt(path.length).put(path).array();
    }

    @Override
    public void loadRemoteConnectionInfo(String peer, byte[] info) {
        try {
            peers.put(peer, engine.openSegment(info));
        } catch (TransferException e) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "tent4j connection info of agent '" + peer + "': " + e.getMessage(), e);
        }
    }

    @Override
    public Object loadRemote(String peer, Descriptor region, MemoryType type, byte[] publicData) {
        SegmentHandle s = peers.get(peer);
        if (s == null) {
            throw new NixlException(NixlStatus.NOT_FOUND, "tent4j has no connection info of agent '" + peer
                    + "' (load its full metadata, or partial metadata with connection info, first)");
        }
        long address = region.address();
        String what = "agent '" + peer + "' " + type + " " + region;
        if (type == MemoryType.FILE || type == MemoryType.BLK) {
            // the peer chose these bytes: bound the path and check the translated range against its segment below
            ByteBuffer in = ByteBuffer.wrap(publicData);
            int n = in.remaining() >= 12 ? in.getInt(8) : -1;
            if (n < 0 || n > MAX_PATH_BYTES || in.remaining() != 12 + n) {
                throw new NixlException(NixlStatus.INVALID_PARAM, what + ": bad public data of " + publicData.length + " bytes");
            }
            long base = in.getLong(0);
            what = "agent '" + peer + "' " + type + " fd " + region.devId() + " (" + new String(publicData, 12, n, StandardCharsets.UTF_8) + ")";
            address = base + region.address();
            if (base < 0 || address < base) {
                throw new NixlException(NixlStatus.INVALID_PARAM, what + ": base 0x" + Long.toHexString(base) + " + offset " + region.address()
                        + " overflows");
            }
        }
        for (BufferInfo b : engine.segmentInfo(s).buffers()) {
            if (address >= b.address() && address - b.address() <= b.length() - region.length()) {
                return new RemoteRegion(s, region.address(), address, region.length(), what);
            }
        }
        throw new NixlException(NixlStatus.MISMATCH, what + " is not in its segment '" + s.name()
                + "' (its connection info is older than the region)");
    }

    @Override
    public Object loadLocal(Object region) {
        if (region instanceof FileRegion f) {
            Descriptor d = f.region();
            return new RemoteRegion(engine.localSegment(), d.address(), f.file().address() + d.address(), d.length(), f.what());
        }
        RegisteredMemory m = (RegisteredMemory) region;
        return new RemoteRegion(engine.localSegment(), m.address(), m.address(), m.segment().byteSize(), "local DRAM/VRAM");
    }

    @Override
    public void unloadRemote(String peer) {
        SegmentHandle s = peers.remove(peer);
        if (s != null) {
            engine.closeSegment(s);
        }
    }

    @Override
    public Object prepare(Opcode op, List<Span> local, List<Span> remote, String peer) {
        List<TransferRequest> out = new ArrayList<>(local.size());
        for (int i = 0; i < local.size(); i++) {
            Span l = local.get(i);
            RemoteRegion r = (RemoteRegion) remote.get(i).region();
            if (l.region() instanceof FileRegion f) {
                throw new NixlException(NixlStatus.NOT_SUPPORTED, "tent4j: the local side of a transfer is memory; " + f.what()
                        + " can only be a target (make it the remote list, this agent's own name for loopback)");
            }
            // a slice of the registered segment, not a new one at the address: it keeps the registration's scope
            RegisteredMemory m = (RegisteredMemory) l.region();
            TransferRequest.Builder b = TransferRequest.builder(op, m.segment().asSlice(l.address() - m.address(), l.length()),
                    r.segment(), r.engineAddressOf(remote.get(i).address(), remote.get(i).length()));
            if (!transport.isEmpty()) {
                b.require(transport);
            }
            out.add(b.build());
        }
        return new Request(out, ((RemoteRegion) remote.getFirst().region()).segment());
    }

    @Override
    public void post(Object request, byte[] notification) {
        Request r = (Request) request;
        List<TransferRequest> requests = r.requests;
        if (!timeout.isZero()) {
            // a request's deadline is absolute: each post gets its own
            long deadline = System.nanoTime() + timeout.toNanos();
            requests = new ArrayList<>(r.requests.size());
            for (TransferRequest q : r.requests) {
                requests.add(new TransferRequest(q.opcode(), q.local(), q.target(), q.targetOffset(), q.length(), q.priority(),
                        q.transport(), q.transportMode(), q.policy(), deadline));
            }
        }
        String message = notification == null ? null : encode(notification);
        Batch b = engine.allocateBatch(requests.size());
        r.batch = b;
        r.finishedNanos = 0;
        r.notified = null;
        b.submit(requests);
        if (message != null) {
            // sent by the backend, not the batch, so DONE means the peer has the notification and a lost one is an error
            r.notified = b.completion().thenCompose(st -> st.isCompleted() ? engine.sendNotification(r.target, message)
                    : CompletableFuture.<Void>completedFuture(null)).whenComplete((v, e) -> r.finishedNanos = System.nanoTime());
        }
    }

    @Override
    public Progress check(Object request) {
        Request r = (Request) request;
        Batch b = r.batch;
        TransferStatus s = b.overallStatus();
        if (!s.isTerminal()) {
            return Progress.inProgress();
        }
        long now = System.nanoTime();
        CompletableFuture<Void> n = r.notified;
        if (s.isCompleted() && n != null) {
            if (!n.isDone()) {
                return Progress.inProgress();
            }
            if (n.isCompletedExceptionally()) {
                Throwable e = n.exceptionNow();
                return Progress.failed(NixlStatus.REMOTE_DISCONNECT, "tent4j: the data landed but the notification was not delivered: "
                        + (e.getMessage() == null ? e : e.getMessage()), r.finishedNanos);
            }
            return Progress.done(r.finishedNanos);
        }
        if (s.isCompleted()) {
            return Progress.done(now);
        }
        return Progress.failed(status(s), "tent4j: " + s.state() + (s.error() == null ? "" : " " + s.error()) + ": " + s.message(), now);
    }

    @Override
    public java.util.concurrent.CompletionStage<?> completion(Object request) {
        Request r = (Request) request;
        CompletableFuture<Void> n = r.notified;
        return n != null ? n : r.batch.completion();
    }

    private static NixlStatus status(TransferStatus s) {
        if (s.state() == TransferState.CANCELED) {
            return NixlStatus.CANCELED;
        }
        if (s.state() == TransferState.TIMEOUT) {
            return NixlStatus.TIMEOUT;
        }
        ErrorCode e = s.error();
        if (e == ErrorCode.PEER_UNREACHABLE || e == ErrorCode.PEER_FAILED || e == ErrorCode.TIMEOUT) {
            return NixlStatus.REMOTE_DISCONNECT;
        }
        return e == ErrorCode.INVALID_ARGUMENT || e == ErrorCode.OUT_OF_BOUNDS || e == ErrorCode.ADDRESS_NOT_REGISTERED
                || e == ErrorCode.PERMISSION_DENIED ? NixlStatus.INVALID_PARAM : NixlStatus.BACKEND;
    }

    @Override
    public boolean release(Object request) {
        Batch b = ((Request) request).batch;
        if (b == null) {
            return true;
        }
        boolean stopped = b.overallStatus().isTerminal();
        if (!stopped) {
            for (int i = 0; i < b.size(); i++) {
                b.cancel(i);
            }
            // slices already handed to a transport may still land: then the caller must not reuse the memory yet
            stopped = b.overallStatus().isTerminal();
        }
        b.close();
        return stopped;
    }

    private String encode(byte[] message) {
        if (message.length > MAX_NOTIFICATION) {
            throw new NixlException(NixlStatus.INVALID_PARAM, "notification of " + message.length + " bytes exceeds " + MAX_NOTIFICATION);
        }
        return PREFIX + agent + " " + Base64.getEncoder().encodeToString(message);
    }

    @Override
    public List<BackendNotification> drainNotifications() {
        List<Notification> got = engine.drainNotifications();
        List<BackendNotification> out = new ArrayList<>(got.size());
        for (Notification n : got) {
            String m = n.message();
            int sp = m.startsWith(PREFIX) ? m.indexOf(' ', PREFIX.length()) : -1;
            if (sp < 0) {
                log.debug("ignoring a notification from segment '{}' that no agent sent", n.sender());
                continue;
            }
            try {
                out.add(new BackendNotification(m.substring(PREFIX.length(), sp), Base64.getDecoder().decode(m.substring(sp + 1))));
            } catch (IllegalArgumentException e) {
                log.warn("ignoring a malformed agent notification from segment '{}': {}", n.sender(), e.getMessage());
            }
        }
        return out;
    }

    @Override
    public void sendNotification(String peer, byte[] message) {
        SegmentHandle s = peers.get(peer);
        if (s == null) {
            throw new NixlException(NixlStatus.NOT_FOUND, "tent4j has no connection info of agent '" + peer + "'");
        }
        try {
            engine.sendNotification(s, encode(message)).get(notificationTimeout().toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new NixlException(NixlStatus.REMOTE_DISCONNECT, "notification to agent '" + peer + "' failed: " + e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new NixlException(NixlStatus.TIMEOUT, "notification to agent '" + peer + "' not accepted within " + notificationTimeout().toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NixlException(NixlStatus.CANCELED, "interrupted sending a notification to agent '" + peer + "'");
        }
    }

    private Duration notificationTimeout() {
        return timeout.isZero() ? Duration.ofSeconds(30) : timeout;
    }

    @Override
    public void close() {
        peers.values().forEach(engine::closeSegment);
        peers.clear();
    }
}
