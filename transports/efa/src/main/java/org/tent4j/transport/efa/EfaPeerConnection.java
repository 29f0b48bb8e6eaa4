package org.tent4j.transport.efa;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.Opcode;
import org.tent4j.spi.BufferDescriptor;
import org.tent4j.spi.PeerConnection;
import org.tent4j.spi.SegmentDescriptor;
import org.tent4j.spi.Slice;
import org.tent4j.spi.TimeSource;

/**
 * The link to one peer segment: its endpoint addresses, already in the transport's address vector. Posting checks the
 * slice against what the peer published (in bounds, a key to use, the access it allows) and against this engine's
 * registrations, fills a preallocated {@link OpSlot}, and leaves the fi_write / fi_read to the progress thread. The
 * provider enforces the rest at the target: a wrong key, a range outside the region or a missing remote permission
 * fails the operation there, never touching memory it was not given.
 */
final class EfaPeerConnection implements PeerConnection {
    private static final int REGION_CACHE = 8;

    private final EfaTransport transport;
    private final FabricProgress progress;
    private final String peerName;
    private final long[] peerAddresses;
    private final int localEndpoints;
    /** The engine's clock: slice deadlines are in its time, which a test may drive. */
    private final TimeSource clock;
    private final AtomicInteger nextEndpoint = new AtomicInteger();
    /** Parsed keys of the peer's buffers, by descriptor identity; slices reuse descriptor objects. */
    private final CachedRegion[] regions = new CachedRegion[REGION_CACHE];
    private final AtomicInteger regionVictim = new AtomicInteger();
    private volatile boolean open = true;

    private record CachedRegion(BufferDescriptor buffer, EfaAttributes.RemoteRegion region) {
    }

    EfaPeerConnection(EfaTransport transport, FabricProgress progress, String peerName, long[] peerAddresses,
                      int localEndpoints, TimeSource clock) {
        this.transport = transport;
        this.clock = clock;
        this.progress = progress;
        this.peerName = peerName;
        this.peerAddresses = peerAddresses;
        this.localEndpoints = localEndpoints;
    }

    String peerName() {
        return peerName;
    }

    @Override
    public void post(Slice slice) {
        if (!open) {
            slice.fail(ErrorCode.PEER_FAILED, describe(slice) + ": the connection is closed");
            return;
        }
        OpSlot slot = progress.acquire();
        if (slot == null) {
            progress.defer(slice, this);
            return;
        }
        if (!prepare(slot, slice)) {
            progress.unacquire(slot);
            return;
        }
        progress.submit(slot);
    }

    /**
     * Checks {@code slice} and fills {@code slot} for it. On a failed check the slice is failed (with the code and a
     * message naming peer, address and length) and {@code false} returned.
     */
    boolean prepare(OpSlot slot, Slice slice) {
        long length = slice.length();
        if (length <= 0) {
            slice.fail(ErrorCode.INVALID_ARGUMENT, describe(slice) + ": length must be > 0");
            return false;
        }
        BufferDescriptor remote = slice.remoteBuffer();
        long remoteAddress = slice.remoteAddress();
        if (!remote.contains(remoteAddress, length)) {
            slice.fail(ErrorCode.OUT_OF_BOUNDS, describe(slice) + " runs outside the peer's buffer [0x"
                    + Long.toHexString(remote.address()) + ", +" + remote.length() + ")");
            return false;
        }
        EfaAttributes.RemoteRegion region;
        try {
            region = region(remote);
        } catch (IllegalArgumentException e) {
            slice.fail(ErrorCode.PROTOCOL, describe(slice) + ": the peer published a malformed "
                    + EfaTransportProvider.ID + " key: " + e.getMessage());
            return false;
        }
        if (region == null) {
            slice.fail(ErrorCode.PERMISSION_DENIED, describe(slice) + ": the peer's buffer is " + remote.permission()
                    + " and publishes no " + EfaTransportProvider.ID + " key");
            return false;
        }
        Opcode op = slice.opcode();
        if (!remote.permission().allowsRemote(op)) {
            slice.fail(ErrorCode.PERMISSION_DENIED, describe(slice) + ": the peer's buffer is "
                    + remote.permission());
            return false;
        }
        EfaTransport.LocalRegion local = transport.localRegion(slice.localBuffer());
        if (local == null) {
            slice.fail(ErrorCode.ADDRESS_NOT_REGISTERED, describe(slice) + ": local buffer "
                    + slice.localBuffer().id() + " is not registered with the " + EfaTransportProvider.ID
                    + " transport");
            return false;
        }
        long localOffset = slice.localOffset();
        long localLength = slice.localBuffer().length();
        if (localOffset < 0 || localOffset > localLength - length) {
            slice.fail(ErrorCode.OUT_OF_BOUNDS, describe(slice) + ": local offset " + localOffset
                    + " runs past the local buffer of " + localLength + " bytes");
            return false;
        }
        long deadline = slice.deadlineNanos();
        if (clock.nanoTime() - deadline > 0) {
            slice.fail(ErrorCode.TIMEOUT, describe(slice) + ": its deadline passed before it was posted");
            return false;
        }
        int ep = localEndpoints == 1 ? 0 : Math.floorMod(nextEndpoint.getAndIncrement(), localEndpoints);
        slot.slice = slice;
        slot.connection = this;
        slot.write = op == Opcode.WRITE;
        slot.endpoint = ep;
        slot.fiAddr = peerAddresses[ep % peerAddresses.length];
        slot.localAddress = slice.localBuffer().address() + localOffset;
        slot.desc = transport.mrMode().localDescriptors() ? local.region().desc() : MemorySegment.NULL;
        slot.rmaAddress = MrMode.rmaAddress(region.base(), remote.address(), remoteAddress);
        slot.key = region.key();
        slot.length = length;
        slot.deadlineNanos = deadline;
        slot.done = 0;
        return true;
    }

    private EfaAttributes.RemoteRegion region(BufferDescriptor remote) {
        for (CachedRegion c : regions) {
            if (c != null && c.buffer() == remote) {
                return c.region();
            }
        }
        EfaAttributes.RemoteRegion r = EfaAttributes.region(remote.attributes(EfaTransportProvider.ID));
        if (r != null) {
            regions[Math.floorMod(regionVictim.getAndIncrement(), REGION_CACHE)] = new CachedRegion(remote, r);
        }
        return r;
    }

    /** "efa WRITE of 4096 bytes, local 0x7f..+0 -> peer 'b' 0x7f..." for messages. */
    String describe(Slice slice) {
        if (slice == null) {
            return EfaTransportProvider.ID + " operation to peer '" + peerName + "'";
        }
        return EfaTransportProvider.ID + " " + slice.opcode() + " of " + slice.length() + " bytes, local buffer "
                + slice.localBuffer().id() + "+" + slice.localOffset() + (slice.opcode() == Opcode.WRITE ? " -> " : " <- ")
                + "peer '" + peerName + "' 0x" + Long.toHexString(slice.remoteAddress()) + " via "
                + transport.providerName();
    }

    @Override
    public void descriptorChanged(SegmentDescriptor descriptor) {
        for (int i = 0; i < regions.length; i++) {
            regions[i] = null;
        }
    }

    @Override
    public boolean isOpen() {
        return open && !progress.isStopped();
    }

    @Override
    public void close() {
        if (open) {
            open = false;
            progress.closeConnection(this);
            transport.forget(this);
        }
    }
}
