package org.tent4j.transport.nvlink;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.MemoryKind;
import org.tent4j.api.Opcode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.LocalBuffer;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;
import org.tent4j.spi.platform.DevicePlatform;
import org.tent4j.spi.platform.DeviceStream;

/**
 * nvlink's link to one peer segment on this machine: the peer's buffers mapped into this process, opened on first use
 * and kept until the peer republishes without them or the connection closes.
 */
final class NvlinkConnection implements PeerConnection {
    private static final Logger LOG = LoggerFactory.getLogger(NvlinkConnection.class);

    private final NvlinkTransport transport;
    /** Whether the peer lives in this process, so its addresses are used as they are. */
    private final boolean direct;
    /** The engine's clock: slice deadlines are in its time, which a test may drive. */
    private final TimeSource clock;
    private volatile SegmentDescriptor peer;
    /** Sorted by remote base address; replaced whole under {@link #mappingLock}, read without locking. */
    private volatile RemoteMapping[] mappings = new RemoteMapping[0];
    private final Object mappingLock = new Object();
    private volatile boolean closed;

    /**
     * A peer buffer as this process reaches it.
     *
     * @param remoteBase    the buffer's address in the peer
     * @param length        bytes mapped
     * @param ipc           the published handle text it was opened from, or {@code null} when used directly
     * @param memory        the buffer in this process's address space
     * @param kind          where it lives
     * @param platformIndex the platform that opened it, or -1 for host memory
     * @param device        the local device ordinal it was opened on
     */
    record RemoteMapping(long remoteBase, long length, String ipc, MemorySegment memory, MemoryKind kind,
                         int platformIndex, int device) {
    }

    NvlinkConnection(NvlinkTransport transport, SegmentDescriptor peer, boolean direct, TimeSource clock) {
        this.transport = transport;
        this.clock = clock;
        this.peer = peer;
        this.direct = direct;
    }

    boolean direct() {
        return direct;
    }

    int mappedBuffers() {
        return mappings.length;
    }

    @Override
    public void post(Slice slice) {
        if (closed) {
            slice.fail(ErrorCode.PEER_FAILED, "nvlink connection to '" + peer.name() + "' is closed");
            return;
        }
        transport.submit(this, slice);
    }

    /** Runs on a lane: copies one slice and completes or fails it exactly once. */
    void copy(Slice slice, NvlinkTransport.Lane lane) {
        ErrorCode code = null;
        String error = null;
        if (closed) {
            code = ErrorCode.PEER_FAILED;
            error = "nvlink connection to '" + peer.name() + "' closed before " + describe(slice) + " started";
        } else if (transport.isClosed()) {
            code = ErrorCode.ENGINE_CLOSED;
            error = "nvlink transport of '" + transport.segmentName() + "' closed before " + describe(slice) + " started";
        } else if (clock.nanoTime() - slice.deadlineNanos() >= 0) {
            code = ErrorCode.TIMEOUT;
            error = describe(slice) + " missed its deadline before a lane could start it";
        } else {
            try {
                move(slice, lane);
            } catch (TransferException e) {
                code = e.code();
                error = describe(slice) + " failed: " + e.getMessage();
            } catch (RuntimeException e) {
                code = ErrorCode.INTERNAL;
                error = describe(slice) + " failed: " + e;
            }
        }
        if (code == null) {
            slice.complete();
        } else {
            slice.fail(code, error);
        }
    }

    private void move(Slice slice, NvlinkTransport.Lane lane) {
        BufferDescriptor remoteBuffer = slice.remoteBuffer();
        if (!remoteBuffer.permission().allowsRemote(slice.opcode())) {
            throw new TransferException(ErrorCode.PERMISSION_DENIED, "the peer's buffer is " + remoteBuffer.permission());
        }
        long length = slice.length();
        RemoteMapping m = mapping(remoteBuffer);
        long remoteOffset = slice.remoteAddress() - m.remoteBase();
        if (length <= 0 || remoteOffset < 0 || remoteOffset > m.length() - length) {
            throw new TransferException(ErrorCode.OUT_OF_BOUNDS, "range is outside the peer's buffer [0x"
                    + Long.toHexString(m.remoteBase()) + ", +" + m.length() + ")");
        }
        LocalBuffer local = slice.localBuffer();
        if (slice.localOffset() < 0 || slice.localOffset() > local.length() - length) {
            throw new TransferException(ErrorCode.OUT_OF_BOUNDS, "local range +" + slice.localOffset()
                    + " is outside local buffer " + local.id() + " of " + local.length() + " bytes");
        }
        MemoryKind localKind = local.location().kindOrCpu();
        MemorySegment near = local.segment().asSlice(slice.localOffset(), length);
        MemorySegment far = m.memory().asSlice(remoteOffset, length);
        MemorySegment dst = slice.opcode() == Opcode.WRITE ? far : near;
        MemorySegment src = slice.opcode() == Opcode.WRITE ? near : far;
        int platformIndex;
        int device;
        if (localKind.isDevice()) {
            if (m.kind().isDevice() && m.kind() != localKind) {
                throw new TransferException(ErrorCode.NO_TRANSPORT, "nvlink cannot copy between " + localKind.prefix()
                        + " and " + m.kind().prefix() + " memory");
            }
            platformIndex = transport.platformIndex(localKind);
            device = local.location().index();
            if (platformIndex < 0) {
                throw new TransferException(ErrorCode.NO_TRANSPORT, "no " + localKind.prefix() + " platform here");
            }
        } else if (m.kind().isDevice()) {
            platformIndex = m.platformIndex();
            device = m.device();
        } else {
            // host to host inside one process
            MemorySegment.copy(src, 0, dst, 0, length);
            return;
        }
        DeviceStream stream = lane.stream(platformIndex, device);
        stream.copyAsync(dst, src, length);
        stream.synchronize();
    }

    /** The mapping of {@code buffer}, opening it on first use. Allocation-free once mapped. */
    private RemoteMapping mapping(BufferDescriptor buffer) {
        RemoteMapping[] ms = mappings;
        int i = indexOf(ms, buffer.address());
        if (i >= 0) {
            RemoteMapping m = ms[i];
            if (m.length() >= buffer.length() && (m.ipc() == null
                    || m.ipc().equals(buffer.attributes(NvlinkTransportProvider.ID).get(IpcAttributes.IPC)))) {
                return m;
            }
        }
        return open(buffer);
    }

    private static int indexOf(RemoteMapping[] ms, long remoteBase) {
        int lo = 0;
        int hi = ms.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            long b = ms[mid].remoteBase();
            if (b < remoteBase) {
                lo = mid + 1;
            } else if (b > remoteBase) {
                hi = mid - 1;
            } else {
                return mid;
            }
        }
        return -1;
    }

    private RemoteMapping open(BufferDescriptor buffer) {
        synchronized (mappingLock) {
            if (closed) {
                throw new TransferException(ErrorCode.PEER_FAILED, "nvlink connection to '" + peer.name() + "' is closed");
            }
            RemoteMapping[] ms = mappings;
            int i = indexOf(ms, buffer.address());
            String ipc = buffer.attributes(NvlinkTransportProvider.ID).get(IpcAttributes.IPC);
            if (i >= 0) {
                RemoteMapping m = ms[i];
                if (m.length() >= buffer.length() && (m.ipc() == null || m.ipc().equals(ipc))) {
                    return m;
                }
                // the peer re-registered this address (new allocation, new handle): the old mapping is stale
                release(m);
            }
            RemoteMapping m = direct ? directMapping(buffer) : ipcMapping(buffer, ipc);
            List<RemoteMapping> next = new ArrayList<>(List.of(ms));
            if (i >= 0) {
                next.remove(i);
            }
            next.add(m);
            next.sort((a, b) -> Long.compare(a.remoteBase(), b.remoteBase()));
            mappings = next.toArray(new RemoteMapping[0]);
            return m;
        }
    }

    private RemoteMapping directMapping(BufferDescriptor buffer) {
        MemoryKind kind = buffer.location().kindOrCpu();
        return new RemoteMapping(buffer.address(), buffer.length(), null,
                MemorySegment.ofAddress(buffer.address()).reinterpret(buffer.length()), kind,
                kind.isDevice() ? transport.platformIndex(kind) : -1, kind.isDevice() ? buffer.location().index() : -1);
    }

    private RemoteMapping ipcMapping(BufferDescriptor buffer, String ipc) {
        String what = "buffer [0x" + Long.toHexString(buffer.address()) + ", +" + buffer.length() + ") of segment '"
                + peer.name() + "'";
        MemoryKind kind = buffer.location().kindOrCpu();
        if (!kind.isDevice()) {
            throw new TransferException(ErrorCode.NO_TRANSPORT, what + " is host memory of another process; nvlink"
                    + " reaches host memory only inside one process (device IPC exports device memory only)");
        }
        IpcAttributes attributes = IpcAttributes.decode(buffer.attributes(NvlinkTransportProvider.ID), what);
        int index = transport.platformIndex(kind);
        if (index < 0 || !transport.platformId(index).equals(attributes.platform())) {
            throw new TransferException(ErrorCode.NO_TRANSPORT, what + " was exported by platform '"
                    + attributes.platform() + "', which is not available here");
        }
        DevicePlatform platform = transport.platform(index);
        int device = NvlinkTransport.localOrdinal(platform, attributes);
        MemorySegment memory = platform.openIpcHandle(attributes.handle(), buffer.length(), device);
        LOG.debug("nvlink mapped {} at 0x{} on {}:{}", what, Long.toHexString(memory.address()), attributes.platform(), device);
        return new RemoteMapping(buffer.address(), buffer.length(), ipc, memory, kind, index, device);
    }

    private void release(RemoteMapping m) {
        if (m.ipc() == null) {
            return;
        }
        try {
            transport.platform(m.platformIndex()).closeIpcMapping(m.memory());
        } catch (RuntimeException e) {
            LOG.warn("nvlink: unmapping buffer 0x{} of '{}' failed: {}", Long.toHexString(m.remoteBase()), peer.name(),
                    e.getMessage());
        }
    }

    @Override
    public void descriptorChanged(SegmentDescriptor descriptor) {
        synchronized (mappingLock) {
            peer = descriptor;
            List<RemoteMapping> keep = new ArrayList<>();
            for (RemoteMapping m : mappings) {
                BufferDescriptor b = descriptor.findBuffer(m.remoteBase(), m.length());
                boolean same = b != null && b.address() == m.remoteBase() && (m.ipc() == null
                        || m.ipc().equals(b.attributes(NvlinkTransportProvider.ID).get(IpcAttributes.IPC)));
                if (same) {
                    keep.add(m);
                } else {
                    release(m);
                }
            }
            mappings = keep.toArray(new RemoteMapping[0]);
        }
    }

    @Override
    public boolean isOpen() {
        return !closed && !transport.isClosed();
    }

    @Override
    public void close() {
        synchronized (mappingLock) {
            if (closed) {
                return;
            }
            closed = true;
            for (RemoteMapping m : mappings) {
                release(m);
            }
            mappings = new RemoteMapping[0];
        }
        transport.forget(this);
    }

    private String describe(Slice slice) {
        return "nvlink " + slice.opcode() + " of " + slice.length() + " bytes " + (slice.opcode() == Opcode.WRITE ? "to" : "from")
                + " segment '" + peer.name() + "' at 0x" + Long.toHexString(slice.remoteAddress()) + " ("
                + slice.remoteBuffer().location() + ") " + (slice.opcode() == Opcode.WRITE ? "from" : "into")
                + " local buffer " + slice.localBuffer().id() + " +" + slice.localOffset() + " ("
                + slice.localBuffer().location() + ")";
    }
}
